//! Stores and namespaces that clean up after a test: [`TestStore`] and [`NamespaceGuard`].
//!
//! A test on a shared server works in a namespace of its own (a Redis key prefix, a Postgres
//! schema, a MongoDB database, a temporary folder). The guard removes it when the test ends,
//! passed or failed (a panic drops it too), so runs leave nothing behind on the server.

use std::cell::Cell;
use std::fmt::{self, Debug, Display};
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::AgentMemory;
use futures_util::future::BoxFuture;

/// How long one cleanup may take before the guard gives up on it (and says so on stderr).
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a guard dropped by a failing test waits before each of its two rounds of
/// cleanups: the test's futures were dropped mid-way, and requests they had already sent may
/// still land on the server (and bring back what the first round removed).
const SETTLE_AFTER_FAILURE: Duration = Duration::from_secs(1);

type Cleanup = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

thread_local! {
    /// Set while [`drop_after_failure`] drops a failed test's store on this thread.
    static AFTER_FAILURE: Cell<bool> = const { Cell::new(false) };
}

/// Drops `value` (a failed test's store or guard) as a panic would: its cleanups settle and
/// run twice. For runners that catch a test's panic before dropping its store.
pub(crate) fn drop_after_failure<T>(value: T) {
    AFTER_FAILURE.with(|flag| flag.set(true));
    drop(value);
    AFTER_FAILURE.with(|flag| flag.set(false));
}

/// What a guard does when dropped, in the order the steps were added.
enum Step {
    /// Runs a cleanup to its end; `what` names the namespace in a failure message.
    Run { what: String, cleanup: Cleanup },
    /// Drops a value, e.g. a `tempfile::TempDir`, which removes its folder.
    Keep(Box<dyn Send>),
}

/// Removes a test's namespace when dropped: runs the cleanups added with
/// [`on_drop`](Self::on_drop), in the order they were added, then drops the values added with
/// [`keep`](Self::keep). A cleanup that fails or times out is reported on stderr, never as a
/// panic (the guard may be dropped while a failing test unwinds).
///
/// A failing test may leave requests in flight (its futures dropped mid-way, the requests
/// already sent) that land after the cleanup and bring part of the namespace back. So a guard
/// dropped by a failing test (while its panic unwinds) waits a moment, runs its cleanups, waits
/// again and runs them a second time: a cleanup must be repeatable (removing what is already
/// gone is not an error).
///
/// Removal is often async (a query to the server) while `Drop` is not, and the guard may be
/// dropped on a runtime's worker thread, in a current-thread runtime, or outside any runtime.
/// So each cleanup runs to its end on a thread of its own with a small runtime of its own,
/// and the dropping thread waits for it (at most [`CLEANUP_TIMEOUT`]). A cleanup must
/// therefore not need the runtime that drops the guard: it opens its own connection, or hands
/// its work to a runtime that keeps running (e.g. a process-wide driver runtime).
///
/// ```
/// use agentmem_testkit::NamespaceGuard;
///
/// let removed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let flag = removed.clone();
/// let guard = NamespaceGuard::new().on_drop("the test namespace", move || {
///     let flag = flag.clone();
///     async move {
///         flag.store(true, std::sync::atomic::Ordering::SeqCst);
///         Ok::<(), String>(())
///     }
/// });
/// drop(guard);
/// assert!(removed.load(std::sync::atomic::Ordering::SeqCst));
/// ```
#[must_use = "the namespace is removed as soon as the guard is dropped"]
#[derive(Default)]
pub struct NamespaceGuard {
    steps: Vec<Step>,
}

impl NamespaceGuard {
    /// A guard with nothing to remove yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a cleanup: `cleanup()` is called, and its future run to its end, when the guard
    /// is dropped (on a thread and runtime of its own; twice after a failing test: see
    /// [`NamespaceGuard`]). `what` names the namespace in the message printed when the cleanup
    /// fails.
    pub fn on_drop<F, Fut, E>(mut self, what: impl Into<String>, cleanup: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        let cleanup: Cleanup = Arc::new(move || {
            let done = cleanup();
            Box::pin(async move { done.await.map_err(|e| e.to_string()) })
        });
        self.steps.push(Step::Run {
            what: what.into(),
            cleanup,
        });
        self
    }

    /// Keeps `value` alive until the guard is dropped, then drops it (e.g. a
    /// `tempfile::TempDir`, so the folder outlives the store that uses it).
    pub fn keep<T: Send + 'static>(mut self, value: T) -> Self {
        self.steps.push(Step::Keep(Box::new(value)));
        self
    }

    /// Adds `other`'s steps after this guard's.
    pub fn and(mut self, mut other: NamespaceGuard) -> Self {
        self.steps.append(&mut other.steps);
        self
    }
}

impl Debug for NamespaceGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps: Vec<&str> = self
            .steps
            .iter()
            .map(|step| match step {
                Step::Run { what, .. } => what.as_str(),
                Step::Keep(_) => "(a value kept alive)",
            })
            .collect();
        f.debug_struct("NamespaceGuard")
            .field("steps", &steps)
            .finish()
    }
}

impl Drop for NamespaceGuard {
    fn drop(&mut self) {
        let mut cleanups = Vec::new();
        let mut kept = Vec::new();
        for step in self.steps.drain(..) {
            match step {
                Step::Run { what, cleanup } => cleanups.push((what, cleanup)),
                Step::Keep(value) => kept.push(value),
            }
        }
        let failed = std::thread::panicking() || AFTER_FAILURE.with(Cell::get);
        let rounds = if failed && !cleanups.is_empty() { 2 } else { 1 };
        for round in 1..=rounds {
            if failed {
                std::thread::sleep(SETTLE_AFTER_FAILURE);
            }
            for (what, cleanup) in &cleanups {
                if let Err(why) = run_to_end(Arc::clone(cleanup)) {
                    eprintln!("agentmem-testkit: could not remove {what} (round {round}): {why}");
                }
            }
        }
        drop(kept);
    }
}

/// Runs `cleanup` on a new thread with a current-thread runtime, and waits for it.
fn run_to_end(cleanup: Cleanup) -> Result<(), String> {
    let thread = std::thread::Builder::new()
        .name("agentmem-testkit-cleanup".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("no runtime for the cleanup: {e}"))?;
            runtime.block_on(async {
                tokio::time::timeout(CLEANUP_TIMEOUT, cleanup())
                    .await
                    .map_err(|_| format!("timed out after {CLEANUP_TIMEOUT:?}"))?
            })
        })
        .map_err(|e| format!("cannot start the cleanup thread: {e}"))?;
    thread
        .join()
        .map_err(|_| "the cleanup panicked".to_string())?
}

/// A store for one test, with the guard that removes its namespace when the test drops it.
///
/// It derefs to the store, so `&*store` is what a case takes, and it is what a
/// [`conformance_tests!`](crate::conformance_tests) factory returns. The store is dropped
/// first, then the namespace removed. `S` is `dyn AgentMemory` by default; a test that needs
/// the backend's own methods keeps the concrete type and calls [`into_dyn`](Self::into_dyn)
/// where a `TestStore<dyn AgentMemory>` is wanted.
///
/// ```
/// use agentmem_core::InMemoryStore;
/// use agentmem_testkit::TestStore;
///
/// async fn store() -> Option<TestStore> {
///     // An `InMemoryStore` is its own namespace: nothing to remove.
///     Some(TestStore::new(InMemoryStore::new()).into_dyn())
/// }
/// ```
pub struct TestStore<S: ?Sized + 'static = dyn AgentMemory> {
    // Dropped in this order: the store, then its namespace.
    store: Arc<S>,
    namespace: NamespaceGuard,
}

impl<S: AgentMemory> TestStore<S> {
    /// `store`, with nothing to remove yet (add it with [`on_drop`](Self::on_drop),
    /// [`keep`](Self::keep) or [`with_namespace`](Self::with_namespace)).
    pub fn new(store: S) -> Self {
        Self::from_arc(Arc::new(store))
    }

    /// The same store and guard, with the store's type erased.
    pub fn into_dyn(self) -> TestStore {
        TestStore {
            store: self.store,
            namespace: self.namespace,
        }
    }
}

impl<S: ?Sized + 'static> TestStore<S> {
    /// A store already shared, with nothing to remove yet.
    pub fn from_arc(store: Arc<S>) -> Self {
        TestStore {
            store,
            namespace: NamespaceGuard::new(),
        }
    }

    /// Adds `guard`'s steps to this store's: they run when the store is dropped.
    pub fn with_namespace(mut self, guard: NamespaceGuard) -> Self {
        self.namespace = std::mem::take(&mut self.namespace).and(guard);
        self
    }

    /// Adds a cleanup, as [`NamespaceGuard::on_drop`].
    pub fn on_drop<F, Fut, E>(mut self, what: impl Into<String>, cleanup: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        self.namespace = std::mem::take(&mut self.namespace).on_drop(what, cleanup);
        self
    }

    /// Keeps `value` alive until after the store is dropped, as [`NamespaceGuard::keep`].
    pub fn keep<T: Send + 'static>(mut self, value: T) -> Self {
        self.namespace = std::mem::take(&mut self.namespace).keep(value);
        self
    }

    /// The store `map` makes of this one (a layer around it), under the same namespace guard:
    /// the namespace is removed after the new store is dropped.
    pub fn map(self, map: impl FnOnce(Arc<S>) -> Arc<dyn AgentMemory>) -> TestStore {
        TestStore {
            store: map(self.store),
            namespace: self.namespace,
        }
    }

    /// Another handle on the store, e.g. for an API that takes `Arc<dyn AgentMemory>`. The
    /// namespace is still removed when this `TestStore` is dropped.
    pub fn arc(&self) -> Arc<S> {
        Arc::clone(&self.store)
    }
}

/// A shared store with nothing to remove.
impl From<Arc<dyn AgentMemory>> for TestStore {
    fn from(store: Arc<dyn AgentMemory>) -> Self {
        TestStore::from_arc(store)
    }
}

impl<S: ?Sized + 'static> Deref for TestStore<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.store
    }
}

impl<S: ?Sized + Debug + 'static> Debug for TestStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestStore")
            .field("store", &&*self.store)
            .field("namespace", &self.namespace)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use agentmem_core::{InMemoryStore, SessionStore};

    use super::*;

    /// A cleanup that records `name` (and whether `probe` is gone) in `log`.
    fn record<T: Send + Sync + 'static>(
        log: &Arc<Mutex<Vec<(&'static str, bool)>>>, name: &'static str, probe: std::sync::Weak<T>,
    ) -> impl Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync + 'static {
        let log = log.clone();
        move || {
            let (log, gone) = (log.clone(), probe.upgrade().is_none());
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                log.lock().map_err(|e| e.to_string())?.push((name, gone));
                Ok(())
            })
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn cleanups_run_in_order_after_the_store_is_dropped_even_on_a_blocked_runtime() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let weak = {
            let store = Arc::new(InMemoryStore::new());
            let weak = Arc::downgrade(&store);
            let guarded = TestStore::from_arc(store)
                .on_drop("first", record(&log, "first", weak.clone()))
                .with_namespace(
                    NamespaceGuard::new().on_drop("second", record(&log, "second", weak.clone())),
                );
            assert_eq!(guarded.backend(), "in-memory");
            weak
        };
        assert!(weak.upgrade().is_none());
        let log = log.lock().expect("the log lock");
        assert_eq!(*log, [("first", true), ("second", true)]);
    }

    #[test]
    fn after_a_failure_the_cleanups_run_twice() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let guard = NamespaceGuard::new()
            .on_drop("first", record(&log, "first", std::sync::Weak::<()>::new()))
            .on_drop(
                "second",
                record(&log, "second", std::sync::Weak::<()>::new()),
            );
        drop_after_failure(guard);
        let twice = [
            ("first", true),
            ("second", true),
            ("first", true),
            ("second", true),
        ];
        assert_eq!(*log.lock().expect("the log lock"), twice);
        // Not on the next drop.
        drop(
            NamespaceGuard::new()
                .on_drop("third", record(&log, "third", std::sync::Weak::<()>::new())),
        );
        assert_eq!(log.lock().expect("the log lock").len(), 5);
    }

    #[test]
    fn a_failing_or_panicking_cleanup_does_not_panic_the_drop() {
        let ran = Arc::new(AtomicUsize::new(0));
        let after = ran.clone();
        drop(
            NamespaceGuard::new()
                .on_drop("failing", || async { Err::<(), _>("refused") })
                .on_drop("panicking", || async {
                    if true {
                        panic!("cleanup panics");
                    }
                    Ok::<(), String>(())
                })
                .on_drop("last", move || {
                    after.fetch_add(1, Ordering::SeqCst);
                    async { Ok::<(), String>(()) }
                }),
        );
        assert_eq!(ran.load(Ordering::SeqCst), 1, "later cleanups still run");
    }

    #[test]
    fn kept_values_live_until_the_guard_drops() {
        let value = Arc::new(());
        let guard = NamespaceGuard::new().keep(value.clone());
        assert_eq!(Arc::strong_count(&value), 2);
        drop(guard);
        assert_eq!(Arc::strong_count(&value), 1);
    }
}
