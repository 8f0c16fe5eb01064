// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`cases`]: crate::cases
//! [`conformance_tests!`]: crate::conformance_tests
//! [`env_url`]: crate::env_url
//! [`unique_namespace`]: crate::unique_namespace
//! [`service_unavailable`]: crate::service_unavailable
//! [`services_required`]: crate::services_required
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod cases;
pub mod peak_memory;

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

/// The name of every conformance case, in the order the macro runs them. A test emitted by
/// [`conformance_tests!`] checks that the macro's list is exactly this one, and a unit test
/// checks that every public case in [`cases`] is here.
pub const CASES: &[&str] = &[
    // round trips
    "save_and_load_round_trip",
    "unicode_content_round_trips",
    "markdown_like_content_round_trips",
    "large_message_round_trips",
    "empty_content_round_trips",
    "message_fields_round_trip",
    "hostile_metadata_round_trips",
    "timestamps_round_trip_exactly",
    "invalid_records_are_rejected_whole",
    // sessions
    "missing_session_loads_as_none",
    "saving_empty_history_creates_empty_session",
    "appending_nothing_changes_nothing",
    "save_session_replaces_messages_and_metadata",
    "append_keeps_session_metadata",
    "list_sessions_ordered_by_id_with_counts",
    "updated_at_moves_forward_on_writes",
    "delete_session_removes_it_and_its_archives",
    "similar_names_do_not_collide",
    "invalid_names_are_rejected",
    // order and last-N windows
    "append_preserves_order",
    "last_n_returns_the_tail",
    "last_n_larger_than_session_returns_all",
    "last_n_zero_returns_no_messages",
    "last_n_never_starts_with_orphaned_tool_result",
    "total_messages_counts_the_whole_session",
    // concurrency
    "concurrent_appends_keep_each_task_order",
    "concurrent_batch_appends_stay_contiguous",
    "concurrent_appends_to_many_sessions_do_not_mix",
    "appends_racing_compaction_are_never_lost",
    // compaction
    "compact_moves_messages_to_archive",
    "compact_with_empty_replacement_leaves_empty_session",
    "archives_are_listed_oldest_first",
    "compactions_in_one_second_all_survive",
    "unknown_archive_is_not_found",
    "compact_missing_session_is_not_found",
    // memory items
    "memory_item_round_trips",
    "memory_item_timestamps_round_trip",
    "memory_delete_then_gone",
    "memory_upsert_by_id_replaces",
    "memory_upsert_by_kind_and_key_keeps_identity",
    "memory_same_key_other_kind_is_separate",
    "memory_list_filters_by_kind",
    "memory_list_limit_returns_newest_oldest_first",
    // search
    "search_memories_ranks_by_relevance",
    "search_memories_is_case_insensitive",
    "search_memories_matches_any_query_word",
    "search_finds_words_in_any_script",
    "search_memories_honours_limit",
    "search_memories_filters_by_kind",
    "search_without_words_returns_nothing",
    "search_messages_ranks_by_relevance",
    "search_messages_scoped_to_one_session",
    "search_messages_honours_limit",
    "search_follows_updates_and_deletes",
    // context, retention, schema
    "get_context_of_empty_store_is_empty",
    "get_context_with_query_lists_matching_items",
    "get_context_without_query_lists_recent_items",
    "purge_max_sessions_keeps_the_newest",
    "purge_max_age_of_an_hour_deletes_nothing",
    "purge_max_age_zero_deletes_everything_older",
    "schema_version_is_positive_and_stable",
    "backend_name_and_capabilities",
];

/// Generates one `#[tokio::test]` per conformance case for a store factory:
/// `async fn() -> Option<Arc<dyn AgentMemory>>`, called once per test (return `None` only
/// through [`service_unavailable`]). The calling crate needs `tokio` (with `macros` and
/// `rt-multi-thread`) among its dev-dependencies.
///
/// It also emits `conformance_suite_is_complete`, which fails if this list and [`CASES`]
/// ever disagree.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::__conformance_tests!(@emit $factory;
            // round trips
            save_and_load_round_trip,
            unicode_content_round_trips,
            markdown_like_content_round_trips,
            large_message_round_trips,
            empty_content_round_trips,
            message_fields_round_trip,
            hostile_metadata_round_trips,
            timestamps_round_trip_exactly,
            invalid_records_are_rejected_whole,
            // sessions
            missing_session_loads_as_none,
            saving_empty_history_creates_empty_session,
            appending_nothing_changes_nothing,
            save_session_replaces_messages_and_metadata,
            append_keeps_session_metadata,
            list_sessions_ordered_by_id_with_counts,
            updated_at_moves_forward_on_writes,
            delete_session_removes_it_and_its_archives,
            similar_names_do_not_collide,
            invalid_names_are_rejected,
            // order and last-N windows
            append_preserves_order,
            last_n_returns_the_tail,
            last_n_larger_than_session_returns_all,
            last_n_zero_returns_no_messages,
            last_n_never_starts_with_orphaned_tool_result,
            total_messages_counts_the_whole_session,
            // concurrency
            concurrent_appends_keep_each_task_order,
            concurrent_batch_appends_stay_contiguous,
            concurrent_appends_to_many_sessions_do_not_mix,
            appends_racing_compaction_are_never_lost,
            // compaction
            compact_moves_messages_to_archive,
            compact_with_empty_replacement_leaves_empty_session,
            archives_are_listed_oldest_first,
            compactions_in_one_second_all_survive,
            unknown_archive_is_not_found,
            compact_missing_session_is_not_found,
            // memory items
            memory_item_round_trips,
            memory_item_timestamps_round_trip,
            memory_delete_then_gone,
            memory_upsert_by_id_replaces,
            memory_upsert_by_kind_and_key_keeps_identity,
            memory_same_key_other_kind_is_separate,
            memory_list_filters_by_kind,
            memory_list_limit_returns_newest_oldest_first,
            // search
            search_memories_ranks_by_relevance,
            search_memories_is_case_insensitive,
            search_memories_matches_any_query_word,
            search_finds_words_in_any_script,
            search_memories_honours_limit,
            search_memories_filters_by_kind,
            search_without_words_returns_nothing,
            search_messages_ranks_by_relevance,
            search_messages_scoped_to_one_session,
            search_messages_honours_limit,
            search_follows_updates_and_deletes,
            // context, retention, schema
            get_context_of_empty_store_is_empty,
            get_context_with_query_lists_matching_items,
            get_context_without_query_lists_recent_items,
            purge_max_sessions_keeps_the_newest,
            purge_max_age_of_an_hour_deletes_nothing,
            purge_max_age_zero_deletes_everything_older,
            schema_version_is_positive_and_stable,
            backend_name_and_capabilities,
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

        #[test]
        fn conformance_suite_is_complete() {
            let generated: &[&str] = &[$(stringify!($case)),*];
            assert_eq!(generated, $crate::CASES, "conformance_tests! must run exactly the cases in CASES");
        }
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::CASES;

    /// The sources of every case module; a new module must be added here too.
    const CASE_SOURCES: &[&str] = &[
        include_str!("cases/compaction.rs"),
        include_str!("cases/concurrency.rs"),
        include_str!("cases/history.rs"),
        include_str!("cases/memories.rs"),
        include_str!("cases/misc.rs"),
        include_str!("cases/round_trip.rs"),
        include_str!("cases/search.rs"),
        include_str!("cases/sessions.rs"),
    ];

    /// Every `pub async fn name(store: &dyn AgentMemory)` in the case modules is listed in
    /// `CASES` (so the macro, checked against `CASES`, runs it), and `CASES` lists each once.
    #[test]
    fn every_case_is_listed() {
        let defined: BTreeSet<&str> = CASE_SOURCES
            .iter()
            .flat_map(|src| src.lines())
            .filter_map(|line| line.strip_prefix("pub async fn "))
            .filter(|rest| rest.contains("(store: &dyn AgentMemory)"))
            .filter_map(|rest| rest.split('(').next())
            .collect();
        let listed: BTreeSet<&str> = CASES.iter().copied().collect();
        assert_eq!(listed.len(), CASES.len(), "CASES lists a case twice");
        assert_eq!(
            defined, listed,
            "cases defined in src/cases/ and listed in CASES differ"
        );
        assert!(CASES.len() >= 45, "the suite has at least 45 cases");
    }

    #[test]
    fn every_case_module_is_scanned() {
        let modules = include_str!("cases.rs")
            .lines()
            .filter(|l| l.starts_with("mod "))
            .count();
        assert_eq!(
            modules,
            CASE_SOURCES.len(),
            "add the new case module to CASE_SOURCES"
        );
    }
}
