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
use crate::model::{ArchiveId, ArchiveInfo, MemoryItem, Message, Metadata, SessionInfo};
use crate::name::{MessageId, SessionId};
use crate::store::{AgentMemory, PurgeReport, RetentionPolicy, SessionStore};

/// How long a store with [`Retention`] waits at most between two sweeps for age limits, by
/// default: one minute.
pub const DEFAULT_SWEEP_EVERY: Duration = Duration::from_secs(60);

/// How many session ids a [`Retained`] store remembers having written; past that it forgets
/// them all (a forgotten id costs one extra sweep when written again).
const MAX_REMEMBERED_SESSIONS: usize = 16_384;

/// What a store keeps, enforced as it is written (see [`RetainLayer`]): a
/// [`RetentionPolicy`] (the limits of `purge --keep`, `--older-than` and
/// `--memories-older-than`), optionally counting `keep` per session owner.
///
/// From a store URL: `keep=N`, `retain=DURATION`, `retain_memories=DURATION`,
/// `keep_per=owner` and `retain_every=DURATION` (durations like `30d`, `12h` or `1d12h`; see
/// [`parse_duration`](crate::parse_duration)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    policy: RetentionPolicy,
    per_owner: bool,
    sweep_every: Duration,
}

impl Retention {
    /// Enforces `policy` as the store is written. `InvalidInput` for a policy that sets no
    /// limit, or would delete what was just written (`max_sessions` of 0, an age of zero).
    pub fn new(policy: RetentionPolicy) -> Result<Self> {
        if policy.max_sessions == Some(0) {
            return Err(Error::invalid_input(
                "retention keep=0 would delete the session just written; keep at least 1",
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
        {
            return Err(Error::invalid_input(
                "retention sets no limit: give keep, retain or retain_memories",
            ));
        }
        Ok(Retention {
            policy,
            per_owner: false,
            sweep_every: DEFAULT_SWEEP_EVERY,
        })
    }

    /// Counts `keep` ([`RetentionPolicy::max_sessions`]) per session owner: each owner keeps
    /// its newest sessions, and the sessions without an owner count as one more owner.
    /// `InvalidInput` when the policy has no `max_sessions`.
    pub fn per_owner(mut self) -> Result<Self> {
        if self.policy.max_sessions.is_none() {
            return Err(Error::invalid_input(
                "retention keep_per=owner needs keep=N: there is no count to apply per owner",
            ));
        }
        self.per_owner = true;
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

    /// Whether `keep` counts per session owner.
    pub fn is_per_owner(&self) -> bool {
        self.per_owner
    }

    /// The longest wait between two sweeps for age limits.
    pub fn sweep_interval(&self) -> Duration {
        self.sweep_every
    }
}

/// The layer that enforces a [`Retention`] as the store is written, on every backend.
///
/// After a write, the store sweeps (its own [`purge`](SessionStore::purge) with the policy,
/// which also takes expired sessions and memory items, and, per owner, deletes the oldest
/// sessions beyond `keep`) when:
/// - the write is the first this store handle makes to a session (it may have created one, so
///   `keep` is enforced at once: after it returns, the store holds at most `keep` sessions, or
///   per owner), or a label patch that may move a session to another owner; or
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
}

/// Why a write may need a sweep.
#[derive(Clone, Copy)]
enum Written<'a> {
    /// A session's messages: a sweep when this handle has not written it before.
    Session(&'a SessionId),
    /// A session's labels: a sweep when `keep` counts per owner and the owner may change.
    Labels(&'a SessionPatch),
    /// Anything else: a sweep when the last one is old enough.
    Other,
}

impl<S> Retained<S> {
    /// The store inside this layer.
    pub fn into_inner(self) -> S {
        self.inner
    }

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
                if state.written.len() >= MAX_REMEMBERED_SESSIONS {
                    state.written.clear();
                }
                self.retention.policy.max_sessions.is_some() && state.written.insert(id.clone())
            }
            Written::Labels(patch) => self.retention.per_owner && patch.owner.is_some(),
            Written::Other => false,
        };
        new_session
            || state
                .last
                .is_none_or(|last| last.elapsed() >= self.retention.sweep_every)
    }
}

impl<S> std::ops::Deref for Retained<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.inner
    }
}

impl<S: AgentMemory> Retained<S> {
    /// Sweeps now, whatever the time since the last sweep: what a write that is due does.
    pub async fn sweep(&self) -> Result<PurgeReport> {
        self.sweeps
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last = Some(Instant::now());
        let mut policy = self.retention.policy;
        let per_owner = self.retention.per_owner.then_some(policy.max_sessions);
        if per_owner.is_some() {
            policy.max_sessions = None;
        }
        let mut report = self.inner.purge(&policy).await?;
        if let Some(Some(keep)) = per_owner {
            report.sessions_deleted += keep_newest_per_owner(&self.inner, keep).await?;
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
    store: &S,
    keep: usize,
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
    fn put_memory(item: &MemoryItem) -> MemoryItem => Written::Other;
    also {
        /// The new session is the one that may be beyond `keep`.
        async fn fork(
            &self,
            source: &SessionId,
            target: &SessionId,
            at: Option<&MessageId>,
        ) -> Result<SessionInfo> {
            let info = self.inner.fork(source, target, at).await?;
            self.after(Written::Session(target)).await;
            Ok(info)
        }

        /// Sweeps only when `keep` counts per owner and the patch sets or clears the owner.
        async fn update_session(
            &self,
            session: &SessionId,
            patch: &SessionPatch,
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
        MemoryStore, Message, Metadata, RetentionPolicy, SessionId, SessionPatch, SessionStore,
    };

    fn sid(name: &str) -> SessionId {
        name.parse().expect("session id")
    }

    fn retained(policy: RetentionPolicy) -> Retained<crate::Layered<InMemoryStore>> {
        InMemoryStore::new().with_layer(RetainLayer::new(Retention::new(policy).expect("policy")))
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
        store
            .append_one(&sid("a"), Message::user("1"))
            .await
            .unwrap();
        store
            .save_session(&sid("b"), &[Message::user("2")], &Metadata::new())
            .await
            .unwrap();
        assert_eq!(ids(&store).await, ["a", "b"]);
        // Writing an existing session deletes nothing.
        store
            .append_one(&sid("a"), Message::user("3"))
            .await
            .unwrap();
        assert_eq!(ids(&store).await, ["a", "b"]);
        // A fork makes a third: the least recently written (b) goes.
        store.fork(&sid("a"), &sid("c"), None).await.unwrap();
        assert_eq!(ids(&store).await, ["a", "c"]);
        // Through the inner store, nothing is enforced; the next new session sweeps.
        (*store)
            .append_one(&sid("d"), Message::user("4"))
            .await
            .unwrap();
        assert_eq!(ids(&store).await, ["a", "c", "d"]);
        store
            .append_one(&sid("e"), Message::user("5"))
            .await
            .unwrap();
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
            store
                .append_one(&sid(name), Message::user(name))
                .await
                .unwrap();
            store
                .update_session(&sid(name), &SessionPatch::default().owner(owner))
                .await
                .unwrap();
        }
        assert_eq!(ids(&store).await, ["a2", "b1"]);
        store
            .append_one(&sid("n1"), Message::user("x"))
            .await
            .unwrap();
        store
            .append_one(&sid("n2"), Message::user("y"))
            .await
            .unwrap();
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
        store
            .append_one(&sid("old"), Message::user("1"))
            .await
            .unwrap();
        let item = MemoryItem::new(MemoryKind::Fact, "old fact");
        store.put_memory(&item).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A write of anything sweeps: the session and the item past the limit go.
        store
            .append_one(&sid("new"), Message::user("2"))
            .await
            .unwrap();
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
        store
            .append_one(&sid("old"), Message::user("1"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        store
            .append_one(&sid("new"), Message::user("2"))
            .await
            .unwrap();
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
            age_only.per_owner().unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
}
