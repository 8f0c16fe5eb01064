//! [`RetainLayer`]: retention (C9) that a store enforces as it is written, without anyone
//! calling [`purge`](crate::SessionStore::purge).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::layer::{Layer, LayeredStore};
use crate::lifecycle::SessionPatch;
use crate::model::{ArchiveInfo, MemoryItem, Message, Metadata, SessionInfo};
use crate::name::ArchiveId;
use crate::name::{MemoryId, MessageId, SessionId};
use crate::store::{
    AgentMemory, MemoryFilter, MemoryStore, PurgeReport, RetentionPolicy, SessionStore,
};

/// How long a store with [`Retention`] waits at most between two sweeps for age limits, by
/// default: one minute.
pub const DEFAULT_SWEEP_EVERY: Duration = Duration::from_secs(60);

/// How many session or memory ids a [`Retained`] store remembers having written; past that
/// it forgets them all (a forgotten id costs one extra sweep when written again).
const MAX_REMEMBERED_IDS: usize = 16_384;

/// What a store keeps, enforced as it is written (see [`RetainLayer`]): a
/// [`RetentionPolicy`] (the limits of `purge --keep`, `--older-than` and
/// `--memories-older-than`), optionally a number of memory items, and the counts optionally
/// per owner or per agent.
///
/// From a store URL: `keep=N`, `retain=DURATION`, `retain_memories=DURATION`,
/// `keep_memories=N`, `keep_per=owner` or `keep_per=agent`, and `retain_every=DURATION`
/// (durations like `30d`, `12h` or `1d12h`; see [`parse_duration`](crate::parse_duration)).
///
/// Counting per agent applies to memory items only (`keep_memories`, grouped by
/// [`MemoryScope::agent`](crate::MemoryScope::agent)): a session records no agent in any
/// place every writer fills and every backend lists ([`SessionLabels`](crate::SessionLabels)
/// holds a title, an owner and tags; an agent's history session is named by a hash of its
/// workspace and name), so `keep` per agent would count every session as the agent "none"
/// and delete other agents' sessions. It is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    policy: RetentionPolicy,
    max_memories: Option<usize>,
    per: KeepPer,
    sweep_every: Duration,
}

/// What `keep` and `keep_memories` are counted per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeepPer {
    /// The whole store.
    Store,
    /// A session's owner label; a memory item's scope owner.
    Owner,
    /// A memory item's scope agent.
    Agent,
}

impl Retention {
    /// Enforces `policy` as the store is written. `InvalidInput` for a policy that sets no
    /// limit, or would delete what was just written (`max_sessions` of 0, an age of zero).
    pub fn new(policy: RetentionPolicy) -> Result<Self> {
        Retention::with_memory_limit(policy, None)
    }

    /// Enforces `policy` and, with `max_memories`, keeps at most that many memory items, the
    /// most recently updated (the item just written always among them). `InvalidInput` as
    /// [`new`](Self::new), counting `max_memories` as a limit, and for `max_memories` of 0.
    pub fn with_memory_limit(policy: RetentionPolicy, max_memories: Option<usize>) -> Result<Self> {
        if policy.max_sessions == Some(0) {
            return Err(Error::invalid_input(
                "retention keep=0 would delete the session just written; keep at least 1",
            ));
        }
        if max_memories == Some(0) {
            return Err(Error::invalid_input(
                "retention keep_memories=0 would delete the memory item just written; keep at least 1",
            ));
        }
        if policy.max_age == Some(Duration::ZERO) || policy.max_memory_age == Some(Duration::ZERO) {
            return Err(Error::invalid_input(
                "retention of zero would delete what was just written; retain for longer",
            ));
        }
        if policy.max_age.is_none()
            && policy.max_sessions.is_none()
            && policy.max_memory_age.is_none()
            && max_memories.is_none()
        {
            return Err(Error::invalid_input(
                "retention sets no limit: give keep, retain, retain_memories or keep_memories",
            ));
        }
        Ok(Retention {
            policy,
            max_memories,
            per: KeepPer::Store,
            sweep_every: DEFAULT_SWEEP_EVERY,
        })
    }

    /// Counts `keep` ([`RetentionPolicy::max_sessions`]) per session owner, and the memory
    /// limit per memory scope owner: each owner keeps its newest sessions and items, and those
    /// without an owner count as one more owner. `InvalidInput` when there is no count (no
    /// `max_sessions` and no memory limit).
    pub fn per_owner(mut self) -> Result<Self> {
        if self.policy.max_sessions.is_none() && self.max_memories.is_none() {
            return Err(Error::invalid_input(
                "retention keep_per=owner needs keep=N or keep_memories=N: there is no count to apply per owner",
            ));
        }
        self.per = KeepPer::Owner;
        Ok(self)
    }

    /// Counts the memory limit per agent ([`MemoryScope::agent`](crate::MemoryScope::agent)):
    /// each agent keeps its newest items, and the items of no agent count as one more agent.
    /// `InvalidInput` without a memory limit, and with `max_sessions`: sessions record no
    /// agent to count them by (see [`Retention`]).
    pub fn per_agent(mut self) -> Result<Self> {
        if self.policy.max_sessions.is_some() {
            return Err(Error::invalid_input(
                "retention keep_per=agent counts memory items only (keep_memories=N): sessions \
                 record no agent to count keep=N by; use keep_per=owner, or keep without keep_per",
            ));
        }
        if self.max_memories.is_none() {
            return Err(Error::invalid_input(
                "retention keep_per=agent needs keep_memories=N: there is no count to apply per agent",
            ));
        }
        self.per = KeepPer::Agent;
        Ok(self)
    }

    /// The longest a write waits after the previous sweep before it sweeps for age limits
    /// again (default [`DEFAULT_SWEEP_EVERY`]; zero sweeps after every write).
    pub fn sweep_every(mut self, every: Duration) -> Self {
        self.sweep_every = every;
        self
    }

    /// The limits enforced.
    pub fn policy(&self) -> &RetentionPolicy {
        &self.policy
    }

    /// The most memory items kept, if limited.
    pub fn max_memories(&self) -> Option<usize> {
        self.max_memories
    }

    /// Whether `keep` and the memory limit count per owner.
    pub fn is_per_owner(&self) -> bool {
        self.per == KeepPer::Owner
    }

    /// Whether the memory limit counts per agent.
    pub fn is_per_agent(&self) -> bool {
        self.per == KeepPer::Agent
    }

    /// The longest wait between two sweeps for age limits.
    pub fn sweep_interval(&self) -> Duration {
        self.sweep_every
    }
}

/// The layer that enforces a [`Retention`] as the store is written, on every backend.
///
/// After a write, the store sweeps (its own [`purge`](SessionStore::purge) with the policy,
/// which also takes expired sessions and memory items; per owner, deletes the oldest
/// sessions beyond `keep`; and deletes the least recently updated memory items beyond the
/// memory limit, in the whole store, per owner or per agent) when:
/// - the write is the first this store handle makes to a session (it may have created one, so
///   `keep` is enforced at once: after it returns, the store holds at most `keep` sessions, or
///   per owner), or a label patch that may move a session to another owner; or
/// - with a memory limit, the write stores a memory item this handle has not written before
///   (the limit holds when it returns; the item just written is kept); or
/// - the last sweep is older than [`Retention::sweep_interval`] (age limits are enforced on
///   the next write after that long).
///
/// The newest session is never the one a sweep deletes, so a session just written stays
/// (`keep` is at least 1). A sweep runs inside the write that triggered it, one at a time per
/// handle (writes meanwhile ask the running sweep to go round once more). A write succeeds
/// when its own operation does: a sweep that fails is logged (`tracing` warning), not
/// returned, since the write is already stored and a retried write would repeat it.
///
/// ```
/// use std::time::Duration;
/// use agentmem_core::layer::{RetainLayer, Retention};
/// use agentmem_core::{AgentMemoryExt, InMemoryStore, Message, RetentionPolicy, SessionId, SessionStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let policy = RetentionPolicy { max_sessions: Some(2), ..Default::default() };
/// let store = InMemoryStore::new().with_layer(RetainLayer::new(Retention::new(policy)?));
/// for name in ["a", "b", "c"] {
///     let id: SessionId = name.parse()?;
///     store.append_one(&id, Message::user("hi")).await?;
/// }
/// assert_eq!(store.list_sessions().await?.len(), 2, "the oldest went as `c` was written");
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct RetainLayer {
    retention: Retention,
}

impl RetainLayer {
    /// Enforces `retention`.
    pub fn new(retention: Retention) -> Self {
        RetainLayer { retention }
    }
}

impl<S: AgentMemory> Layer<S> for RetainLayer {
    type Store = Retained<S>;
    fn layer(&self, inner: S) -> Retained<S> {
        Retained {
            inner,
            retention: self.retention.clone(),
            sweeps: Arc::default(),
        }
    }
}

/// A store wearing [`RetainLayer`]. Dereferences to the store inside it.
#[derive(Debug, Clone)]
pub struct Retained<S> {
    inner: S,
    retention: Retention,
    sweeps: Arc<Sweeps>,
}

/// When the last sweep ran, the sessions written since, and who is sweeping.
#[derive(Debug, Default)]
struct Sweeps {
    state: Mutex<SweepState>,
    /// A write of this handle is sweeping.
    running: AtomicBool,
    /// A sweep was asked for since the running one started.
    pending: AtomicBool,
}

/// Marks a sweep as running; the mark goes when the sweep ends, even when the write's future
/// is dropped in the middle of it.
struct Running<'a>(&'a AtomicBool);

impl<'a> Running<'a> {
    fn start(flag: &'a AtomicBool) -> Option<Running<'a>> {
        flag.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| Running(flag))
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

#[derive(Debug, Default)]
struct SweepState {
    last: Option<Instant>,
    written: HashSet<SessionId>,
    memories: HashSet<MemoryId>,
    /// The memory item written last, which a sweep keeps whatever its time says.
    newest_memory: Option<MemoryId>,
}

/// Why a write may need a sweep.
#[derive(Clone, Copy)]
enum Written<'a> {
    /// A session's messages: a sweep when this handle has not written it before.
    Session(&'a SessionId),
    /// A session's labels: a sweep when `keep` counts per owner and the owner may change.
    Labels(&'a SessionPatch),
    /// A memory item, as stored: a sweep when there is a memory limit and this handle has not
    /// written the item before.
    Memory(&'a MemoryId),
    /// Anything else: a sweep when the last one is old enough.
    Other,
}

crate::holds_inner_store!(Retained);

impl<S> Retained<S> {
    /// The retention this store enforces.
    pub fn retention(&self) -> &Retention {
        &self.retention
    }

    fn is_due(&self, written: Written<'_>) -> bool {
        let mut state = self
            .sweeps
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let new_session = match written {
            Written::Session(id) => {
                if state.written.len() >= MAX_REMEMBERED_IDS {
                    state.written.clear();
                }
                self.retention.policy.max_sessions.is_some() && state.written.insert(id.clone())
            }
            Written::Labels(patch) => self.retention.is_per_owner() && patch.owner.is_some(),
            Written::Memory(id) => {
                if self.retention.max_memories.is_none() {
                    false
                } else {
                    state.newest_memory = Some(id.clone());
                    if state.memories.len() >= MAX_REMEMBERED_IDS {
                        state.memories.clear();
                    }
                    state.memories.insert(id.clone())
                }
            }
            Written::Other => false,
        };
        new_session
            || state
                .last
                .is_none_or(|last| last.elapsed() >= self.retention.sweep_every)
    }
}

impl<S: AgentMemory> Retained<S> {
    /// Sweeps now, whatever the time since the last sweep: what a write that is due does.
    pub async fn sweep(&self) -> Result<PurgeReport> {
        let newest_memory = {
            let mut state = self
                .sweeps
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            state.last = Some(Instant::now());
            state.newest_memory.clone()
        };
        let mut policy = self.retention.policy;
        let per_owner = self.retention.is_per_owner().then_some(policy.max_sessions);
        if per_owner.is_some() {
            policy.max_sessions = None;
        }
        let mut report = self.inner.purge(&policy).await?;
        if let Some(Some(keep)) = per_owner {
            report.sessions_deleted += keep_newest_per_owner(&self.inner, keep).await?;
        }
        if let Some(keep) = self.retention.max_memories {
            report.memories_deleted += keep_newest_memories(
                &self.inner,
                keep,
                self.retention.per,
                newest_memory.as_ref(),
            )
            .await?;
        }
        Ok(report)
    }

    /// After a write that succeeded: sweeps when due, one sweep at a time.
    async fn after(&self, written: Written<'_>) {
        if !self.is_due(written) {
            return;
        }
        self.sweeps.pending.store(true, Ordering::SeqCst);
        while self.sweeps.pending.load(Ordering::SeqCst) {
            // A sweep running now goes round again for this write: it sees `pending` when done.
            let Some(_running) = Running::start(&self.sweeps.running) else {
                return;
            };
            if self.sweeps.pending.swap(false, Ordering::SeqCst) {
                if let Err(e) = self.sweep().await {
                    tracing::warn!(error = %e, "agentmem retention sweep failed; the write is stored");
                }
            }
        }
    }
}

/// Deletes, for each owner (the sessions without one counting as one more owner), every
/// session beyond the `keep` most recently written; ties in time keep the smaller ids, as
/// every backend's `purge` does. Returns how many it deleted.
pub async fn keep_newest_per_owner<S: SessionStore + ?Sized>(
    store: &S, keep: usize,
) -> Result<u64> {
    let mut by_owner: BTreeMap<Option<String>, Vec<SessionInfo>> = BTreeMap::new();
    for info in store.list_sessions().await? {
        by_owner
            .entry(info.labels.owner.clone())
            .or_default()
            .push(info);
    }
    let mut deleted = 0;
    for sessions in by_owner.values_mut() {
        if sessions.len() <= keep {
            continue;
        }
        sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        for info in &sessions[keep..] {
            if store.delete_session(&info.id).await? {
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// Deletes, in each group of memory items (the whole store, or per scope owner or agent, the
/// items without one counting as one more group), every item beyond the `keep` most recently
/// updated; `newest` (the item written last) counts as the newest of its group, and ties in
/// time keep the smaller ids. Returns how many it deleted.
async fn keep_newest_memories<S: MemoryStore + ?Sized>(
    store: &S, keep: usize, per: KeepPer, newest: Option<&MemoryId>,
) -> Result<u64> {
    let mut groups: BTreeMap<Option<String>, Vec<MemoryItem>> = BTreeMap::new();
    for item in store.list_memories(&MemoryFilter::default()).await? {
        let group = match per {
            KeepPer::Store => None,
            KeepPer::Owner => item.scope.owner.clone(),
            KeepPer::Agent => item.scope.agent.clone(),
        };
        groups.entry(group).or_default().push(item);
    }
    let mut deleted = 0;
    for items in groups.values_mut() {
        if items.len() <= keep {
            continue;
        }
        items.sort_by(|a, b| {
            let is_newest = |item: &MemoryItem| Some(&item.id) == newest;
            is_newest(b)
                .cmp(&is_newest(a))
                .then(b.updated_at.cmp(&a.updated_at))
                .then(a.id.cmp(&b.id))
        });
        for item in &items[keep..] {
            if store.delete_memory(&item.id).await? {
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// The writes that may sweep, each with what it tells [`Retained::after`]: every other
/// operation reaches the inner store untouched.
macro_rules! sweeping_writes {
    ($(
        fn $op:ident($($arg:ident: $ty:ty),*) -> $out:ty => $written:expr;
    )* also { $($also:item)* }) => {
        #[async_trait]
        impl<S: AgentMemory> LayeredStore for Retained<S> {
            type Inner = S;

            fn inner(&self) -> &S {
                &self.inner
            }

            $(
                async fn $op(&self, $($arg: $ty),*) -> Result<$out> {
                    let done = self.inner.$op($($arg),*).await?;
                    self.after($written).await;
                    Ok(done)
                }
            )*

            $($also)*
        }
    };
}

sweeping_writes! {
    fn save_session(id: &SessionId, history: &[Message], meta: &Metadata) -> ()
        => Written::Session(id);
    fn append(session: &SessionId, messages: &[Message]) -> () => Written::Session(session);
    fn compact(session: &SessionId, replacement: &[Message]) -> ArchiveInfo
        => Written::Session(session);
    fn replace_archive(session: &SessionId, archive: &ArchiveId, messages: &[Message])
        -> ArchiveInfo => Written::Other;
    also {
        /// Sweeps when there is a memory limit and the item stored is new to this handle.
        async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
            let stored = self.inner.put_memory(item).await?;
            self.after(Written::Memory(&stored.id)).await;
            Ok(stored)
        }

        /// The new session is the one that may be beyond `keep`.
        async fn fork(
            &self, source: &SessionId, target: &SessionId, at: Option<&MessageId>,
        ) -> Result<SessionInfo> {
            let info = self.inner.fork(source, target, at).await?;
            self.after(Written::Session(target)).await;
            Ok(info)
        }

        /// Sweeps only when `keep` counts per owner and the patch sets or clears the owner.
        async fn update_session(
            &self, session: &SessionId, patch: &SessionPatch,
        ) -> Result<SessionInfo> {
            let info = self.inner.update_session(session, patch).await?;
            self.after(Written::Labels(patch)).await;
            Ok(info)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{RetainLayer, Retained, Retention};
    use crate::{
        AgentMemoryExt, ErrorKind, InMemoryStore, MemoryFilter, MemoryItem, MemoryKind,
        MemoryScope, MemoryStore, Message, Metadata, RetentionPolicy, SessionId, SessionPatch,
        SessionStore,
    };

    fn sid(name: &str) -> SessionId {
        name.parse().expect("session id")
    }

    fn retained(policy: RetentionPolicy) -> Retained<crate::Layered<InMemoryStore>> {
        InMemoryStore::new().with_layer(RetainLayer::new(Retention::new(policy).expect("policy")))
    }

    /// Appends a user message saying `text` to session `session`.
    async fn say(store: &impl AgentMemoryExt, session: &str, text: &str) {
        store
            .append_one(&sid(session), Message::user(text))
            .await
            .expect("append");
    }

    async fn ids(store: &impl AgentMemoryExt) -> Vec<SessionId> {
        store.session_ids().await.expect("list")
    }

    #[tokio::test]
    async fn keep_is_enforced_by_every_write_that_makes_a_session() {
        let store = retained(RetentionPolicy {
            max_sessions: Some(2),
            ..RetentionPolicy::default()
        });
        say(&store, "a", "1").await;
        store
            .save_session(&sid("b"), &[Message::user("2")], &Metadata::new())
            .await
            .unwrap();
        assert_eq!(ids(&store).await, ["a", "b"]);
        // Writing an existing session deletes nothing.
        say(&store, "a", "3").await;
        assert_eq!(ids(&store).await, ["a", "b"]);
        // A fork makes a third: the least recently written (b) goes.
        store.fork(&sid("a"), &sid("c"), None).await.unwrap();
        assert_eq!(ids(&store).await, ["a", "c"]);
        // Through the inner store, nothing is enforced; the next new session sweeps.
        say(&*store, "d", "4").await;
        assert_eq!(ids(&store).await, ["a", "c", "d"]);
        say(&store, "e", "5").await;
        assert_eq!(ids(&store).await, ["d", "e"]);
    }

    #[tokio::test]
    async fn keep_per_owner_counts_each_owner_and_the_unowned() {
        let retention = Retention::new(RetentionPolicy {
            max_sessions: Some(1),
            ..RetentionPolicy::default()
        })
        .and_then(Retention::per_owner)
        .unwrap();
        let store = InMemoryStore::new().with_layer(RetainLayer::new(retention));
        for (name, owner) in [("a1", "ann"), ("b1", "bob"), ("a2", "ann")] {
            say(&store, name, name).await;
            store
                .update_session(&sid(name), &SessionPatch::default().owner(owner))
                .await
                .unwrap();
        }
        assert_eq!(ids(&store).await, ["a2", "b1"]);
        say(&store, "n1", "x").await;
        say(&store, "n2", "y").await;
        assert_eq!(
            ids(&store).await,
            ["a2", "b1", "n2"],
            "the unowned keep one"
        );
        // Moving a session to another owner counts it there.
        store
            .update_session(&sid("n2"), &SessionPatch::default().owner("bob"))
            .await
            .unwrap();
        assert_eq!(ids(&store).await, ["a2", "n2"]);
    }

    /// The texts of every memory item, sorted.
    async fn texts(store: &impl MemoryStore) -> Vec<String> {
        let mut texts: Vec<String> = store
            .list_memories(&MemoryFilter::default())
            .await
            .expect("list")
            .into_iter()
            .map(|item| item.text)
            .collect();
        texts.sort();
        texts
    }

    async fn put(store: &impl MemoryStore, text: &str, scope: MemoryScope) {
        let item = MemoryItem::new(MemoryKind::Fact, text).in_scope(scope);
        store.put_memory(&item).await.expect("put");
    }

    #[tokio::test]
    async fn keep_memories_counts_the_store_each_owner_or_each_agent() {
        let limit = |per: fn(Retention) -> crate::Result<Retention>| {
            let retention =
                Retention::with_memory_limit(RetentionPolicy::default(), Some(1)).unwrap();
            InMemoryStore::new().with_layer(RetainLayer::new(per(retention).unwrap()))
        };
        let alice = || MemoryScope::agent("alice");
        let bob = || MemoryScope::agent("bob");

        let store = limit(Ok);
        put(&store, "a1", alice()).await;
        put(&store, "b1", bob()).await;
        assert_eq!(texts(&store).await, ["b1"], "one item in the whole store");

        let store = limit(Retention::per_agent);
        put(&store, "a1", alice()).await;
        put(&store, "b1", bob()).await;
        put(&store, "a2", alice().with_owner("ann")).await;
        put(&store, "g1", MemoryScope::global()).await;
        put(&store, "g2", MemoryScope::global().with_owner("ann")).await;
        assert_eq!(
            texts(&store).await,
            ["a2", "b1", "g2"],
            "one per agent, the items of no agent as one more"
        );
        // Sessions are not counted per agent: none is deleted.
        for name in ["s1", "s2"] {
            say(&store, name, name).await;
        }
        assert_eq!(ids(&store).await, ["s1", "s2"]);

        let store = limit(Retention::per_owner);
        put(&store, "a1", alice().with_owner("ann")).await;
        put(&store, "b1", bob().with_owner("bob")).await;
        put(&store, "b2", alice().with_owner("bob")).await;
        put(&store, "n1", alice()).await;
        assert_eq!(texts(&store).await, ["a1", "b2", "n1"], "one per owner");
    }

    #[tokio::test]
    async fn rewriting_an_item_does_not_sweep_and_the_item_written_stays() {
        let retention = Retention::with_memory_limit(RetentionPolicy::default(), Some(1))
            .and_then(Retention::per_agent)
            .unwrap();
        let store = InMemoryStore::new().with_layer(RetainLayer::new(retention));
        let first = MemoryItem::new(MemoryKind::Fact, "first").in_scope(MemoryScope::agent("a"));
        store.put_memory(&first).await.unwrap();
        // Written through the inner store: over the limit until a new item is written.
        (*store)
            .put_memory(
                &MemoryItem::new(MemoryKind::Fact, "inner").in_scope(MemoryScope::agent("a")),
            )
            .await
            .unwrap();
        let mut again = first.clone();
        again.text = "first, again".into();
        store.put_memory(&again).await.unwrap();
        assert_eq!(texts(&store).await, ["first, again", "inner"]);
        put(&store, "new", MemoryScope::agent("a")).await;
        assert_eq!(texts(&store).await, ["new"]);
    }

    #[tokio::test]
    async fn age_limits_are_swept_by_writes_once_due() {
        let retention = Retention::new(RetentionPolicy {
            max_age: Some(Duration::from_millis(200)),
            max_memory_age: Some(Duration::from_millis(200)),
            ..RetentionPolicy::default()
        })
        .unwrap()
        .sweep_every(Duration::ZERO);
        let store = InMemoryStore::new().with_layer(RetainLayer::new(retention));
        say(&store, "old", "1").await;
        let item = MemoryItem::new(MemoryKind::Fact, "old fact");
        store.put_memory(&item).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A write of anything sweeps: the session and the item past the limit go.
        say(&store, "new", "2").await;
        assert_eq!(ids(&store).await, ["new"]);
        let items = store.list_memories(&MemoryFilter::default()).await.unwrap();
        assert!(items.is_empty(), "{items:?}");
    }

    #[tokio::test]
    async fn age_sweeps_wait_for_the_interval() {
        let retention = Retention::new(RetentionPolicy {
            max_age: Some(Duration::from_millis(100)),
            ..RetentionPolicy::default()
        })
        .unwrap()
        .sweep_every(Duration::from_secs(3600));
        let store = InMemoryStore::new().with_layer(RetainLayer::new(retention));
        say(&store, "old", "1").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        say(&store, "new", "2").await;
        assert_eq!(
            ids(&store).await,
            ["new", "old"],
            "the first write swept; the next waits"
        );
        assert_eq!(store.sweep().await.unwrap().sessions_deleted, 1);
        assert_eq!(ids(&store).await, ["new"]);
    }

    #[test]
    fn policies_that_would_delete_what_was_written_are_refused() {
        for policy in [
            RetentionPolicy::default(),
            RetentionPolicy {
                max_sessions: Some(0),
                ..RetentionPolicy::default()
            },
            RetentionPolicy {
                max_age: Some(Duration::ZERO),
                ..RetentionPolicy::default()
            },
            RetentionPolicy {
                max_memory_age: Some(Duration::ZERO),
                ..RetentionPolicy::default()
            },
        ] {
            let err = Retention::new(policy).expect_err("refused");
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{policy:?}");
        }
        let age_only = Retention::new(RetentionPolicy {
            max_age: Some(Duration::from_secs(1)),
            ..RetentionPolicy::default()
        })
        .unwrap();
        assert_eq!(
            age_only.clone().per_owner().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            age_only.per_agent().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            Retention::with_memory_limit(RetentionPolicy::default(), Some(0))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput
        );
        // Sessions record no agent: `keep` per agent is refused, not counted store-wide.
        let sessions_and_items = Retention::with_memory_limit(
            RetentionPolicy {
                max_sessions: Some(3),
                ..RetentionPolicy::default()
            },
            Some(3),
        )
        .unwrap();
        let err = sessions_and_items.per_agent().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("record no agent"), "{err}");
    }
}
