//! The adapter's behaviour suite on the in-memory store, and a rig agent with a scripted model.
use std::sync::Arc;

use agentmem_core::{AgentMemory, InMemoryStore};
use agentmem_rig::AgentmemConversationMemory;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behaviour_suite_on_the_in_memory_store() {
    let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
    agentmem_rig::cases::all(store.clone(), store).await;
}

/// A rig agent prompted twice in one conversation sends the first exchange to the model the
/// second time, and the store holds both exchanges.
#[tokio::test]
async fn a_rig_agent_continues_its_conversation() {
    use rig_agent::agent::AgentBuilder;
    use rig_agent::test_utils::{MockCompletionModel, MockTurn};

    let store: Arc<dyn AgentMemory> = Arc::new(InMemoryStore::new());
    let model = MockCompletionModel::from_turns([
        MockTurn::text("Hello, Alice!"),
        MockTurn::text("Your name is Alice."),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .memory(AgentmemConversationMemory::new(store.clone()))
        .build();
    for (prompt, reply) in [
        ("My name is Alice.", "Hello, Alice!"),
        ("What is my name?", "Your name is Alice."),
    ] {
        let response = agent.prompt(prompt).conversation("alice").await;
        assert_eq!(response.expect(prompt).output(), reply);
    }

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let sent = format!("{:?}", requests[1]);
    assert!(
        sent.contains("My name is Alice.") && sent.contains("Hello, Alice!"),
        "{sent}"
    );
    let session = "alice".parse().expect("valid id");
    let stored = agentmem_core::AgentMemoryExt::messages(store.as_ref(), &session)
        .await
        .expect("load");
    let texts: Vec<&str> = stored.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        [
            "My name is Alice.",
            "Hello, Alice!",
            "What is my name?",
            "Your name is Alice."
        ]
    );
}
