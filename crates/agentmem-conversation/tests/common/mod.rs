//! Helpers shared by the conversation tests: stores, and a store wrapper that counts calls
//! and fails the Nth one.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentmem_conversation::templates::SUMMARY_PREFIX;
use agentmem_conversation::Conversation;
use agentmem_core::{
    async_trait, AgentMemory, AgentMemoryExt, AgentName, Archive, ArchiveId, ArchiveInfo,
    Capabilities, Error, ErrorKind, InMemory, MemoryFilter, MemoryHit, MemoryItem, Message,
    MessageHit, MessageQuery, Metadata, Operation, PurgeReport, Result, RetentionPolicy, Role,
    Session, SessionId, SessionInfo,
};

pub fn name(s: &str) -> AgentName {
    s.parse().expect("valid agent name")
}

pub fn in_memory() -> Arc<dyn AgentMemory> {
    Arc::new(InMemory::new())
}

/// Where an injected failure happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailMode {
    /// The call fails before reaching the backend (a crash before the write).
    Before,
    /// The call reaches the backend, then reports failure (a lost acknowledgement).
    After,
}

/// Delegates to `inner`, logs every call by name, and fails call number `fail_on` (1-based)
/// as `mode` says.
#[derive(Debug)]
pub struct ScriptedStore {
    pub inner: Arc<dyn AgentMemory>,
    calls: AtomicUsize,
    fail_on: Option<usize>,
    mode: FailMode,
    log: Mutex<Vec<&'static str>>,
}

impl ScriptedStore {
    pub fn new(inner: Arc<dyn AgentMemory>, fail_on: Option<usize>) -> Arc<Self> {
        Self::with_mode(inner, fail_on, FailMode::Before)
    }

    pub fn with_mode(
        inner: Arc<dyn AgentMemory>,
        fail_on: Option<usize>,
        mode: FailMode,
    ) -> Arc<Self> {
        Arc::new(ScriptedStore {
            inner,
            calls: AtomicUsize::new(0),
            fail_on,
            mode,
            log: Mutex::new(Vec::new()),
        })
    }

    /// Calls so far, by method name.
    pub fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }

    async fn run<T>(
        &self,
        op: Operation,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        self.log.lock().unwrap().push(op.as_str());
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == self.fail_on {
            if self.mode == FailMode::After {
                let _ = call.await;
            }
            return Err(
                Error::unavailable(format!("injected failure on call {n}")).with_operation(op)
            );
        }
        call.await
    }
}

#[async_trait]
impl AgentMemory for ScriptedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn schema_version(&self) -> Result<u32> {
        self.run(Operation::SchemaVersion, self.inner.schema_version())
            .await
    }
    async fn save_session(&self, s: &SessionId, h: &[Message], m: &Metadata) -> Result<()> {
        self.run(Operation::SaveSession, self.inner.save_session(s, h, m))
            .await
    }
    async fn append(&self, s: &SessionId, m: &[Message]) -> Result<()> {
        self.run(Operation::Append, self.inner.append(s, m)).await
    }
    async fn load(&self, s: &SessionId, l: Option<usize>) -> Result<Option<Session>> {
        self.run(Operation::Load, self.inner.load(s, l)).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.run(Operation::ListSessions, self.inner.list_sessions())
            .await
    }
    async fn delete_session(&self, s: &SessionId) -> Result<bool> {
        self.run(Operation::DeleteSession, self.inner.delete_session(s))
            .await
    }
    async fn compact(&self, s: &SessionId, r: &[Message]) -> Result<ArchiveInfo> {
        self.run(Operation::Compact, self.inner.compact(s, r)).await
    }
    async fn list_archives(&self, s: &SessionId) -> Result<Vec<ArchiveInfo>> {
        self.run(Operation::ListArchives, self.inner.list_archives(s))
            .await
    }
    async fn load_archive(&self, s: &SessionId, a: &ArchiveId) -> Result<Archive> {
        self.run(Operation::LoadArchive, self.inner.load_archive(s, a))
            .await
    }
    async fn put_memory(&self, i: &MemoryItem) -> Result<MemoryItem> {
        self.run(Operation::PutMemory, self.inner.put_memory(i))
            .await
    }
    async fn get_memory(&self, id: &str) -> Result<Option<MemoryItem>> {
        self.run(Operation::GetMemory, self.inner.get_memory(id))
            .await
    }
    async fn list_memories(&self, f: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.run(Operation::ListMemories, self.inner.list_memories(f))
            .await
    }
    async fn search_memories(&self, q: &str, f: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        self.run(Operation::SearchMemories, self.inner.search_memories(q, f))
            .await
    }
    async fn delete_memory(&self, id: &str) -> Result<bool> {
        self.run(Operation::DeleteMemory, self.inner.delete_memory(id))
            .await
    }
    async fn search_messages(&self, q: &str, s: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.run(Operation::SearchMessages, self.inner.search_messages(q, s))
            .await
    }
    async fn purge(&self, p: &RetentionPolicy) -> Result<PurgeReport> {
        self.run(Operation::Purge, self.inner.purge(p)).await
    }
}

/// The messages after the system prompt, rules and custom rules.
pub fn transcript(c: &Conversation) -> Vec<Message> {
    c.messages()[c.preamble_len()..].to_vec()
}

/// One scripted run: build, three adds, compact, one add; stops at the first error.
async fn scripted_run(store: Arc<dyn AgentMemory>) -> (Option<Conversation>, Result<()>) {
    let built = Conversation::builder(name("Crashy"))
        .system_prompt("sys")
        .rules("rules")
        .persistent(true)
        .store(store)
        .build()
        .await;
    let convo = match built {
        Ok(c) => c,
        Err(e) => return (None, Err(e)),
    };
    let steps = async {
        for text in ["alpha", "beta", "gamma"] {
            convo.add(Role::User, text).await?;
        }
        convo.compact("alpha beta gamma happened").await?;
        convo.add(Role::User, "delta").await?;
        Ok(())
    };
    let result = steps.await;
    (Some(convo), result)
}

/// Runs the script once per store call and failure mode, failing that call, on fresh stores
/// from `make`, and checks after each failure that memory mirrors the store (old state or new
/// state, never a mix) and that nothing of the transcript was lost.
pub async fn failure_at_each_call_leaves_memory_and_store_consistent<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn AgentMemory>>,
{
    let dry = ScriptedStore::new(make().await, None);
    let (_, ok) = scripted_run(dry.clone()).await;
    ok.unwrap();
    let calls = dry.log();
    assert_eq!(
        calls,
        ["load", "append", "append", "append", "compact", "append"]
    );
    let session: SessionId = "Crashy".parse().unwrap();

    for mode in [FailMode::Before, FailMode::After] {
        for fail_on in 1..=calls.len() {
            let what = calls[fail_on - 1];
            let context = format!("{mode:?} call {fail_on} ({what})");
            let inner = make().await;
            let store = ScriptedStore::with_mode(inner.clone(), Some(fail_on), mode);
            let (convo, result) = scripted_run(store.clone()).await;
            let err = result.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unavailable, "{context}");
            let stored = inner.messages(&session).await.unwrap();
            let archives = inner.list_archives(&session).await.unwrap();
            let Some(convo) = convo else {
                assert!(
                    stored.is_empty(),
                    "{context}: a failed build wrote something"
                );
                continue;
            };
            // Memory mirrors the store exactly.
            assert_eq!(transcript(&convo), stored, "{context}");
            let compacted = fail_on > 5 || (fail_on == 5 && mode == FailMode::After);
            let contents: Vec<&str> = stored.iter().map(|m| m.content.as_str()).collect();
            if compacted {
                // The transcript is in the archive, the summary leads the session.
                assert_eq!(archives.len(), 1, "{context}");
                let archive = inner.load_archive(&session, &archives[0].id).await.unwrap();
                assert_eq!(
                    archive
                        .messages
                        .iter()
                        .map(|m| m.content.as_str())
                        .collect::<Vec<_>>(),
                    ["alpha", "beta", "gamma"],
                    "{context}"
                );
                assert!(stored[0].content.starts_with(SUMMARY_PREFIX), "{context}");
            } else {
                assert!(archives.is_empty(), "{context}");
                let landed = fail_on - 2 + usize::from(mode == FailMode::After);
                assert_eq!(
                    contents,
                    ["alpha", "beta", "gamma"][..landed.min(3)],
                    "{context}"
                );
            }
            // The conversation still works after the failure, and stays in step.
            convo.add(Role::User, "after").await.unwrap();
            assert_eq!(
                transcript(&convo),
                inner.messages(&session).await.unwrap(),
                "{context}"
            );
        }
    }
}
