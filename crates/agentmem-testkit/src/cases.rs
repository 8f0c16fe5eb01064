//! The conformance cases. Each takes a fresh, empty store of its own.

use agentmem_core::{AgentMemory, AgentMemoryExt, Message, Metadata, SessionId};

fn sid(name: &str) -> SessionId {
    SessionId::new(name).expect("test session ids are valid")
}

/// `save_session` then `load` returns exactly what was saved, metadata included.
pub async fn save_and_load_round_trip(store: &dyn AgentMemory) {
    let id = sid("round_trip");
    let history = vec![
        Message::system("You are helpful."),
        Message::user("héllo ✓ 東京"),
        Message::assistant("hi"),
    ];
    let mut meta = Metadata::new();
    meta.insert("topic".into(), serde_json::json!("greeting"));
    store.save_session(&id, &history, &meta).await.expect("save_session");
    let session = store.load(&id, None).await.expect("load").expect("session exists");
    assert_eq!(session.messages, history);
    assert_eq!(session.metadata, meta);
    assert_eq!(session.total_messages, 3);
}

/// Loading a session that was never written gives `None`, not an error.
pub async fn missing_session_loads_as_none(store: &dyn AgentMemory) {
    assert!(store.load(&sid("never_written"), None).await.expect("load").is_none());
    assert!(store.messages(&sid("never_written")).await.expect("messages").is_empty());
}

/// Sequential appends keep their order.
pub async fn append_preserves_order(store: &dyn AgentMemory) {
    let id = sid("ordered");
    let msgs: Vec<Message> = (0..20).map(|i| Message::user(format!("m{i}"))).collect();
    for m in &msgs[..10] {
        store.append_one(&id, m.clone()).await.expect("append");
    }
    store.append(&id, &msgs[10..]).await.expect("batch append");
    assert_eq!(store.messages(&id).await.expect("load"), msgs);
}
