//! Building, preload, write-through, access and stop writing.
mod common;

use std::path::PathBuf;
use std::sync::Arc;

use agentmem_conversation::templates::{summary_text, PRELOAD_PREFIX};
use agentmem_conversation::{Compressor, Conversation, TokenEncoding};
use agentmem_core::{AgentMemoryExt, ErrorKind, Message, Role, SessionId};
use agentmem_formats::swarms::{render_block, render_header};
use agentmem_formats::time::isoformat_in;
use chrono::{TimeZone, Utc};
use common::{
    adder_text, built, in_memory, join_all, name, persisting, spawn_adders, FailMode, ScriptedStore,
};

fn at(h: u32, m: u32, s: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 20, h, m, s).unwrap()
}

#[tokio::test]
async fn ephemeral_by_default_never_calls_the_store() {
    let store = ScriptedStore::new(in_memory(), None);
    let convo = built(
        Conversation::builder(name("Ephemeral"))
            .system_prompt("sys")
            .store(store.clone())
            .memory_file("/nowhere/MEMORY.md")
            .context_length(50)
            .compressor(Compressor::default().with_threshold(0.1)),
    )
    .await;
    convo
        .add(Role::User, "hello there, remember the number 42")
        .await
        .unwrap();
    convo.add_agent_reply("noted").await.unwrap();
    assert!(convo.maybe_compress().await.unwrap().is_some());
    convo.compact("manual").await.unwrap();
    convo.search("hello", 5).await.unwrap();
    convo.stop_persisting().await;
    assert_eq!(
        store.log(),
        Vec::<&str>::new(),
        "an ephemeral conversation touched the store"
    );
    assert!(!convo.is_persisting());
    assert_eq!(convo.memory_path(), None);
    assert!(convo.preloaded().is_none());
}

#[cfg(feature = "file")]
#[tokio::test]
async fn persistent_without_store_keeps_memory_in_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let convo = Conversation::builder(name("NoStore"))
        .persistent(true)
        .workspace_dir(workspace.path())
        .build()
        .await
        .unwrap();
    let memory = workspace.path().join("agents/NoStore/MEMORY.md");
    assert_eq!(convo.memory_path(), Some(memory.clone()));
    convo.add(Role::User, "kept").await.unwrap();
    assert!(std::fs::read_to_string(memory)
        .unwrap()
        .contains("\n\nkept\n\n"));
    // A workspace that cannot be a folder is the file store's error, not a panic.
    let file = workspace.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let built = Conversation::builder(name("NoStore"))
        .persistent(true)
        .workspace_dir(&file)
        .build()
        .await;
    assert!(built.is_err());
}

#[cfg(not(feature = "file"))]
#[tokio::test]
async fn persistent_without_store_is_invalid() {
    let err = Conversation::builder(name("NoStore"))
        .persistent(true)
        .build()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("NoStore"), "{err}");
}

#[tokio::test]
async fn bad_compressor_settings_are_invalid() {
    for c in [
        Compressor::default().with_threshold(0.0),
        Compressor::default().with_threshold(1.5),
        Compressor::default().with_threshold(f64::NAN),
        Compressor::default().with_temperature(-1.0),
        Compressor::default().with_max_summary_tokens(0),
    ] {
        let err = Conversation::builder(name("Bad"))
            .compressor(c)
            .build()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
}

#[tokio::test]
async fn preload_follows_the_static_prompt_with_exact_swarms_text() {
    let store = in_memory();
    let session: SessionId = "ResearchAgent".parse().unwrap();
    store
        .append(
            &session,
            &[
                Message::user("Research cloud database options.").with_timestamp(at(18, 35, 4)),
                Message::new(
                    Role::Agent("ResearchAgent".into()),
                    "  I recommend BigQuery.\n",
                )
                .with_timestamp(at(18, 35, 21)),
                Message::user("   ").with_timestamp(at(18, 36, 0)),
            ],
        )
        .await
        .unwrap();
    let created = store
        .load(&session, None)
        .await
        .unwrap()
        .unwrap()
        .created_at;

    let convo = built(
        persisting("ResearchAgent", store.clone())
            .system_prompt("You are a research assistant.")
            .rules("Cite sources.")
            .custom_rules_prompt("Answer in English."),
    )
    .await;
    let m = convo.messages();
    assert_eq!(m.len(), 4);
    assert_eq!(
        (m[0].role.clone(), m[0].content.as_str()),
        (Role::System, "You are a research assistant.")
    );
    assert_eq!(
        (m[1].role.clone(), m[1].content.as_str()),
        (Role::User, "Cite sources.")
    );
    assert_eq!(
        (m[2].role.clone(), m[2].content.as_str()),
        (Role::User, "Answer in English.")
    );
    assert_eq!(m[3].role, Role::System);
    // Times as the local clock shows them, as Swarms writes them.
    let local = |t| isoformat_in(t, &chrono::Local);
    let expected = format!(
        "[Persistent Memory — MEMORY.md]\nThe following is this conversation's persistent memory from prior sessions. Use it to continue context coherently.\n\n\
         # Agent Memory\n\n**Conversation:** ResearchAgent\n**Created:** {}\n\n---\n\n## Interaction Log\n\n\
         ### User — {}\n\nResearch cloud database options.\n\n---\n\n\
         ### ResearchAgent — {}\n\nI recommend BigQuery.\n\n---\n\n",
        local(created),
        local(at(18, 35, 4)),
        local(at(18, 35, 21)),
    );
    assert_eq!(m[3].content, expected);
    let p = convo.preloaded().unwrap();
    assert_eq!((p.kept, p.dropped), (2, 0));

    // The preload is not written back, and neither is the static prompt.
    assert_eq!(store.messages(&session).await.unwrap().len(), 3);
    convo.add(Role::User, "Narrow it to GCP.").await.unwrap();
    let stored = store.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[3].content, "Narrow it to GCP.");
}

#[tokio::test]
async fn nothing_is_preloaded_without_stored_memory() {
    let store = in_memory();
    let convo = built(persisting("Fresh", store.clone()).system_prompt("sys")).await;
    assert_eq!(convo.messages().len(), 1);
    assert!(convo.preloaded().is_none());
    // A session holding only blank messages has nothing to remember either.
    let session: SessionId = "Blank".parse().unwrap();
    store
        .append_one(&session, Message::user(" "))
        .await
        .unwrap();
    let convo = built(persisting("Blank", store)).await;
    assert!(convo.messages().is_empty());
}

#[tokio::test]
async fn preload_keeps_the_newest_blocks_within_its_token_budget() {
    let store = in_memory();
    let session: SessionId = "Budget".parse().unwrap();
    let msgs: Vec<Message> = (0..60)
        .map(|i| {
            Message::user(format!(
                "Entry {i}: the quick brown fox jumps over the lazy dog."
            ))
        })
        .collect();
    store.append(&session, &msgs).await.unwrap();
    let stored = store.load(&session, None).await.unwrap().unwrap();
    let budget = 300;
    let convo = built(persisting("Budget", store).preload_token_budget(budget)).await;
    let p = convo.preloaded().unwrap().clone();
    assert!(
        p.kept > 0 && p.dropped > 0 && p.kept + p.dropped == 60,
        "{p:?}"
    );
    assert!(TokenEncoding::O200kBase.count(&p.text) <= budget);
    let blocks: String = stored.messages[p.dropped..]
        .iter()
        .filter_map(render_block)
        .collect();
    let expected = format!(
        "{PRELOAD_PREFIX}{}{blocks}",
        render_header("Budget", stored.created_at)
    );
    assert_eq!(p.text, expected);
    assert!(p.text.contains("Entry 59:") && !p.text.contains("Entry 0:"));
    // One more block would not have fitted.
    let one_more = format!(
        "{PRELOAD_PREFIX}{}{}{blocks}",
        render_header("Budget", stored.created_at),
        render_block(&stored.messages[p.dropped - 1]).unwrap()
    );
    assert!(TokenEncoding::O200kBase.count(&one_more) > budget);
    assert_eq!(convo.messages()[0].content, p.text);
}

#[tokio::test]
async fn preload_keeps_a_leading_compaction_summary_then_the_newest_blocks() {
    let store = in_memory();
    let session: SessionId = "Pinned".parse().unwrap();
    let long = format!(
        "The user is Ada and prefers GCP.{}",
        " More detail here.".repeat(30)
    );
    let summary = Message::system(summary_text(&long));
    let mut msgs = vec![summary.clone()];
    msgs.extend((0..60).map(|i| Message::user(format!("Entry {i}: the quick brown fox jumps."))));
    store.append(&session, &msgs).await.unwrap();
    let stored = store.load(&session, None).await.unwrap().unwrap();
    let convo = built(persisting("Pinned", store).preload_token_budget(400)).await;
    let p = convo.preloaded().unwrap();
    assert!(p.dropped > 0 && p.kept > 1, "{p:?}");
    let first_kept = 1 + p.dropped;
    let expected = format!(
        "{PRELOAD_PREFIX}{}{}{}",
        render_header("Pinned", stored.created_at),
        render_block(&summary).unwrap(),
        stored.messages[first_kept..]
            .iter()
            .filter_map(render_block)
            .collect::<String>()
    );
    assert_eq!(p.text, expected);
    assert!(TokenEncoding::O200kBase.count(&p.text) <= 400);

    // A summary too big for the budget is not pinned: the newest blocks are kept instead.
    let convo =
        built(persisting("Pinned", convo.store().unwrap().clone()).preload_token_budget(150)).await;
    let p = convo.preloaded().unwrap();
    assert!(!p.text.contains("Compressed Memory Summary"));
    assert!(p.text.contains("Entry 59:"));
}

#[tokio::test]
async fn default_preload_budget_is_half_the_context() {
    let store = in_memory();
    let session: SessionId = "Half".parse().unwrap();
    let msgs: Vec<Message> = (0..200)
        .map(|i| Message::user(format!("Line {i} with a few words of padding text.")))
        .collect();
    store.append(&session, &msgs).await.unwrap();
    let convo = built(persisting("Half", store).context_length(1_000)).await;
    let p = convo.preloaded().unwrap();
    assert!(p.dropped > 0);
    assert!(TokenEncoding::O200kBase.count(&p.text) <= 500);
}

#[tokio::test]
async fn write_through_keeps_messages_and_restarts_do_not_duplicate_the_prompt() {
    let store = in_memory();
    let build = || {
        persisting("Writer", store.clone())
            .system_prompt("sys")
            .rules("rules")
            .build()
    };
    let convo = build().await.unwrap();
    let a = convo.add(Role::User, "first").await.unwrap();
    let call = Message::tool_call("c1", "weather", "{\"city\":\"Oslo\"}");
    convo.add_message(call.clone()).await.unwrap();
    let stored = store.messages(convo.session_id()).await.unwrap();
    assert_eq!(stored, vec![a, call]);
    drop(convo);

    let again = build().await.unwrap();
    assert_eq!(again.messages().len(), 3); // sys, rules, preload
    assert_eq!(store.messages(again.session_id()).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_failed_append_leaves_memory_equal_to_the_store() {
    // Calls: load (build), append (ok), append (fails), then a load to check the store.
    let store = ScriptedStore::new(in_memory(), Some(3));
    let convo = built(persisting("Flaky", store.clone())).await;
    convo.add(Role::User, "kept").await.unwrap();
    let err = convo.add(Role::User, "lost").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(convo.last_content().as_deref(), Some("kept"));
    assert_eq!(store.log(), ["load", "append", "append", "load"]);
    let bad = Message::new(Role::Agent("User".into()), "x");
    assert_eq!(
        convo.add_message(bad).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    // The write landed but its acknowledgement was lost: the error is returned, and memory
    // holds the message, as the store does.
    let inner = in_memory();
    let store = ScriptedStore::with_mode(inner.clone(), Some(2), FailMode::After);
    let convo = built(persisting("Flaky", store)).await;
    let err = convo.add(Role::User, "landed").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(
        convo.messages(),
        inner.messages(convo.session_id()).await.unwrap()
    );
    assert_eq!(convo.last_content().as_deref(), Some("landed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_keep_one_order_in_memory_and_store() {
    let store = in_memory();
    let convo = Arc::new(built(persisting("Busy", store.clone()).system_prompt("sys")).await);
    join_all(spawn_adders(&convo, 8, 25)).await;
    let memory = convo.messages()[1..].to_vec();
    let stored = store.messages(convo.session_id()).await.unwrap();
    assert_eq!(memory.len(), 200);
    assert_eq!(memory, stored, "memory order differs from store order");
    for t in 0..8 {
        let mine: Vec<String> = memory
            .iter()
            .filter(|m| m.content.starts_with(&format!("task {t} ")))
            .map(|m| m.content.clone())
            .collect();
        let expected: Vec<String> = (0..25).map(|i| adder_text(t, i)).collect();
        assert_eq!(mine, expected);
    }
}

#[tokio::test]
async fn stop_persisting_keeps_memory_and_stops_writes() {
    let store = in_memory();
    let path = PathBuf::from("/ws/agents/Stopper/MEMORY.md");
    let convo = built(persisting("Stopper", store.clone()).memory_file(path.clone())).await;
    assert_eq!(convo.memory_path(), Some(path));
    assert!(convo.is_persisting());
    convo.add(Role::User, "written").await.unwrap();
    convo.stop_persisting().await;
    convo.add(Role::User, "memory only").await.unwrap();
    convo.compact("summary in memory only").await.unwrap();
    assert_eq!(convo.memory_path(), None);
    assert!(!convo.is_persisting());
    let stored = store.messages(convo.session_id()).await.unwrap();
    assert_eq!(
        stored
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        ["written"]
    );
    assert!(store
        .list_archives(convo.session_id())
        .await
        .unwrap()
        .is_empty());
    assert!(convo
        .last_content()
        .unwrap()
        .ends_with("summary in memory only"));
}

#[tokio::test]
async fn prompt_string_and_last_content() {
    let convo = built(Conversation::builder(name("Prompt")).system_prompt("Be brief.")).await;
    let sys_time = convo.messages()[0].timestamp;
    convo
        .add_message(Message::user("Hi").with_timestamp(at(18, 35, 4)))
        .await
        .unwrap();
    convo
        .add_message(
            Message::new(Role::Agent("Prompt".into()), "Hello!\nHow can I help?")
                .with_timestamp(at(18, 35, 5) + chrono::Duration::microseconds(250)),
        )
        .await
        .unwrap();
    let expected = format!(
        "[{}] System: Be brief.\n\n[2026-04-20T18:35:04.000000Z] User: Hi\n\n[2026-04-20T18:35:05.000250Z] Prompt: Hello!\nHow can I help?",
        sys_time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    );
    assert_eq!(convo.prompt_string(), expected);
    assert_eq!(
        convo.last_content().as_deref(),
        Some("Hello!\nHow can I help?")
    );
    assert_eq!(
        convo.token_count(),
        TokenEncoding::O200kBase.count(&expected)
    );
    assert_eq!(convo.len(), 3);
    assert_eq!(convo.agent_role(), Role::Agent("Prompt".into()));

    let empty = built(Conversation::builder(name("Empty"))).await;
    assert!(empty.is_empty());
    assert_eq!(empty.last_content(), None);
    assert_eq!(empty.prompt_string(), "");
}

#[tokio::test]
async fn context_length_and_encoding_resolve_from_the_model() {
    use TokenEncoding::{Cl100kBase, O200kBase};
    // The model, context length and encoding given; the context length and encoding resolved.
    let cases = [
        (None, None, None, (16_000, O200kBase)),
        (Some("gpt-4"), None, None, (8_192, Cl100kBase)),
        (
            Some("claude-sonnet-4-6"),
            Some(32_000),
            None,
            (32_000, O200kBase),
        ),
        (
            Some("gpt-4o"),
            None,
            Some(Cl100kBase),
            (128_000, Cl100kBase),
        ),
    ];
    let mut last = None;
    for (model, length, encoding, resolved) in cases {
        let mut builder = Conversation::builder(name("Model"));
        if let Some(encoding) = encoding {
            builder = builder.token_encoding(encoding);
        }
        if let Some(model) = model {
            builder = builder.model_name(model);
        }
        if let Some(length) = length {
            builder = builder.context_length(length);
        }
        let c = built(builder).await;
        assert_eq!(
            (c.context_length(), c.token_encoding()),
            resolved,
            "{model:?}"
        );
        last = Some(c);
    }
    // A new model keeps the encoding given explicitly.
    let mut c = last.unwrap();
    c.set_model("gpt-3.5-turbo");
    assert_eq!(
        (c.context_length(), c.token_encoding()),
        (16_385, Cl100kBase)
    );
}

#[tokio::test]
async fn configured_workspace_dir_wins() {
    let c = built(Conversation::builder(name("Ws")).workspace_dir("/configured")).await;
    assert_eq!(c.workspace_dir(), std::path::Path::new("/configured"));
}
