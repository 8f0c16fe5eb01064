//! Migrating from an encrypted store writes ciphertext with the destination's key, and
//! plaintext only when asked explicitly (`MigrateOptions::allow_plaintext`).
use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, ErrorKind, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind,
    MemoryStore, Message, SessionId, SessionStore,
};
use agentmem_crypt::{EncryptLayer, MasterKey, NoKeyLayer, MARKER_PROPERTY};
use agentmem_transfer::{is_encrypted, migrate, MigrateOptions, Silent, ENCRYPTION_MARKER};

const SECRET: &str = "my locker code is 4711";

fn key() -> MasterKey {
    MasterKey::generate().unwrap()
}

/// A store encrypted with a new key, holding a session with an archive and a memory item.
async fn encrypted_source() -> Arc<dyn AgentMemory> {
    let raw = Arc::new(InMemoryStore::new());
    let store: Arc<dyn AgentMemory> = Arc::new(raw.with_layer(EncryptLayer::new(&key())));
    let id: SessionId = "vault".parse().unwrap();
    store.append_one(&id, Message::user(SECRET)).await.unwrap();
    store
        .compact(&id, &[Message::system(SECRET)])
        .await
        .unwrap();
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, SECRET))
        .await
        .unwrap();
    store
}

/// Everything a reader of the raw store sees, as text.
async fn raw_text(raw: &dyn AgentMemory) -> String {
    let mut text = String::new();
    for info in raw.list_sessions().await.unwrap() {
        let session = raw.load(&info.id, None).await.unwrap().unwrap();
        text.push_str(&format!("{session:?}"));
        for archive in raw.list_archives(&info.id).await.unwrap() {
            let archive = raw.load_archive(&info.id, &archive.id).await.unwrap();
            text.push_str(&format!("{archive:?}"));
        }
    }
    let items = raw.list_memories(&MemoryFilter::default()).await.unwrap();
    text + &format!("{items:?}")
}

#[test]
fn the_marker_is_the_one_the_encryption_layer_writes() {
    assert_eq!(ENCRYPTION_MARKER, MARKER_PROPERTY);
}

/// Into a store without a key (bare, or wearing the no-key layer), a migration of an
/// encrypted store is refused before anything is written, naming the way out.
#[tokio::test]
async fn an_encrypted_source_is_not_copied_into_plaintext() {
    let from = encrypted_source().await;
    for (name, wear_no_key) in [("bare", false), ("no key", true)] {
        let raw = Arc::new(InMemoryStore::new());
        let to: Arc<dyn AgentMemory> = if wear_no_key {
            Arc::new(raw.clone().with_layer(NoKeyLayer))
        } else {
            raw.clone()
        };
        let err = migrate(&*from, &*to, MigrateOptions::default(), &mut Silent)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{name}: {err}");
        assert!(err.to_string().contains("allow_plaintext"), "{name}: {err}");
        assert!(raw.list_sessions().await.unwrap().is_empty(), "{name}");
        let items = raw.list_memories(&MemoryFilter::default()).await.unwrap();
        assert!(items.is_empty(), "{name}: nothing written");
        assert!(!is_encrypted(&*raw).await.unwrap(), "{name}");
        // A dry run writes nothing and so refuses nothing.
        let dry = MigrateOptions {
            dry_run: true,
            ..MigrateOptions::default()
        };
        let report = migrate(&*from, &*to, dry, &mut Silent).await.unwrap();
        assert_eq!(report.sessions, 1, "{name}");
        assert!(raw.list_sessions().await.unwrap().is_empty(), "{name}");
    }
}

/// Into a store wearing an encryption layer, an encrypted source is copied as ciphertext
/// under the destination's key, which marks the destination.
#[tokio::test]
async fn an_encrypted_source_is_copied_as_ciphertext_under_the_destinations_key() {
    let from = encrypted_source().await;
    let raw = Arc::new(InMemoryStore::new());
    let to_key = key();
    let to = raw.clone().with_layer(EncryptLayer::new(&to_key));
    let report = migrate(&*from, &to, MigrateOptions::default(), &mut Silent)
        .await
        .unwrap();
    assert!(report.verified);
    assert_eq!((report.messages, report.memories), (2, 1));
    assert!(
        is_encrypted(&*raw).await.unwrap(),
        "the destination is marked"
    );
    let text = raw_text(&*raw).await;
    assert!(!text.contains(SECRET), "no plaintext at rest: {text}");
    let id: SessionId = "vault".parse().unwrap();
    assert_eq!(to.messages(&id).await.unwrap()[0].content, SECRET);
    // Without the key the destination now refuses plaintext writes.
    let keyless = raw.with_layer(NoKeyLayer);
    let err = keyless
        .append_one(&"new".parse().unwrap(), Message::user("plain"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// Plaintext only when asked: `allow_plaintext` copies the decrypted records.
#[tokio::test]
async fn plaintext_when_asked_explicitly() {
    let from = encrypted_source().await;
    let to = InMemoryStore::new();
    let options = MigrateOptions {
        allow_plaintext: true,
        ..MigrateOptions::default()
    };
    let report = migrate(&*from, &to, options, &mut Silent).await.unwrap();
    assert!(report.verified);
    assert!(raw_text(&to).await.contains(SECRET), "plaintext, as asked");
    assert!(!is_encrypted(&to).await.unwrap());
}
