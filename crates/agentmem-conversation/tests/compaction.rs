//! Compaction and automatic compression on the in-memory store.
mod common;

use std::sync::Arc;

use agentmem_conversation::templates::{PRELOAD_PREFIX, SUMMARY_PREFIX};
use agentmem_conversation::{
    Compressor, Conversation, ExtractiveSummarizer, Summarizer, SummaryRequest,
};
use agentmem_core::{async_trait, AgentMemory, AgentMemoryExt, Error, Result, Role, SessionStore};
use common::{
    adder_text, compression_fails_untouched, contents, in_memory, join_all, persisting,
    spawn_adders, transcript, ScriptedStore,
};

const SUMMARY_TEXT: &str = "[Compressed Memory Summary]\nThe following is a compressed summary of earlier conversation turns, replacing the raw transcript to stay within the context window.\n\n";

/// A persistent research conversation of `agent` on `store`.
async fn persistent(
    agent: &str, store: Arc<dyn AgentMemory>, compressor: Compressor, context_length: usize,
) -> Conversation {
    persisting(agent, store)
        .system_prompt("You are a research assistant.")
        .rules("Cite sources.")
        .custom_rules_prompt("Answer briefly.")
        .compressor(compressor)
        .context_length(context_length)
        .build()
        .await
        .unwrap()
}

/// [`persistent`] with the default compressor and a 16,000-token context.
async fn researcher(agent: &str, store: Arc<dyn AgentMemory>) -> Conversation {
    persistent(agent, store, Compressor::default(), 16_000).await
}

#[tokio::test]
async fn compact_archives_replaces_and_rebuilds_with_the_exact_summary_text() {
    let store = in_memory();
    let first = researcher("Compactor", store.clone()).await;
    first.add(Role::User, "Research warehouses.").await.unwrap();
    drop(first);
    let convo = researcher("Compactor", store.clone()).await;
    assert_eq!(convo.messages().len(), 4, "preamble and preload");
    let a = convo
        .add(Role::User, "Compare BigQuery and AlloyDB.")
        .await
        .unwrap();
    let b = convo
        .add_agent_reply("BigQuery for analytics.")
        .await
        .unwrap();
    let before_store = store.messages(convo.session_id()).await.unwrap();
    assert_eq!(before_store.len(), 3);

    let summary = "Researched cloud data warehouses. The user prefers GCP.";
    let done = convo.compact(summary).await.unwrap();
    let expected_text = format!("{SUMMARY_TEXT}{summary}");
    assert_eq!(done.summary.content, expected_text);
    assert_eq!(done.summary.role, Role::System);
    assert!(done.tokens_after < done.tokens_before);

    // Memory: system prompt, rules, custom rules, summary (the preload is gone).
    let m = convo.messages();
    assert_eq!(
        m.iter()
            .map(|m| (m.role.clone(), m.content.as_str()))
            .collect::<Vec<_>>(),
        [
            (Role::System, "You are a research assistant."),
            (Role::User, "Cite sources."),
            (Role::User, "Answer briefly."),
            (Role::System, expected_text.as_str()),
        ]
    );
    // Store: the summary only, the old transcript in the archive.
    assert_eq!(
        store.messages(convo.session_id()).await.unwrap(),
        vec![done.summary.clone()]
    );
    let archive_info = done.archive.clone().unwrap();
    let archive = store
        .load_archive(convo.session_id(), &archive_info.id)
        .await
        .unwrap();
    assert_eq!(archive.messages, before_store);
    assert_eq!(&archive.messages[1..], &[a, b]);

    // After a restart the summary, not the raw transcript, is what loads.
    let restarted = researcher("Compactor", store.clone()).await;
    let preload = &restarted.messages()[3].content;
    assert!(preload.starts_with(PRELOAD_PREFIX));
    assert!(preload.contains("### System — "));
    assert!(preload.contains(&format!("{SUMMARY_TEXT}{summary}\n\n---\n\n")));
    assert!(!preload.contains("Compare BigQuery"));
}

#[tokio::test]
async fn compacting_a_session_never_stored_starts_it_with_the_summary() {
    let store = in_memory();
    let convo = researcher("Unstored", store.clone()).await;
    let done = convo.compact("nothing yet").await.unwrap();
    assert!(done.archive.is_none());
    assert_eq!(
        store.messages(convo.session_id()).await.unwrap(),
        vec![done.summary]
    );
}

#[tokio::test]
async fn two_compactions_in_one_second_keep_both_archives() {
    let store = in_memory();
    let convo = researcher("Twice", store.clone()).await;
    convo.add(Role::User, "one").await.unwrap();
    let first = convo.compact("s1").await.unwrap().archive.unwrap();
    convo.add(Role::User, "two").await.unwrap();
    let second = convo.compact("s2").await.unwrap().archive.unwrap();
    assert_ne!(first.id, second.id);
    let archives = store.list_archives(convo.session_id()).await.unwrap();
    assert_eq!(archives.len(), 2);
    let second_archive = store
        .load_archive(convo.session_id(), &second.id)
        .await
        .unwrap();
    assert_eq!(second_archive.messages.len(), 2); // first summary, "two"
}

#[tokio::test]
async fn a_store_failure_at_any_call_leaves_memory_and_store_consistent() {
    common::failure_at_each_call_leaves_memory_and_store_consistent(|| async { in_memory() }).await;
}

/// A summarizer that always fails, as an unreachable model would.
#[derive(Debug)]
struct BrokenSummarizer;

#[async_trait]
impl Summarizer for BrokenSummarizer {
    async fn summarize(&self, _: &SummaryRequest) -> Result<String> {
        Err(Error::unavailable("model is down"))
    }
}

#[tokio::test]
async fn summarizer_failure_returns_the_error_and_leaves_everything_untouched() {
    let store = ScriptedStore::new(in_memory(), None);
    let convo = persistent(
        "Broken",
        store.clone(),
        Compressor::new(Arc::new(BrokenSummarizer)),
        60,
    )
    .await;
    let err =
        compression_fails_untouched(&convo, "a message long enough to pass the small threshold")
            .await;
    assert!(err.to_string().contains("model is down"));
    assert_eq!(
        store.log(),
        ["load", "append"],
        "the store was called after the failure"
    );
}

/// A summarizer that records its request and answers a fixed text.
#[derive(Debug, Default)]
struct RecordingSummarizer {
    seen: std::sync::Mutex<Vec<SummaryRequest>>,
}

#[async_trait]
impl Summarizer for RecordingSummarizer {
    async fn summarize(&self, request: &SummaryRequest) -> Result<String> {
        self.seen.lock().unwrap().push(request.clone());
        Ok("short summary".into())
    }
}

#[tokio::test]
async fn maybe_compress_fires_exactly_at_threshold_times_context_length() {
    let store = in_memory();
    let summarizer = Arc::new(RecordingSummarizer::default());
    let compressor = Compressor::new(summarizer.clone())
        .with_threshold(0.5)
        .with_temperature(0.3)
        .with_max_summary_tokens(1_000);
    let mut convo = persistent("Threshold", store.clone(), compressor, 16_000).await;
    convo
        .add(Role::User, "one two three four five")
        .await
        .unwrap();
    convo.add(Role::Assistant, "six seven eight").await.unwrap();
    let tokens = convo.token_count();

    // 0.5 × (2 × tokens + 2) = tokens + 1 > tokens: not yet.
    convo.set_context_length(2 * tokens + 2);
    assert!(convo.maybe_compress().await.unwrap().is_none());
    assert!(summarizer.seen.lock().unwrap().is_empty());
    // 0.5 × 2 × tokens = tokens: compacts.
    convo.set_context_length(2 * tokens);
    let done = convo.maybe_compress().await.unwrap().unwrap();
    assert_eq!(done.tokens_before, tokens);
    assert!(done.archive.is_some());
    assert_eq!(done.summary.content, format!("{SUMMARY_TEXT}short summary"));

    let seen = summarizer.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(
        contents(&request.messages),
        ["one two three four five", "six seven eight"]
    );
    assert_eq!(request.temperature, 0.3);
    // Held to a quarter of the trigger so compaction lands well under it.
    assert_eq!(request.max_tokens, (tokens / 4).max(1));
}

#[tokio::test]
async fn compression_can_be_disabled_and_skips_when_nothing_is_left_to_compress() {
    let store = in_memory();
    let convo = persistent("Off", store.clone(), Compressor::disabled(), 10).await;
    convo
        .add(
            Role::User,
            "far more than ten tokens of text in this one message",
        )
        .await
        .unwrap();
    assert!(convo.maybe_compress().await.unwrap().is_none());
    assert_eq!(convo.messages().len(), 4);

    // Only the preamble over the threshold: nothing to compress.
    let summarizer = Arc::new(RecordingSummarizer::default());
    let convo = persistent("Tiny", in_memory(), Compressor::new(summarizer.clone()), 5).await;
    assert!(convo.maybe_compress().await.unwrap().is_none());
    // Only a summary left over the threshold: compacting again would gain nothing.
    convo.compact("s").await.unwrap();
    assert!(convo.maybe_compress().await.unwrap().is_none());
    assert!(summarizer.seen.lock().unwrap().is_empty());

    // A context length of 0 disables the check.
    let convo = persistent("Zero", in_memory(), Compressor::new(summarizer.clone()), 0).await;
    convo.add(Role::User, "text").await.unwrap();
    assert!(convo.maybe_compress().await.unwrap().is_none());
}

#[tokio::test]
async fn auto_compression_with_the_extractive_summarizer_keeps_facts_across_compactions() {
    let store = in_memory();
    let compressor = Compressor::new(Arc::new(ExtractiveSummarizer::new().with_latest_turns(2)));
    let convo = persistent("Loop", store.clone(), compressor, 400).await;
    convo
        .add(Role::User, "My name is Ada and I prefer GCP.")
        .await
        .unwrap();
    let mut compactions = 0;
    for i in 0..40 {
        // The top of an agent loop iteration.
        if convo.maybe_compress().await.unwrap().is_some() {
            compactions += 1;
        }
        convo
            .add(
                Role::User,
                format!("Turn {i}: please keep going with the analysis of options."),
            )
            .await
            .unwrap();
        convo
            .add_agent_reply("Okay, continuing with the analysis.")
            .await
            .unwrap();
        assert!(
            convo.token_count() < 400 + 60,
            "prompt kept near the context length"
        );
    }
    assert!(compactions >= 2, "only {compactions} compactions");
    let summary = transcript(&convo)
        .into_iter()
        .find(|m| m.content.starts_with(SUMMARY_PREFIX))
        .unwrap();
    assert!(
        summary.content.contains("My name is Ada and I prefer GCP."),
        "{}",
        summary.content
    );
    assert_eq!(
        store.list_archives(convo.session_id()).await.unwrap().len(),
        compactions
    );
    assert_eq!(
        transcript(&convo),
        store.messages(convo.session_id()).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adds_racing_a_compaction_are_never_lost() {
    let store = in_memory();
    let convo = Arc::new(researcher("Racer", store.clone()).await);
    let adders = spawn_adders(&convo, 4, 30);
    for n in 0..5 {
        convo.compact(&format!("summary {n}")).await.unwrap();
        tokio::task::yield_now().await;
    }
    join_all(adders).await;
    let session = convo.session_id().clone();
    assert_eq!(transcript(&convo), store.messages(&session).await.unwrap());
    // Every added message is in the active memory or in exactly one archive.
    let mut all = store.messages(&session).await.unwrap();
    for info in store.list_archives(&session).await.unwrap() {
        all.extend(
            store
                .load_archive(&session, &info.id)
                .await
                .unwrap()
                .messages,
        );
    }
    let all = contents(&all);
    for t in 0..4 {
        for i in 0..30 {
            let text = adder_text(t, i);
            assert_eq!(all.iter().filter(|c| **c == text).count(), 1, "{text}");
        }
    }
}
