// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`cases`]: crate::cases
//! [`cases::ALL`]: crate::cases::ALL
//! [`run_cases`]: crate::cases::run_cases
//! [`conformance_tests!`]: crate::conformance_tests
//! [`TestStore`]: crate::TestStore
//! [`PassThroughLayer`]: crate::PassThroughLayer
//! [`NamespaceGuard`]: crate::NamespaceGuard
//! [`ServerNamespace`]: crate::ServerNamespace
//! [`peak_memory`]: crate::peak_memory
//! [`tool_calls`]: crate::tool_calls
//! [`env_url`]: crate::env_url
//! [`unique_namespace`]: crate::unique_namespace
//! [`service_unavailable`]: crate::service_unavailable
//! [`services_required`]: crate::services_required
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "bench")]
pub mod bench;
pub mod cases;
pub mod embeddings;
pub mod fixtures;
mod guard;
pub mod pass_through;
pub mod peak_memory;
pub mod probe;
#[cfg(feature = "recall")]
pub mod recall;
pub mod servers;
#[cfg(feature = "bench")]
pub mod side_by_side;
pub mod tool_calls;

pub use guard::{NamespaceGuard, TestStore, CLEANUP_TIMEOUT};
pub use pass_through::{PassThrough, PassThroughLayer};
pub use servers::ServerNamespace;

/// Whether server-backed tests must run (`AGENTMEM_REQUIRE_SERVICES` set to anything but
/// empty, `0` or `false`). CI sets it, so an unreachable server fails the run instead of
/// skipping.
pub fn services_required() -> bool {
    match std::env::var("AGENTMEM_REQUIRE_SERVICES") {
        Ok(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no"
        ),
        Err(_) => false,
    }
}

/// Call when a test's server cannot be reached: panics when services are required,
/// otherwise prints why the test is skipped and returns `None`.
pub fn service_unavailable<T>(service: &str, url: &str, error: &dyn Display) -> Option<T> {
    let url = redact_url(url);
    if services_required() {
        panic!(
            "{service} at {url} is required (AGENTMEM_REQUIRE_SERVICES is set) but unavailable: {error}"
        );
    }
    eprintln!("SKIPPED: {service} at {url} is unavailable ({error}); set AGENTMEM_REQUIRE_SERVICES=1 to make this fail");
    None
}

/// `err` and its sources, outermost first, joined with ` / `: what a test searches for the
/// cause of a failure that a layer wrapped (a TLS handshake's rustls error, say).
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(" / ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The URL in environment variable `var`, read at run time, else `default`.
pub fn env_url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A namespace name unique to this test in this process and across concurrent processes:
/// `{prefix}_{pid}_{nanos}_{counter}`, lowercase ASCII letters, digits and `_`, at most 48
/// bytes, so it is valid as a Postgres schema, a MongoDB database, a Redis key prefix or a
/// folder name.
pub fn unique_namespace(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let prefix: String = prefix
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(16)
        .collect::<String>()
        .to_ascii_lowercase();
    format!("{prefix}_{}_{nanos}_{n}", std::process::id())
}

/// `url` with any password replaced by `***`, for messages and logs.
pub use agentmem_core::redact_url;

/// Deletes every session (with its archives) and every memory item in `store`, so a test on a
/// shared server leaves no data behind (the namespace's empty tables or keys stay).
pub async fn empty_store(store: &dyn agentmem_core::AgentMemory) -> agentmem_core::Result<()> {
    for session in store.list_sessions().await? {
        store.delete_session(&session.id).await?;
    }
    let everything = agentmem_core::MemoryFilter::default();
    for item in store.list_memories(&everything).await? {
        store.delete_memory(&item.id).await?;
    }
    Ok(())
}

/// The name of every conformance case, in the order [`conformance_tests!`] runs them: the
/// names of [`cases::ALL`], generated from the same list.
pub const CASES: &[&str] = cases::NAMES;

/// Generates one `#[tokio::test]` per conformance case for a store factory:
/// `async fn() -> Option<S>` where `S` derefs to `dyn AgentMemory` (a [`TestStore`] that
/// removes the test's namespace when dropped, or an `Arc<dyn AgentMemory>`), called once per
/// test (return `None` only through [`service_unavailable`]). The calling crate needs `tokio`
/// (with `macros` and `rt-multi-thread`) among its dev-dependencies.
///
/// The tests are generated from the list of cases that also makes [`cases::ALL`] and
/// [`CASES`]; `conformance_suite_is_complete` checks that the generated tests are the cases
/// of [`CASES`], in order. One more test, `conformance_through_a_pass_through_layer`, runs
/// every case again on stores wearing [`PassThroughLayer`] (a layer that overrides one
/// operation): a layer forwards every operation it does not override.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::__all_cases! { $crate::__conformance_tests ; $factory ; }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($factory:path ; $([$area:ident, $variant:ident, $doc:literal $(, needs $need:ident)?] { $($case:ident),* $(,)? })*) => {
        $($(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some(store) = $factory().await {
                    if $crate::cases::Area::$variant.applies_to(&*store) {
                        $crate::cases::$case(&*store).await;
                    }
                }
            }
        )*)*

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn conformance_through_a_pass_through_layer() {
            // One store first: a service that is not there is skipped once, not per case.
            let Some(probe) = $factory().await else {
                return;
            };
            drop(probe);
            let layer = $crate::PassThroughLayer::new();
            let wrap = &layer;
            let made = ::std::sync::atomic::AtomicUsize::new(0);
            let made = &made;
            $crate::cases::run_cases($crate::cases::ALL, || async move {
                let store = $factory().await?;
                made.fetch_add(1, ::std::sync::atomic::Ordering::Relaxed);
                Some(wrap.wrap(store))
            })
            .await;
            // Skipped stores (no server, services not required) make nothing to check.
            if made.load(::std::sync::atomic::Ordering::Relaxed) > 0 {
                assert!(layer.appends() > 0, "the cases ran without the layer in the way");
            }
        }

        #[test]
        fn conformance_suite_is_complete() {
            let generated: &[&str] = &[$($(stringify!($case)),*),*];
            assert_eq!(generated, $crate::CASES, "conformance_tests! must run exactly the cases in CASES");
        }
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::cases::{self, Area};
    use super::CASES;

    /// The registry, `CASES` and the areas agree, and each case is listed once. (That every
    /// case function is listed is checked by the compiler: see [`cases`].)
    #[test]
    fn registry_lists_every_case_once() {
        let names: Vec<&str> = cases::ALL.iter().map(|case| case.name).collect();
        assert_eq!(names, CASES, "CASES is the names of cases::ALL");
        let unique: BTreeSet<&str> = CASES.iter().copied().collect();
        assert_eq!(unique.len(), CASES.len(), "CASES lists a case twice");
        assert!(CASES.len() >= 45, "the suite has at least 45 cases");
        let by_area: Vec<&str> = Area::ALL
            .iter()
            .flat_map(|area| area.cases())
            .map(|case| case.name)
            .collect();
        assert_eq!(
            by_area, CASES,
            "the areas, in order, hold every case in order"
        );
        for area in Area::ALL {
            assert!(area.cases().count() > 0, "area {} has no case", area.name());
        }
        for name in CASES {
            assert_eq!(cases::find(name).map(|case| case.name), Some(*name));
        }
        assert!(cases::find("no_such_case").is_none());
    }

    #[test]
    fn areas_are_named_after_their_modules() {
        let names: Vec<&str> = Area::ALL.iter().map(|area| area.name()).collect();
        assert_eq!(
            names,
            [
                "round_trip",
                "sessions",
                "history",
                "concurrency",
                "compaction",
                "memories",
                "search",
                "fork",
                "labels",
                "expiry",
                "misc",
                "properties",
                "checkpoints",
                "graph",
                "vectors"
            ]
        );
    }
}
