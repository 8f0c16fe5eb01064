//! Encryption at rest on the file backend: what the files hold, what the key reads back, and a
//! key rotation.
//!
//! ```text
//! cargo run -p agentmem-crypt --example encrypted_store
//! AGENTMEM_ENCRYPTION_KEY=$(head -c32 /dev/urandom | base64) cargo run -p agentmem-crypt --example encrypted_store
//! ```

use std::sync::Arc;

use agentmem_core::{
    AgentMemory, AgentMemoryExt, MemoryItem, MemoryKind, MemoryStore, Message, SessionId,
    SessionStore,
};
use agentmem_crypt::{rekey, EncryptLayer, MasterKey};
use agentmem_file::{FileConfig, FileStore};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The key from AGENTMEM_ENCRYPTION_KEY when it is set, else a fresh one for this run.
    let key = match MasterKey::from_env() {
        Ok(key) => key,
        Err(_) => MasterKey::generate()?,
    };
    println!("master key {key:?}");

    let dir = tempfile::tempdir()?;
    let raw: Arc<dyn AgentMemory> =
        Arc::new(FileStore::connect_with(FileConfig::new(dir.path())).await?);
    let store = raw.clone().with_layer(EncryptLayer::new(&key));

    let id: SessionId = "ada".parse()?;
    store
        .append(
            &id,
            &[
                Message::user("My locker code is 4711."),
                Message::assistant("Noted."),
            ],
        )
        .await?;
    store
        .put_memory(
            &MemoryItem::new(MemoryKind::Fact, "Ada's locker code is 4711").with_key("locker"),
        )
        .await?;

    let memory_md = std::fs::read_to_string(dir.path().join("agents/ada/MEMORY.md"))?;
    println!("\nMEMORY.md as stored:\n{memory_md}");
    // No file of the store holds the text.
    for path in files(dir.path())? {
        if std::fs::read(&path)?
            .windows(11)
            .any(|w| w == b"locker code")
        {
            return Err(format!("{} holds the plaintext", path.display()).into());
        }
    }
    println!(
        "through the layer: {:?}",
        store.messages(&id).await?[0].content
    );
    println!(
        "context for \"locker\": {}",
        store.get_context(Some("locker")).await?
    );
    let hits = store.search_messages("locker", &Default::default()).await?;
    println!(
        "search \"locker\": {} hit(s), searched in the client",
        hits.len()
    );

    let other = raw
        .clone()
        .with_layer(EncryptLayer::new(&MasterKey::generate()?));
    println!(
        "\nwith another key: {}",
        refusal(other.messages(&id).await)?
    );

    let new = MasterKey::generate()?;
    let report = rekey(raw.clone(), &key, &new).await?;
    println!(
        "\nrekeyed to {}: {} session(s), {} message(s), {} memory item(s), {} archive(s)",
        new.id(),
        report.sessions,
        report.messages,
        report.memories,
        report.archives
    );
    let store = raw.clone().with_layer(EncryptLayer::new(&new));
    println!(
        "with the new key: {:?}",
        store.messages(&id).await?[0].content
    );
    let old = raw.with_layer(EncryptLayer::new(&key));
    println!("with the old key: {}", refusal(old.messages(&id).await)?);
    Ok(())
}

/// What a read that must be refused said; an error when it was not refused.
fn refusal<T>(read: agentmem_core::Result<T>) -> Result<String, String> {
    match read {
        Err(e) => Ok(e.to_string()),
        Ok(_) => Err("a wrong key was accepted".into()),
    }
}

/// Every file under `dir`.
fn files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(files(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}
