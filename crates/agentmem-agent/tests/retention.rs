//! `AgentConfig::retention`: the agent's store enforces it as the agent writes; a
//! protocol-only store cannot purge, so the config is refused there.

mod common;

use std::sync::Arc;

use agentmem_agent::{Agent, AgentConfig};
use agentmem_core::layer::Retention;
use agentmem_core::{ErrorKind, Message, RetentionPolicy, SessionStore};
use agentmem_testkit::fixtures::session_ids;
use common::{after_turn, in_memory};

fn keep_one() -> Retention {
    Retention::new(RetentionPolicy {
        max_sessions: Some(1),
        ..RetentionPolicy::default()
    })
    .expect("retention")
}

#[tokio::test]
async fn the_agents_writes_enforce_its_retention() {
    let store = in_memory();
    // Written before the agent, through the store itself: kept until the agent writes.
    store
        .save_session(
            &"older".parse().unwrap(),
            &[Message::user("hi")],
            &Default::default(),
        )
        .await
        .unwrap();
    let config = AgentConfig::default()
        .with_auto_save("chat")
        .with_retention(keep_one());
    let agent = Agent::new(config, store.clone(), Some("assistant")).expect("agent");
    after_turn(&agent, &[Message::user("hello"), Message::assistant("hi")]).await;
    assert_eq!(
        session_ids(&store).await,
        ["chat"],
        "the older session went as the agent saved"
    );
}

#[test]
fn a_protocol_only_store_refuses_retention() {
    let config = AgentConfig::default().with_retention(keep_one());
    let store: Arc<dyn agentmem_core::ContextStore> = Arc::new(in_memory());
    let err = Agent::with_context_store(config, store, Some("assistant")).expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("retention"), "{err}");
}
