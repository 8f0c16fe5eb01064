//! The extractive summarizer: deterministic, within budget, facts first, facts carried.
use agentmem_conversation::templates::{preload_text, summary_text};
use agentmem_conversation::{ExtractiveSummarizer, Summarizer, SummaryRequest, TokenEncoding};
use agentmem_core::{Message, Role};
use agentmem_formats::swarms::render_memory_md;
use chrono::{TimeZone, Utc};

fn transcript(n: usize) -> Vec<Message> {
    let mut m = vec![Message::user(
        "My name is Ada. I prefer GCP for latency reasons.",
    )];
    for i in 0..n {
        m.push(Message::user(format!(
            "Question {i} about warehouses and more filler words here?"
        )));
        m.push(Message::assistant(
            "Some chatter without anything to keep. Fine.",
        ));
    }
    m.push(Message::assistant(
        "We decided to shortlist BigQuery and AlloyDB.",
    ));
    m.push(Message::user("Thanks, what should happen next?"));
    m.push(Message::assistant("Next we load sample data."));
    m
}

/// What `s` makes of `messages` within `budget` tokens.
async fn summarize(s: &ExtractiveSummarizer, messages: Vec<Message>, budget: usize) -> String {
    s.summarize(&SummaryRequest::new(messages, budget))
        .await
        .unwrap()
}

#[tokio::test]
async fn deterministic_and_within_budget() {
    let s = ExtractiveSummarizer::new();
    for encoding in [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase] {
        for budget in [1, 5, 20, 60, 150, 1_000] {
            let request = SummaryRequest::new(transcript(30), budget).with_encoding(encoding);
            let a = s.summarize(&request).await.unwrap();
            let b = s.summarize(&request).await.unwrap();
            assert_eq!(a, b, "not deterministic at {budget}");
            assert!(encoding.count(&a) <= budget, "{budget}: {a}");
        }
    }
}

#[tokio::test]
async fn cue_facts_beat_number_only_facts_and_latest_turns_are_quoted() {
    let s = ExtractiveSummarizer::new().with_latest_turns(2);
    let summary = summarize(&s, transcript(30), 150).await;
    let (facts, turns) = summary.split_once("\n\nLatest turns:\n").unwrap();
    assert!(facts.starts_with("Key facts and decisions:\n"));
    // Cue sentences are kept even though 30 newer number-only questions compete with them.
    assert!(facts.contains("- User: My name is Ada."), "{summary}");
    assert!(facts.contains("- User: I prefer GCP for latency reasons."));
    assert!(facts.contains("- Assistant: We decided to shortlist BigQuery and AlloyDB."));
    assert!(!facts.contains("chatter"));
    // Facts print in transcript order.
    assert!(facts.find("Ada").unwrap() < facts.find("shortlist").unwrap());
    assert_eq!(
        turns,
        "- User: Thanks, what should happen next?\n- Assistant: Next we load sample data."
    );
    // With room to spare, number-only facts come in too, newest first.
    let roomy = summarize(&s, transcript(3), 2_000).await;
    assert!(roomy.contains("- User: Question 2 about warehouses"));
}

#[tokio::test]
async fn facts_survive_an_earlier_summary_and_a_preloaded_memory() {
    let s = ExtractiveSummarizer::new().with_latest_turns(1);
    let first = summarize(&s, transcript(2), 300).await;
    let t = Utc.with_ymd_and_hms(2026, 4, 20, 18, 0, 0).unwrap();
    let memory_md = render_memory_md(
        "Ada",
        t,
        &[
            Message::system(summary_text(&first)).with_timestamp(t),
            Message::user("Remember: the budget is capped.").with_timestamp(t),
        ],
    );
    let messages = vec![
        Message::system(preload_text(&memory_md)),
        Message::user("Hello again."),
        Message::assistant("Welcome back."),
    ];
    let second = summarize(&s, messages, 300).await;
    assert!(second.contains("- User: My name is Ada."), "{second}");
    assert!(second.contains("- Assistant: We decided to shortlist BigQuery and AlloyDB."));
    assert!(second.contains("- User: Remember: the budget is capped."));
    // Headings of the earlier summary and of MEMORY.md are not facts.
    assert_eq!(second.matches("Key facts and decisions:").count(), 1);
    assert!(!second.contains("Interaction Log") && !second.contains("Compressed Memory"));
    assert!(second.ends_with("Latest turns:\n- Assistant: Welcome back."));
}

#[tokio::test]
async fn edge_cases() {
    let s = ExtractiveSummarizer::new();
    let empty = summarize(&s, vec![], 50).await;
    assert_eq!(empty, "No earlier conversation.");
    let zero = summarize(&s, transcript(1), 0).await;
    assert_eq!(zero, "");
    // Custom cues.
    let custom = ExtractiveSummarizer::new()
        .with_latest_turns(0)
        .with_cue("Kubernetes");
    let request = SummaryRequest::new(
        vec![
            Message::user("We run kubernetes in prod."),
            Message::new(Role::Tool, "nothing special"),
        ],
        100,
    );
    assert_eq!(
        custom.summarize(&request).await.unwrap(),
        "Key facts and decisions:\n- User: We run kubernetes in prod."
    );
}
