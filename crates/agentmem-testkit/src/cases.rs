//! The conformance cases, one public `async fn(&dyn AgentMemory)` each, grouped by area, and
//! their registry: [`ALL`] holds every [`Case`] (name, [`Area`], and a function that runs it on
//! any store), so a test can run any selection with [`run_cases`], e.g. every search case.
//!
//! Every case gets a fresh, empty store of its own and panics with a message naming the
//! violated rule. Cases never assert on elapsed time; where they need distinct `updated_at`
//! order they `pause` a few milliseconds between writes. They leave backends free in how they
//! rank and stem: a case asserts what must match and what must not, never that another form
//! of a word does not match.
//!
//! The list in `__all_cases!` (in this file) is the only list of the cases: it generates the
//! tests of [`conformance_tests!`](crate::conformance_tests), [`ALL`], [`Area`] and
//! [`CASES`](crate::CASES). The area modules are private and only that list re-exports their
//! cases, so a case left out of it is dead code, which this module denies: it fails the build.
#![deny(dead_code)]

use std::fmt::{self, Debug};
use std::future::Future;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use agentmem_core::{
    AgentMemory, ErrorKind, Message, MessageId, Metadata, Result, Session, SessionId, SessionInfo,
    SessionPatch,
};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};

mod checkpoints;
mod compaction;
mod concurrency;
mod expiry;
mod fork;
mod graph;
mod history;
mod labels;
mod memories;
mod misc;
mod properties;
mod round_trip;
mod search;
mod sessions;
mod vectors;

/// The one list of conformance cases, one section per area (a module of `src/cases/`), in the
/// order they run. Passes the sections to `$then!` after `$args`, each as
/// `[module, AreaVariant, "area doc"] { case, … }`, or with `, needs capability` after the doc
/// when the area's cases apply only to stores with that capability (see [`Area::applies_to`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __all_cases {
    ($then:path ; $($args:tt)*) => {
        $then! { $($args)*
            [round_trip, RoundTrip, "Round trips: messages come back exactly as written (content, fields, metadata, timestamps)."] {
                save_and_load_round_trip,
                unicode_content_round_trips,
                markdown_like_content_round_trips,
                large_message_round_trips,
                empty_content_round_trips,
                message_fields_round_trip,
                hostile_metadata_round_trips,
                timestamps_round_trip_exactly,
                invalid_records_are_rejected_whole,
            }
            [sessions, Sessions, "Sessions: missing and empty sessions, saving, listing, deleting, and names."] {
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
            }
            [history, History, "Order of appends, and last-N windows that keep tool calls with their results."] {
                append_preserves_order,
                last_n_returns_the_tail,
                last_n_larger_than_session_returns_all,
                last_n_zero_returns_no_messages,
                last_n_never_starts_with_orphaned_tool_result,
                last_n_keeps_parallel_tool_calls_whole,
                total_messages_counts_the_whole_session,
            }
            [concurrency, Concurrency, "Concurrent appends: nothing lost or duplicated, each task's order kept, batches contiguous, appends racing a compaction landing once."] {
                concurrent_appends_keep_each_task_order,
                concurrent_batch_appends_stay_contiguous,
                concurrent_appends_to_many_sessions_do_not_mix,
                appends_racing_compaction_are_never_lost,
            }
            [compaction, Compaction, "Compaction: archive plus replacement in one step, archive listing and lookup."] {
                compact_moves_messages_to_archive,
                compact_with_empty_replacement_leaves_empty_session,
                archives_are_listed_oldest_first,
                compactions_in_one_second_all_survive,
                unknown_archive_is_not_found,
                compact_missing_session_is_not_found,
                replace_archive_rewrites_one_archive_in_place,
            }
            [memories, Memories, "Memory items: put, get, list, delete, upserts by id and by (scope, kind, key), scopes and expiry."] {
                memory_item_round_trips,
                memory_item_timestamps_round_trip,
                memory_delete_then_gone,
                memory_upsert_by_id_replaces,
                memory_upsert_by_kind_and_key_keeps_identity,
                memory_same_key_other_kind_is_separate,
                memory_list_filters_by_kind,
                memory_list_limit_returns_newest_oldest_first,
                memory_scopes_keep_keys_apart,
                memory_list_filters_by_scope,
                expired_memories_are_gone,
                memory_revision_follows_every_change,
            }
            [search, Search, "Ranked search over memory items and messages: any query word or its inflections, case-insensitive, best first, within a limit."] {
                search_memories_ranks_by_relevance,
                search_memories_is_case_insensitive,
                search_memories_matches_any_query_word,
                search_finds_words_in_any_script,
                search_matches_inflected_words,
                search_memories_honours_limit,
                search_memories_filters_by_kind,
                search_memories_stays_in_scope,
                search_without_words_returns_nothing,
                search_messages_ranks_by_relevance,
                search_messages_scoped_to_one_session,
                search_messages_honours_limit,
                search_follows_updates_and_deletes,
            }
            [fork, Fork, "Fork and rewind: a copy of the history up to a message, and messages taken off the end, each in one atomic step."] {
                fork_copies_history_up_to_the_message,
                fork_without_message_copies_everything,
                fork_refuses_existing_target_and_unknown_message,
                rewind_last_removes_the_tail,
                rewind_after_message_keeps_it,
                rewind_refuses_missing_session_and_message,
                rewind_removes_messages_from_search,
            }
            [labels, Labels, "Session labels (title, owner, tags) and lookup by them, filtered and paged with a cursor."] {
                update_session_sets_and_removes_labels,
                labels_survive_writes,
                hostile_labels_match_literally,
                find_sessions_filters_by_owner_and_tags,
                find_sessions_pages_with_a_cursor,
                find_sessions_filters_by_update_time,
                invalid_labels_are_refused,
            }
            [expiry, Expiry, "Session expiry: gone for every reader at once, a fresh start on the next write, kept by writes, swept by purge."] {
                expired_session_is_gone_for_every_reader,
                session_expires_after_its_time_to_live,
                write_to_expired_session_starts_afresh,
                writes_keep_the_expiry_and_it_can_be_cleared,
                purge_sweeps_expired_sessions,
            }
            [misc, Misc, "Context for prompts, retention, schema version and capabilities: each optional data kind (checkpoints, a graph, vectors) kept or refused."] {
                get_context_of_empty_store_is_empty,
                get_context_with_query_lists_matching_items,
                get_context_without_query_lists_recent_items,
                purge_max_sessions_keeps_the_newest,
                purge_max_age_of_an_hour_deletes_nothing,
                purge_max_age_zero_deletes_everything_older,
                purge_deletes_expired_and_old_memories,
                schema_version_is_positive_and_stable,
                backend_name_and_capabilities,
                checkpoints_are_kept_or_refused,
                graph_is_kept_or_refused,
                vectors_are_kept_or_refused,
            }
            [properties, Properties, "Store properties: named values a store keeps about itself, read and compare-and-set, one winner of racing inserts."] {
                missing_store_property_is_none,
                store_property_is_compare_and_set,
                invalid_store_properties_are_refused,
                racing_store_property_inserts_have_one_winner,
            }
            [checkpoints, Checkpoints, "Checkpoints: graph state as LangGraph's savers keep it, stored byte for byte, listed newest first with filters before the limit, deleted, copied and pruned by thread or run.", needs checkpoints] {
                checkpoints_round_trip_byte_for_byte,
                checkpoint_threads_with_hostile_ids_stay_apart,
                latest_checkpoint_is_the_greatest_id,
                checkpoint_channel_values_are_kept_per_version,
                putting_a_checkpoint_again_replaces_it,
                checkpoint_writes_follow_langgraph_rules,
                checkpoint_listing_filters_before_the_limit,
                checkpoint_metadata_filters_compare_json_values,
                deleting_a_checkpoint_thread_removes_all_of_it,
                deleting_runs_removes_their_checkpoints,
                copying_a_checkpoint_thread_copies_all_of_it,
                pruning_checkpoints_keeps_the_latest_per_namespace,
                invalid_checkpoints_are_refused,
                concurrent_checkpoint_writers_lose_nothing,
            }
            [graph, Graph, "Knowledge graph: entities, relations and observations with the MCP reference memory server's duplicate, delete and search rules, in creation order, atomic under concurrent writers.", needs graph] {
                graph_entities_round_trip_in_order,
                creating_existing_entities_skips_them,
                relations_are_unique_and_may_dangle,
                adding_observations_skips_held_ones,
                adding_observations_to_a_missing_entity_applies_nothing,
                deleting_entities_removes_their_relations,
                deleted_graph_items_come_back_at_the_end,
                search_nodes_ignores_case_and_returns_touching_relations,
                open_nodes_takes_exact_names,
                hostile_graph_strings_round_trip,
                invalid_graph_input_is_refused,
                concurrent_graph_writers_lose_nothing,
                concurrent_creates_of_one_name_leave_one_entity,
            }
            [vectors, Vectors, "Embedding vectors: opaque bytes under 32-byte keys, stored byte for byte, replaced by key, deleted and cleared with exact counts, refused when malformed, safe under concurrent writers.", needs vectors] {
                vectors_round_trip_byte_for_byte,
                putting_a_vector_key_replaces_it,
                deleting_vectors_counts_what_went,
                a_full_vector_batch_round_trips,
                invalid_vectors_are_refused,
                concurrent_vector_writers_lose_nothing,
            }
        }
    };
}

/// Generates, from the list in `__all_cases!`: the public re-export of every case, [`Area`],
/// [`ALL`] and the names behind [`CASES`](crate::CASES).
#[doc(hidden)]
#[macro_export]
macro_rules! __case_registry {
    ($([$area:ident, $variant:ident, $doc:literal $(, needs $need:ident)?] { $($case:ident),* $(,)? })*) => {
        $(pub use self::$area::{$($case),*};)*

        /// An area of the suite: the cases of one module of `src/cases/`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Area {
            $(#[doc = $doc] $variant,)*
        }

        impl Area {
            /// Every area, in the order the suite runs them.
            pub const ALL: &'static [Area] = &[$(Area::$variant),*];

            /// The area's name, the name of its module in `src/cases/` (`"search"`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Area::$variant => stringify!($area),)*
                }
            }

            /// Whether the area's cases apply to `store`: an area about a data kind a store
            /// may lack (checkpoints, a graph, vectors) applies only where the store's
            /// capabilities say it keeps that kind. (Whether a store that lacks one refuses
            /// it properly is a case of [`Area::Misc`], run on every store.)
            pub fn applies_to(self, store: &dyn AgentMemory) -> bool {
                let capabilities = store.capabilities();
                match self {
                    $(Area::$variant => true $(&& capabilities.$need)?,)*
                }
            }
        }

        /// Every case, in the order [`conformance_tests!`](crate::conformance_tests) runs them.
        pub const ALL: &[Case] = &[$($(Case {
            name: stringify!($case),
            area: Area::$variant,
            run: |store| Box::pin($area::$case(store)),
        },)*)*];

        /// The names of [`ALL`], in order.
        pub(crate) const NAMES: &[&str] = &[$($(stringify!($case),)*)*];
    };
}

crate::__all_cases! { crate::__case_registry ; }

/// How a registered case runs: on any store, borrowed for the run.
type CaseFn = for<'a> fn(&'a dyn AgentMemory) -> BoxFuture<'a, ()>;

/// One conformance case: its name (the name of its function and of the test
/// [`conformance_tests!`](crate::conformance_tests) generates for it), its area, and a way to
/// run it on a store.
#[derive(Clone, Copy)]
pub struct Case {
    /// The case's name, e.g. `"search_memories_ranks_by_relevance"`.
    pub name: &'static str,
    /// The area the case belongs to.
    pub area: Area,
    run: CaseFn,
}

impl Case {
    /// Runs the case on `store`, which must be fresh and empty; panics on a violation. A case
    /// whose area does not apply to the store ([`Area::applies_to`]) passes without running.
    pub fn run<'a>(&self, store: &'a dyn AgentMemory) -> BoxFuture<'a, ()> {
        if self.area.applies_to(store) {
            (self.run)(store)
        } else {
            Box::pin(std::future::ready(()))
        }
    }
}

impl Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("area", &self.area)
            .finish_non_exhaustive()
    }
}

impl Area {
    /// The cases of this area, in the order they run.
    pub fn cases(self) -> impl Iterator<Item = &'static Case> {
        ALL.iter().filter(move |case| case.area == self)
    }
}

/// The case named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Case> {
    ALL.iter().find(|case| case.name == name)
}

/// How many selected cases [`run_cases`] runs at once.
const RUN_AT_ONCE: usize = 4;

/// Runs each of `cases` on a fresh store from `factory` (called once per case, as the
/// factory of [`conformance_tests!`](crate::conformance_tests)), a few at a time, then panics
/// naming every case that failed. A factory returning `None` (service unavailable, see
/// [`service_unavailable`](crate::service_unavailable)) skips the case.
///
/// One test that runs a selection, where `conformance_tests!` makes one test per case:
///
/// ```
/// use std::sync::Arc;
/// use agentmem_core::{AgentMemory, MemoryStore, SessionStore, InMemoryStore};
/// use agentmem_testkit::cases::{self, Area};
///
/// async fn store() -> Option<Arc<dyn AgentMemory>> {
///     Some(Arc::new(InMemoryStore::new()))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// cases::run_cases(Area::Search.cases(), store).await;
/// # });
/// ```
pub async fn run_cases<'c, F, Fut, S>(cases: impl IntoIterator<Item = &'c Case>, factory: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<S>>,
    S: Deref<Target = dyn AgentMemory>,
{
    let factory = &factory;
    let failed: Vec<String> = futures_util::stream::iter(cases)
        .map(|case| async move {
            let store = factory().await?;
            let outcome = AssertUnwindSafe(case.run(&*store)).catch_unwind().await;
            if outcome.is_err() {
                // As a failing `#[tokio::test]` would drop it, while its panic unwinds.
                crate::guard::drop_after_failure(store);
            } else {
                drop(store);
            }
            outcome.err().map(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                format!("{}: {why}", case.name)
            })
        })
        .buffer_unordered(RUN_AT_ONCE)
        .filter_map(std::future::ready)
        .collect()
        .await;
    assert!(
        failed.is_empty(),
        "{} conformance case(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// A session id the test knows to be valid.
pub(crate) fn sid(name: &str) -> SessionId {
    SessionId::new(name).unwrap_or_else(|e| panic!("test session id {name:?} must be valid: {e}"))
}

/// A message id the test knows to be valid.
pub(crate) fn mid(id: &str) -> MessageId {
    MessageId::new(id).unwrap_or_else(|e| panic!("test message id {id:?} must be valid: {e}"))
}

/// Metadata from a JSON object literal.
pub(crate) fn metadata(value: serde_json::Value) -> Metadata {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("test metadata must be a JSON object, got {other}"),
    }
}

/// Asserts that `result` failed with `kind`.
pub(crate) fn assert_kind<T: Debug>(result: Result<T>, kind: ErrorKind, what: &str) {
    match result {
        Ok(value) => panic!("{what}: expected a `{kind}` error, got Ok({value:?})"),
        Err(e) => assert_eq!(
            e.kind(),
            kind,
            "{what}: expected a `{kind}` error, got: {e}"
        ),
    }
}

/// Sleeps long enough that the next write gets a later timestamp than the previous one.
/// Ordering needs only distinct timestamps, so a few milliseconds suffice even on a
/// microsecond-precision backend.
pub(crate) async fn pause() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// Loads a session that must exist.
pub(crate) async fn load_some(
    store: &dyn AgentMemory, id: &SessionId, limit: Option<usize>, what: &str,
) -> Session {
    store
        .load(id, limit)
        .await
        .unwrap_or_else(|e| panic!("{what}: load({id}, {limit:?}) failed: {e}"))
        .unwrap_or_else(|| panic!("{what}: session {id} must exist, load returned None"))
}

/// The contents of `messages`, for readable assertion output.
pub(crate) fn contents(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

/// The ids of `messages`.
pub(crate) fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.id.as_str()).collect()
}

/// `n` user messages with contents `{prefix} 0`, `{prefix} 1`, …
pub(crate) fn numbered(prefix: &str, n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| Message::user(format!("{prefix} {i}")))
        .collect()
}

/// The first session `list_sessions` reports, which must exist.
pub(crate) async fn first_listed(store: &dyn AgentMemory, what: &str) -> SessionInfo {
    must::list_sessions(store)
        .await
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{what}: list_sessions listed no session"))
}

/// Asserts that session `id` does not exist: `load` returns `None`.
pub(crate) async fn assert_no_session(store: &dyn AgentMemory, id: &SessionId, what: &str) {
    let loaded = store
        .load(id, None)
        .await
        .unwrap_or_else(|e| panic!("{what}: load({id}) failed: {e}"));
    assert!(
        loaded.is_none(),
        "{what}: session {id} must not exist, load returned {loaded:?}"
    );
}

/// Asserts that the store lists no session.
pub(crate) async fn assert_no_sessions(store: &dyn AgentMemory, what: &str) {
    let listed = must::list_sessions(store).await;
    assert!(
        listed.is_empty(),
        "{what}: expected no sessions, got {listed:?}"
    );
}

/// Asserts that labelling session `id` (an owner) is refused as `NotFound`.
pub(crate) async fn assert_update_not_found(store: &dyn AgentMemory, id: &SessionId, what: &str) {
    let patch = SessionPatch::default().owner("x");
    assert_kind(
        store.update_session(id, &patch).await,
        ErrorKind::NotFound,
        what,
    );
}

/// Asserts that session `id` has no archives.
pub(crate) async fn assert_no_archives(store: &dyn AgentMemory, id: &SessionId, what: &str) {
    let archives = must::list_archives(store, id).await;
    assert!(
        archives.is_empty(),
        "{what}: expected no archives of {id}, got {archives:?}"
    );
}

/// Store calls a case needs to succeed (setup, or reads whose result it then checks): each
/// panics naming the call, and the session it was about, when the store returns an error.
pub(crate) mod must {
    use std::fmt;

    use agentmem_core::{
        AgentMemory, AgentMemoryExt, ArchiveInfo, MemoryFilter, MemoryHit, MemoryId, MemoryItem,
        MemoryKind, Message, MessageHit, MessageId, MessageQuery, Metadata, Result, Rewind,
        SessionId, SessionInfo, SessionPage, SessionPatch, SessionQuery,
    };

    /// The value of a call's `result`, or a panic naming the `call` and its error.
    fn ok<T>(result: Result<T>, call: fmt::Arguments<'_>) -> T {
        result.unwrap_or_else(|e| panic!("{call} failed: {e}"))
    }

    /// Writes one function a line: `fn name(args) -> Output = "panic", format args;` makes
    /// `name(store, args)`, which calls the store's method `name` with `args` and returns what
    /// it returns, or panics naming the call as the format string and arguments say.
    macro_rules! must_calls {
        ($(
            $(#[$doc:meta])*
            fn $name:ident($($arg:ident: $ty:ty),*) $(-> $out:ty)?
                = $call:literal $(, $call_arg:expr)*;
        )*) => {$(
            $(#[$doc])*
            pub(crate) async fn $name(store: &dyn AgentMemory, $($arg: $ty),*) $(-> $out)? {
                ok(store.$name($($arg),*).await, format_args!($call $(, $call_arg)*))
            }
        )*};
    }

    must_calls! {
        /// Appends `messages` to session `id`.
        fn append(id: &SessionId, messages: &[Message])
            = "append of {} message(s) to {id}", messages.len();
        /// Replaces session `id` with `messages` and `metadata`.
        fn save_session(id: &SessionId, messages: &[Message], metadata: &Metadata)
            = "save_session of {} message(s) to {id}", messages.len();
        /// Archives the messages of session `id`, leaving `replacement` in it.
        fn compact(id: &SessionId, replacement: &[Message]) -> ArchiveInfo = "compact of {id}";
        /// Changes the labels or expiry of session `id`, returning its summary.
        fn update_session(id: &SessionId, patch: &SessionPatch) -> SessionInfo
            = "update_session({id}, {patch:?})";
        /// The page of sessions `query` selects.
        fn find_sessions(query: &SessionQuery) -> SessionPage = "find_sessions({query:?})";
        /// Forks `source` (up to `at`) into `target`.
        fn fork(source: &SessionId, target: &SessionId, at: Option<&MessageId>) -> SessionInfo
            = "fork({source} -> {target}, at {at:?})";
        /// Rewinds session `id` to `to`, returning what was removed.
        fn rewind(id: &SessionId, to: &Rewind) -> Vec<Message> = "rewind({id}, {to:?})";
        /// Every session, as `list_sessions` reports them.
        fn list_sessions() -> Vec<SessionInfo> = "list_sessions";
        /// The archives of session `id`, as `list_archives` reports them.
        fn list_archives(id: &SessionId) -> Vec<ArchiveInfo> = "list_archives({id})";
        /// Stores a new memory item of `kind` with `text`.
        fn store_memory(kind: MemoryKind, text: &str) -> MemoryItem
            = "store_memory({kind:?}, {text:?})";
        /// Puts `item` (an insert or an upsert), returning the item as stored.
        fn put_memory(item: &MemoryItem) -> MemoryItem = "put_memory({:?})", item.text;
        /// The memory item stored under `id`, if there is one.
        fn get_memory(id: &MemoryId) -> Option<MemoryItem> = "get_memory({id})";
        /// The memory items `filter` selects, as `list_memories` reports them.
        fn list_memories(filter: &MemoryFilter) -> Vec<MemoryItem> = "list_memories({filter:?})";
        /// The memory items `filter` selects that `query` finds, best first.
        fn search_memories(query: &str, filter: &MemoryFilter) -> Vec<MemoryHit>
            = "search_memories({query:?})";
        /// The messages within `scope` that `query` finds, best first.
        fn search_messages(query: &str, scope: &MessageQuery) -> Vec<MessageHit>
            = "search_messages({query:?})";
    }

    /// Appends `messages` to session `id`, then changes its labels or expiry with `patch`,
    /// returning the summary `update_session` returns.
    pub(crate) async fn labelled_session(
        store: &dyn AgentMemory, id: &SessionId, messages: &[Message], patch: &SessionPatch,
    ) -> SessionInfo {
        append(store, id, messages).await;
        update_session(store, id, patch).await
    }

    /// Stores a new memory item of `kind` for each of `texts`, in order.
    pub(crate) async fn store_memories<T: AsRef<str>>(
        store: &dyn AgentMemory, kind: MemoryKind, texts: impl IntoIterator<Item = T>,
    ) -> Vec<MemoryItem> {
        let mut stored = Vec::new();
        for text in texts {
            stored.push(store_memory(store, kind, text.as_ref()).await);
        }
        stored
    }
}
