//! The adapter's behaviour suite, run on every backend (feature `testing`).
//!
//! Each case is a `pub async fn` over an agentmem store that panics on a failure, in the style
//! of `agentmem-testkit`: this crate runs them on the in-memory store, the `agentmem` facade's
//! `tests/rig_backends.rs` on every backend compiled in. Cases use their own conversation ids,
//! so they may share one store.

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, Message, Role, SessionId, SessionStore,
};
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::ConversationMemory;
use rig_core::message::{
    AssistantContent, AssistantMessage, CallId, DocumentMediaType, ImageMediaType, Reasoning,
    ToolName, ToolResult, ToolResultContent, UserContent,
};

use crate::{agentmem_error, AgentmemConversationMemory};

/// Runs every case. `reopened` is a second handle on the same data (a new connection, or for
/// an in-process store the same one), standing in for a second process.
pub async fn all(store: Arc<dyn AgentMemory>, reopened: Arc<dyn AgentMemory>) {
    round_trips_every_content_kind(store.clone(), reopened.clone()).await;
    history_limit_never_splits_tool_calls(store.clone()).await;
    turns_from_concurrent_workers_stay_whole(store.clone()).await;
    unsafe_conversation_ids_are_refused(store.clone()).await;
    clear_removes_the_conversation(store.clone()).await;
    histories_from_other_tools_load(store.clone()).await;
    rig_memory_policies_compose(store).await;
}

fn tool(name: &str) -> ToolName {
    ToolName::try_from(name).expect("a valid tool name")
}

/// A turn with every kind of content rig has: instructions, text, media by reference,
/// reasoning, two tool calls, their results as text, JSON and an image, and the answer.
pub fn rich_turn() -> Vec<RigMessage> {
    let weather = tool("weather");
    let clock = tool("clock");
    let first = CallId::from_wire("call_1");
    let second = CallId::from_wire("");
    vec![
        RigMessage::system("You are a travel assistant."),
        RigMessage::User {
            content: vec![
                UserContent::text("What's the weather where this photo was taken?"),
                UserContent::image_url(
                    "https://example.com/beach.png",
                    Some(ImageMediaType::PNG),
                    None,
                ),
                UserContent::document_text(
                    "Itinerary: Lisbon, 3 days.",
                    Some(DocumentMediaType::TXT),
                ),
            ],
        },
        RigMessage::Assistant(AssistantMessage::new(vec![
            AssistantContent::Reasoning(Reasoning::new("The photo shows Lisbon.")),
            AssistantContent::text("Let me check."),
            AssistantContent::ToolCall(rig_core::message::ToolCall::new(
                first.clone(),
                rig_core::message::ToolFunction::new(
                    weather.clone(),
                    serde_json::json!({"city": "Lisbon", "days": [1, 2, 3]}),
                ),
            )),
            AssistantContent::ToolCall(rig_core::message::ToolCall::new(
                second.clone(),
                rig_core::message::ToolFunction::new(clock.clone(), serde_json::json!({})),
            )),
        ])),
        RigMessage::tool_results(vec![
            ToolResult {
                call: first,
                name: weather,
                content: vec![
                    ToolResultContent::text("sunny, 24°C"),
                    ToolResultContent::json(serde_json::json!({"uv": 7, "wind": null})),
                ],
                is_error: false,
            },
            ToolResult {
                call: second,
                name: clock,
                content: vec![ToolResultContent::image_base64(
                    "iVBORw0KGgo=",
                    Some(ImageMediaType::PNG),
                    None,
                )],
                is_error: true,
            },
        ]),
        RigMessage::assistant("Sunny and 24°C in Lisbon: bring sunscreen (UV 7)."),
    ]
}

/// What is appended loads back identical, through a second handle too; the stored agentmem
/// messages carry roles, tool pairing and searchable text.
pub async fn round_trips_every_content_kind(
    store: Arc<dyn AgentMemory>, reopened: Arc<dyn AgentMemory>,
) {
    let memory = AgentmemConversationMemory::new(store.clone());
    let id: ConversationId = "rig-round-trip".into();
    let turn = rich_turn();
    memory.append(&id, turn.clone()).await.expect("append");
    assert_eq!(memory.load(&id).await.expect("load"), turn);

    let again = AgentmemConversationMemory::new(reopened);
    assert_eq!(
        again.load(&id).await.expect("load through a second handle"),
        turn
    );

    let session = SessionId::new("rig-round-trip").expect("valid id");
    let stored = store.messages(&session).await.expect("agentmem load");
    let roles: Vec<&Role> = stored.iter().map(|m| &m.role).collect();
    assert_eq!(
        roles,
        [
            &Role::System,
            &Role::User,
            &Role::Assistant,
            &Role::Tool,
            &Role::Assistant
        ]
    );
    assert_eq!(stored[2].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(stored[3].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(stored[3].tool_name.as_deref(), Some("weather"));
    assert!(stored[1]
        .content
        .contains("[image: https://example.com/beach.png]"));
    assert!(stored[1].content.contains("Itinerary: Lisbon"));
    assert!(stored[2].content.contains("weather({"));
    assert!(
        !stored[2].content.contains("The photo shows Lisbon"),
        "reasoning is not text"
    );
    assert!(
        !stored[3].content.contains("iVBORw0KGgo="),
        "inline data is not text"
    );
    assert_eq!(
        memory
            .load(&"rig-never-written".into())
            .await
            .expect("load"),
        vec![]
    );
}

/// Under every history limit, `load` returns a suffix of the history of at most that many
/// messages that never starts with tool results whose call was cut off.
pub async fn history_limit_never_splits_tool_calls(store: Arc<dyn AgentMemory>) {
    let id: ConversationId = "rig-limits".into();
    let full_memory = AgentmemConversationMemory::new(store.clone());
    let mut history = Vec::new();
    for round in 0..3 {
        let mut turn = rich_turn();
        turn.remove(0); // one system message is enough
        turn.push(RigMessage::user(format!("thanks, round {round}")));
        history.extend(turn);
    }
    history.insert(0, RigMessage::system("You are a travel assistant."));
    full_memory
        .append(&id, history.clone())
        .await
        .expect("append");

    for limit in 0..=history.len() + 2 {
        let memory = AgentmemConversationMemory::new(store.clone()).with_history_limit(limit);
        let window = memory.load(&id).await.expect("load");
        assert!(
            window.len() <= limit,
            "limit {limit}: {} messages",
            window.len()
        );
        assert_eq!(
            window[..],
            history[history.len() - window.len()..],
            "limit {limit}"
        );
        if let Some(RigMessage::User { content }) = window.first() {
            if window.len() < history.len() {
                assert!(
                    !content
                        .iter()
                        .any(|c| matches!(c, UserContent::ToolResult(_))),
                    "limit {limit}: the window starts with orphaned tool results"
                );
            }
        }
        // At most the orphaned results are dropped: one message of the window.
        let wanted = limit.min(history.len());
        assert!(
            window.len() + 1 >= wanted,
            "limit {limit}: only {}",
            window.len()
        );
    }
}

/// Two workers appending turns to one conversation at once: every turn is stored whole and
/// contiguous, none lost.
pub async fn turns_from_concurrent_workers_stay_whole(store: Arc<dyn AgentMemory>) {
    let id: ConversationId = "rig-workers".into();
    let workers: Vec<_> = (0..2)
        .map(|worker| {
            let memory = AgentmemConversationMemory::new(store.clone());
            let id = id.clone();
            tokio::spawn(async move {
                for turn in 0..10 {
                    memory
                        .append(
                            &id,
                            vec![
                                RigMessage::user(format!("w{worker} t{turn} question")),
                                RigMessage::assistant(format!("w{worker} t{turn} answer")),
                            ],
                        )
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("worker");
    }
    let loaded = AgentmemConversationMemory::new(store)
        .load(&id)
        .await
        .expect("load");
    assert_eq!(loaded.len(), 40);
    for pair in loaded.chunks(2) {
        let (RigMessage::User { .. }, RigMessage::Assistant(answer)) = (&pair[0], &pair[1]) else {
            panic!("a turn was split: {pair:?}");
        };
        let question = pair[0].rag_text().expect("question text");
        let prefix = question.trim_end_matches("question");
        let AssistantContent::Text(text) = &answer.content[0] else {
            panic!("answer is text");
        };
        assert_eq!(text.text, format!("{prefix}answer"));
    }
}

/// Conversation ids that are not safe names fail with `InvalidInput` and write nothing.
pub async fn unsafe_conversation_ids_are_refused(store: Arc<dyn AgentMemory>) {
    let memory = AgentmemConversationMemory::new(store.clone());
    let before = store.list_sessions().await.expect("list").len();
    for bad in [
        "",
        "../../etc/passwd",
        "a/b",
        "line\nbreak",
        &"x".repeat(300),
    ] {
        let id: ConversationId = bad.into();
        let error = memory
            .append(&id, vec![RigMessage::user("hi")])
            .await
            .expect_err("an unsafe id is refused");
        assert_eq!(
            agentmem_error(&error).map(|e| e.kind()),
            Some(ErrorKind::InvalidInput),
            "{bad:?}: {error}"
        );
        assert!(memory.load(&id).await.is_err(), "{bad:?}");
        assert!(memory.clear(&id).await.is_err(), "{bad:?}");
    }
    assert_eq!(store.list_sessions().await.expect("list").len(), before);
}

/// How many archives `session` has.
async fn archive_count(store: &dyn AgentMemory, session: &SessionId) -> usize {
    store.list_archives(session).await.expect("archives").len()
}

/// `clear` deletes the conversation (with its archives), or keeps the archives when asked;
/// clearing a conversation that does not exist succeeds.
pub async fn clear_removes_the_conversation(store: Arc<dyn AgentMemory>) {
    let memory = AgentmemConversationMemory::new(store.clone());
    let id: ConversationId = "rig-clear".into();
    let session = SessionId::new("rig-clear").expect("valid id");
    memory.append(&id, rich_turn()).await.expect("append");
    store
        .compact(&session, &[Message::system("summary")])
        .await
        .expect("compact");
    memory.clear(&id).await.expect("clear");
    assert_eq!(memory.load(&id).await.expect("load"), vec![]);
    assert!(!store.session_exists(&session).await.expect("exists"));
    assert_eq!(archive_count(store.as_ref(), &session).await, 0);
    memory.clear(&id).await.expect("clearing again is fine");

    let keeping = AgentmemConversationMemory::new(store.clone()).clear_keeps_archives();
    keeping.append(&id, rich_turn()).await.expect("append");
    store.compact(&session, &[]).await.expect("compact");
    keeping
        .append(&id, vec![RigMessage::user("after")])
        .await
        .expect("append");
    keeping.clear(&id).await.expect("clear");
    assert_eq!(keeping.load(&id).await.expect("load"), vec![]);
    assert_eq!(archive_count(store.as_ref(), &session).await, 1);
    keeping
        .clear(&"rig-clear-missing".into())
        .await
        .expect("clear a missing one");
}

/// A history written through agentmem itself (as the conversation engine or an import
/// writes it) loads as rig messages, tool call and result paired.
pub async fn histories_from_other_tools_load(store: Arc<dyn AgentMemory>) {
    let session = SessionId::new("rig-foreign").expect("valid id");
    store
        .append(
            &session,
            &[
                Message::system("rules"),
                Message::user("weather?"),
                Message::tool_call("c9", "weather", r#"{"city":"Oslo"}"#),
                Message::tool_result("c9", "weather", "snow"),
                Message::new(Role::Agent("ResearchAgent".into()), "It snows in Oslo."),
            ],
        )
        .await
        .expect("append");
    let loaded = AgentmemConversationMemory::new(store)
        .load(&"rig-foreign".into())
        .await
        .expect("load");
    let weather = tool("weather");
    assert_eq!(
        loaded,
        vec![
            RigMessage::system("rules"),
            RigMessage::user("weather?"),
            RigMessage::Assistant(AssistantMessage::new(vec![AssistantContent::tool_call(
                "c9",
                weather.clone(),
                serde_json::json!({"city": "Oslo"}),
            )])),
            RigMessage::tool_result(CallId::from_wire("c9"), weather, "snow"),
            RigMessage::assistant("It snows in Oslo."),
        ]
    );
}

/// rig-memory's policies over agentmem: a sliding window, a token window and rolling
/// compaction shape what the model sees; the store keeps everything.
pub async fn rig_memory_policies_compose(store: Arc<dyn AgentMemory>) {
    use rig_memory::{
        CompactingMemory, HeuristicTokenCounter, PolicyMemory, SlidingWindowMemory,
        TemplateCompactor, TokenWindowMemory,
    };
    let id: ConversationId = "rig-policy".into();
    let durable = AgentmemConversationMemory::new(store.clone());
    let history = rich_turn();
    durable.append(&id, history.clone()).await.expect("append");
    let question = RigMessage::user("and tomorrow?");
    durable
        .append(&id, vec![question.clone()])
        .await
        .expect("append");

    let sliding = PolicyMemory::new(durable.clone(), SlidingWindowMemory::last_messages(4));
    let window = sliding.load(&id).await.expect("load");
    assert!(window.len() <= 4 && !window.is_empty(), "{window:?}");
    assert_eq!(window.last(), Some(&question));

    let tokens = PolicyMemory::new(
        durable.clone(),
        TokenWindowMemory::new(60, HeuristicTokenCounter::default()),
    );
    let window = tokens.load(&id).await.expect("load");
    assert!(
        !window.is_empty() && window.len() < history.len() + 1,
        "{window:?}"
    );
    assert_eq!(window.last(), Some(&question));

    let compacting = CompactingMemory::new(
        durable.clone(),
        SlidingWindowMemory::last_messages(2),
        TemplateCompactor::new(),
    );
    let window = compacting.load(&id).await.expect("load");
    assert_eq!(window.last(), Some(&question));
    let summary = format!("{:?}", window.first().expect("a summary first"));
    assert!(
        summary.contains("[Conversation summary so far]"),
        "{summary}"
    );

    assert_eq!(
        durable.load(&id).await.expect("load").len(),
        history.len() + 1
    );
}
