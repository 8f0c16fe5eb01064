//! Stores and namespaces that clean up after a test: [`TestStore`] and [`NamespaceGuard`].
//!
//! A test on a shared server works in a namespace of its own (a Redis key prefix, a Postgres
//! schema, a MongoDB database, a temporary folder). The guard removes it when the test ends,
//! passed or failed (a panic drops it too), so runs leave nothing behind on the server.

use std::fmt::{self, Debug, Display};
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use agentmem_core::AgentMemory;
use futures_util::future::BoxFuture;

/// How long one cleanup may take before the guard gives up on it (and says so on stderr).
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a guard dropped by a failing test waits before its cleanups: the test's futures
/// were dropped mid-way, and requests they had already sent may still land on the server (and
/// recreate what the cleanup removed).
const SETTLE_AFTER_PANIC: Duration = Duration::from_secs(1);

type Cleanup = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), String>> + Send>;

/// What a guard does when dropped, in the order the steps were added.
enum Step {
    /// Runs a cleanup to its end; `what` names the namespace in a failure message.
    Run { what: String, cleanup: Cleanup },
    /// Drops a value, e.g. a `tempfile::TempDir`, which removes its folder.
    Keep(Box<dyn Send>),
}

/// Removes a test's namespace when dropped: runs the cleanups added with
/// [`on_drop`](Self::on_drop) and drops the values added with [`keep`](Self::keep), in the
/// order they were added. A cleanup that fails or times out is reported on stderr, never as a
/// panic (the guard may be dropped while a failing test unwinds; it then waits a moment first,
/// so requests the test had in flight land before the namespace is removed).
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
/// let guard = NamespaceGuard::new().on_drop("the test namespace", move || async move {
///     flag.store(true, std::sync::atomic::Ordering::SeqCst);
///     Ok::<(), String>(())
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
    /// is dropped (on a thread and runtime of its own, see [`NamespaceGuard`]). `what` names
    /// the namespace in the message printed when the cleanup fails.
    pub fn on_drop<F, Fut, E>(mut self, what: impl Into<String>, cleanup: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        let cleanup: Cleanup =
            Box::new(move || Box::pin(async move { cleanup().await.map_err(|e| e.to_string()) }));
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
        let cleans = self
            .steps
            .iter()
            .any(|step| matches!(step, Step::Run { .. }));
        if cleans && std::thread::panicking() {
            std::thread::sleep(SETTLE_AFTER_PANIC);
        }
        for step in self.steps.drain(..) {
            match step {
                Step::Keep(value) => drop(value),
                Step::Run { what, cleanup } => {
                    if let Err(why) = run_to_end(cleanup) {
                        eprintln!("agentmem-testkit: could not remove {what}: {why}");
                    }
                }
            }
        }
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
/// use agentmem_core::InMemory;
/// use agentmem_testkit::TestStore;
///
/// async fn store() -> Option<TestStore> {
///     // An `InMemory` is its own namespace: nothing to remove.
///     Some(TestStore::new(InMemory::new()).into_dyn())
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
        F: FnOnce() -> Fut + Send + 'static,
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

    /// Another handle on the store, e.g. for an API that takes `Arc<dyn AgentMemory>`. The
    /// namespace is still removed when this `TestStore` is dropped.
    pub fn arc(&self) -> Arc<S> {
        Arc::clone(&self.store)
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

    use agentmem_core::InMemory;

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn cleanups_run_in_order_after_the_store_is_dropped_even_on_a_blocked_runtime() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let weak = {
            let store = Arc::new(InMemory::new());
            let weak = Arc::downgrade(&store);
            let (first, second) = (log.clone(), log.clone());
            let probe = weak.clone();
            let guarded = TestStore::from_arc(store)
                .on_drop("first", move || async move {
                    let gone = probe.upgrade().is_none();
                    first
                        .lock()
                        .map_err(|e| e.to_string())?
                        .push(("first", gone));
                    Ok::<(), String>(())
                })
                .with_namespace(NamespaceGuard::new().on_drop("second", move || async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    second
                        .lock()
                        .map_err(|e| e.to_string())?
                        .push(("second", true));
                    Ok::<(), String>(())
                }));
            assert_eq!(guarded.backend(), "memory");
            weak
        };
        assert!(weak.upgrade().is_none());
        let log = log.lock().expect("the log lock");
        assert_eq!(*log, [("first", true), ("second", true)]);
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
                .on_drop("last", move || async move {
                    after.fetch_add(1, Ordering::SeqCst);
                    Ok::<(), String>(())
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
