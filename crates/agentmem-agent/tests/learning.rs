//! Learning: rules, corrections and repeated requests become counted, de-duplicated
//! insights, injected into the context.

mod common;

use std::sync::Arc;

use agentmem_agent::learning::{detect_insights, insight_count, InsightCategory};
use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::{AgentMemory, MemoryFilter, MemoryKind, MemoryStore, Message};
use common::{after_turn, in_memory, turn_context};

fn categories(text: &str) -> Vec<InsightCategory> {
    detect_insights(text).iter().map(|i| i.category).collect()
}

#[test]
fn stated_rules_are_detected_and_statements_are_not() {
    use InsightCategory::Rule;
    for rule in [
        "Always use type hints.",
        "never push to main",
        "Don't use unwrap in library code.",
        "Please do not add comments that restate the code",
        "From now on, answer in French.",
        "Going forward, keep answers under 100 words.",
        "Make sure to run clippy before committing.",
        "Remember to update the changelog.",
        "Avoid global state",
    ] {
        assert_eq!(categories(rule), [Rule], "{rule:?}");
    }
    for not_rule in [
        "Never mind, it works now.",
        "Don't worry about it.",
        "I don't know.",
        "I always forget the syntax.",
        "It never compiles on the first try.",
        "Don't know what happened",
        "Thanks, that's perfect.",
    ] {
        assert!(
            !categories(not_rule).contains(&Rule),
            "{not_rule:?} is not a rule"
        );
    }
    let rules = detect_insights("OK. Always use tabs! And never use emojis.");
    let texts: Vec<_> = rules.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, ["Always use tabs", "never use emojis"]);
}

#[test]
fn corrections_are_detected_but_polite_noes_are_not() {
    for correction in [
        "No, I meant the other file.",
        "That's wrong, the port is 8080.",
        "That is not what I asked for.",
        "Actually, it should return a list.",
        "I meant the staging server.",
        "You misunderstood the question.",
    ] {
        assert_eq!(
            categories(correction),
            [InsightCategory::Correction],
            "{correction:?}"
        );
    }
    for fine in [
        "No thanks.",
        "No problem!",
        "No worries",
        "Actually it works now",
        "That's right.",
    ] {
        assert!(
            !categories(fine).contains(&InsightCategory::Correction),
            "{fine:?}"
        );
    }
}

#[test]
fn requests_are_normalised_so_repeats_share_a_key() {
    let a = detect_insights("Please summarise the logs!");
    let b = detect_insights("Could you summarise the   logs");
    let c = detect_insights("summarise the logs.");
    assert_eq!(a[0].category, InsightCategory::Request);
    assert_eq!(a[0].key, b[0].key);
    assert_eq!(b[0].key, c[0].key);
    assert_eq!(a[0].text, "Summarise the logs");
    assert!(detect_insights("What time is it?").is_empty());
    assert!(detect_insights("The logs are long.").is_empty());
}

async fn learning_agent(store: Arc<dyn AgentMemory>) -> Agent {
    Agent::new(
        AgentConfig::default().with_learn(true),
        store,
        Some("assistant"),
    )
    .expect("valid config")
}

#[tokio::test]
async fn insights_are_counted_once_per_message_and_injected() {
    let store = in_memory();
    let agent = learning_agent(store.clone()).await;

    let first = Message::user("Always use type hints.");
    let report = after_turn(&agent, std::slice::from_ref(&first)).await;
    assert_eq!(report.insights.len(), 1);
    // The same conversation again: nothing is counted twice.
    let report = after_turn(&agent, std::slice::from_ref(&first)).await;
    assert!(report.insights.is_empty());

    // A new Agent (a restart) seeing the same message id does not count it again either.
    let restarted = learning_agent(store.clone()).await;
    after_turn(&restarted, std::slice::from_ref(&first)).await;
    let second = Message::user("always use TYPE hints!");
    after_turn(&restarted, &[first, second]).await;

    let insights = store
        .list_memories(&MemoryFilter::kind(MemoryKind::Insight))
        .await
        .expect("list");
    assert_eq!(
        insights.len(),
        1,
        "one insight per normalised rule: {insights:?}"
    );
    assert_eq!(insight_count(&insights[0]), 2);
    assert_eq!(insights[0].metadata["category"], "rule");

    let prompt = restarted
        .system_prompt("Be helpful.")
        .await
        .expect("prompt");
    assert!(prompt.starts_with("Be helpful.\n\n"), "{prompt}");
    assert!(
        prompt.contains("always use TYPE hints (said 2×)"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_request_is_injected_only_once_it_recurs() {
    let store = in_memory();
    let agent = learning_agent(store.clone()).await;
    after_turn(&agent, &[Message::user("Please summarise the logs")]).await;
    let prompt = agent.system_prompt("").await.expect("prompt");
    assert!(
        !prompt.contains("summarise"),
        "one request is not a pattern: {prompt}"
    );

    after_turn(&agent, &[Message::user("Summarise the logs.")]).await;
    let context = turn_context(&agent, &[Message::user("hello")]).await;
    assert!(
        context
            .memory
            .contains("Recurring request (2×): Summarise the logs"),
        "{}",
        context.memory
    );
}

#[tokio::test]
async fn assistant_messages_teach_nothing() {
    let store = in_memory();
    let agent = learning_agent(store.clone()).await;
    let report = after_turn(&agent, &[Message::assistant("Always use type hints.")]).await;
    assert!(report.insights.is_empty());
    assert!(store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list")
        .is_empty());
}
