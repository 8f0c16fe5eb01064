//! Helpers shared by the conversation tests: stores, and a store wrapper that counts calls
//! and fails the Nth one.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentmem_conversation::templates::SUMMARY_PREFIX;
use agentmem_conversation::{Conversation, ConversationBuilder};
use agentmem_core::{
    async_trait, AgentMemory, AgentMemoryExt, AgentName, Archive, ArchiveId, ArchiveInfo, Error,
    ErrorKind, InMemoryStore, MemoryFilter, MemoryHit, MemoryId, MemoryItem, Message, MessageHit,
    MessageQuery, Metadata, Operation, PurgeReport, Result, RetentionPolicy, Role, Session,
    SessionId, SessionInfo, SessionStore,
};

pub fn name(s: &str) -> AgentName {
    s.parse().expect("valid agent name")
}

pub fn in_memory() -> Arc<dyn AgentMemory> {
    Arc::new(InMemoryStore::new())
}

/// The conversation `builder` describes, which must build.
pub async fn built(builder: ConversationBuilder) -> Conversation {
    builder.build().await.unwrap()
}

/// A conversation of `agent` that preloads from and writes through to `store`.
pub fn persisting(agent: &str, store: Arc<dyn AgentMemory>) -> ConversationBuilder {
    Conversation::builder(name(agent))
        .persistent(true)
        .store(store)
}

/// The contents of `messages`, in order.
pub fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// The text task `t` adds as its message `i` ([`spawn_adders`]).
pub fn adder_text(t: usize, i: usize) -> String {
    format!("task {t} message {i}")
}

/// Spawns `tasks` tasks that each add `per_task` user messages ([`adder_text`]) to `convo`,
/// yielding after each.
pub fn spawn_adders(
    convo: &Arc<Conversation>, tasks: usize, per_task: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..tasks)
        .map(|t| {
            let convo = convo.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    convo.add(Role::User, adder_text(t, i)).await.unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect()
}

/// Waits for every task (a panic in one fails the test).
pub async fn join_all(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        t.await.unwrap();
    }
}

/// Adds a message long enough to trigger compression, then checks that the compression fails
/// as unavailable and leaves memory as it was; the error is for further checks.
pub async fn compression_fails_untouched(convo: &Conversation, text: &str) -> Error {
    convo.add(Role::User, text).await.unwrap();
    let before = convo.messages();
    let err = convo.maybe_compress().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(convo.messages(), before);
    err
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
    /// The limit of every `load` (`None`: a whole-session load).
    loads: Mutex<Vec<Option<usize>>>,
}

impl ScriptedStore {
    pub fn new(inner: Arc<dyn AgentMemory>, fail_on: Option<usize>) -> Arc<Self> {
        Self::with_mode(inner, fail_on, FailMode::Before)
    }

    pub fn with_mode(
        inner: Arc<dyn AgentMemory>, fail_on: Option<usize>, mode: FailMode,
    ) -> Arc<Self> {
        Arc::new(ScriptedStore {
            inner,
            calls: AtomicUsize::new(0),
            fail_on,
            mode,
            log: Mutex::new(Vec::new()),
            loads: Mutex::new(Vec::new()),
        })
    }

    /// The limits of the loads so far, in order.
    pub fn loads(&self) -> Vec<Option<usize>> {
        self.loads.lock().unwrap().clone()
    }

    /// Calls so far, by method name.
    pub fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }

    async fn run<T>(
        &self, op: Operation, call: impl std::future::Future<Output = Result<T>>,
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

/// `impl LayeredStore for ScriptedStore`: each listed method goes through
/// [`ScriptedStore::run`] as its operation; the rest reach the inner store unscripted.
macro_rules! scripted_methods {
    ({ $($own:item)* } $($op:ident => fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        #[async_trait]
        // Named by path: imported, it would make calls on `Arc<dyn AgentMemory>` ambiguous.
        impl agentmem_core::layer::LayeredStore for ScriptedStore {
            type Inner = dyn AgentMemory;
            fn inner(&self) -> &dyn AgentMemory {
                &*self.inner
            }
            $($own)*
            $(async fn $method(&self, $($arg: $ty),*) -> Result<$ret> {
                self.run(Operation::$op, (*self.inner).$method($($arg),*)).await
            })*
        }
    };
}

scripted_methods! {
    {
        async fn load(&self, s: &SessionId, l: Option<usize>) -> Result<Option<Session>> {
            self.loads.lock().unwrap().push(l);
            self.run(Operation::Load, (*self.inner).load(s, l)).await
        }
    }
    SchemaVersion => fn schema_version() -> u32;
    SaveSession => fn save_session(s: &SessionId, h: &[Message], m: &Metadata) -> ();
    Append => fn append(s: &SessionId, m: &[Message]) -> ();
    ListSessions => fn list_sessions() -> Vec<SessionInfo>;
    DeleteSession => fn delete_session(s: &SessionId) -> bool;
    Compact => fn compact(s: &SessionId, r: &[Message]) -> ArchiveInfo;
    ListArchives => fn list_archives(s: &SessionId) -> Vec<ArchiveInfo>;
    LoadArchive => fn load_archive(s: &SessionId, a: &ArchiveId) -> Archive;
    SearchMessages => fn search_messages(q: &str, s: &MessageQuery) -> Vec<MessageHit>;
    Purge => fn purge(p: &RetentionPolicy) -> PurgeReport;
    PutMemory => fn put_memory(i: &MemoryItem) -> MemoryItem;
    GetMemory => fn get_memory(id: &MemoryId) -> Option<MemoryItem>;
    ListMemories => fn list_memories(f: &MemoryFilter) -> Vec<MemoryItem>;
    SearchMemories => fn search_memories(q: &str, f: &MemoryFilter) -> Vec<MemoryHit>;
    DeleteMemory => fn delete_memory(id: &MemoryId) -> bool;
}

/// The messages after the system prompt, rules and custom rules.
pub fn transcript(c: &Conversation) -> Vec<Message> {
    c.messages()[c.preamble_len()..].to_vec()
}

/// One scripted run: build, three adds, compact, one add; stops at the first error.
async fn scripted_run(store: Arc<dyn AgentMemory>) -> (Option<Conversation>, Result<()>) {
    let built = persisting("Crashy", store)
        .system_prompt("sys")
        .rules("rules")
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
            let texts = contents(&stored);
            if compacted {
                // The transcript is in the archive, the summary leads the session.
                assert_eq!(archives.len(), 1, "{context}");
                let archive = inner.load_archive(&session, &archives[0].id).await.unwrap();
                assert_eq!(
                    contents(&archive.messages),
                    ["alpha", "beta", "gamma"],
                    "{context}"
                );
                assert!(stored[0].content.starts_with(SUMMARY_PREFIX), "{context}");
            } else {
                assert!(archives.is_empty(), "{context}");
                let landed = fail_on - 2 + usize::from(mode == FailMode::After);
                assert_eq!(
                    texts,
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
