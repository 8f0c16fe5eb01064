//! The agentmem conformance suite (C1): behavioural cases every backend passes.
//!
//! Each case is a public `async fn(&dyn AgentMemory)` in [`cases`] that panics on a
//! violation. A backend runs all of them with one macro call in its `tests/` folder; the
//! factory is called once per test and must return a store in a namespace of its own
//! (a temp folder, a key prefix, a schema, a database), so the tests run in parallel.
//!
//! ```text
//! // crates/agentmem-redis/tests/conformance.rs
//! async fn store() -> Option<Arc<dyn AgentMemory>> {
//!     let url = agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379");
//!     match RedisMemory::connect(&url, &agentmem_testkit::unique_namespace("t")).await {
//!         Ok(store) => Some(Arc::new(store)),
//!         Err(e) => agentmem_testkit::service_unavailable("redis", &url, &e),
//!     }
//! }
//! agentmem_testkit::conformance_tests!(store);
//! ```
#![forbid(unsafe_code)]

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod cases;

/// Whether server-backed tests must run (`AGENTMEM_REQUIRE_SERVICES` set to anything but
/// empty, `0` or `false`). CI sets it, so an unreachable server fails the run instead of
/// skipping.
pub fn services_required() -> bool {
    match std::env::var("AGENTMEM_REQUIRE_SERVICES") {
        Ok(v) => !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no"),
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
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Generates one `#[tokio::test]` per conformance case for a store factory:
/// `async fn() -> Option<Arc<dyn AgentMemory>>`, called once per test (return `None` only
/// through [`service_unavailable`]). The calling crate needs `tokio` (with `macros` and
/// `rt-multi-thread`) among its dev-dependencies.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::__conformance_tests!(@emit $factory;
            save_and_load_round_trip,
            missing_session_loads_as_none,
            append_preserves_order,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    (@emit $factory:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some(store) = $factory().await {
                    $crate::cases::$case(&*store).await;
                }
            }
        )*
    };
}
