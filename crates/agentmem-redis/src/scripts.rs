//! The Lua scripts behind every multi-key step, so each runs atomically on the server.
//!
//! Redis runs one script at a time, so a script sees and leaves a consistent state: an
//! append and its index entries, a compaction and the appends racing with it, a purge batch,
//! a memory item and its index entries, a checkpoint and its blobs, a batch of pending writes,
//! a knowledge-graph change with its indexes, the count and deletion of every vector.
//! `redis::Script` sends `EVALSHA` and loads the source once per server (again after a
//! restart empties the script cache; on a cluster `SCRIPT LOAD` goes to every node).
//! Every invocation is made by `Keys::invoke`, which passes the store's schema key as
//! `KEYS[1]`: a cluster client routes `EVALSHA` by its first key (a script without keys would
//! go to a random node), and every key a script builds shares that key's hash tag.

use redis::Script;

/// A script: `lua/shared.lua`, then the `$part`s in order (the shared heads of its kind,
/// then its own file).
macro_rules! script {
    ($($part:literal),+) => {
        Script::new(concat!(include_str!("lua/shared.lua"), $(include_str!($part)),+))
    };
}

macro_rules! session_script {
    ($file:literal) => {
        script!("lua/prelude.lua", $file)
    };
}

macro_rules! memory_script {
    ($file:literal) => {
        script!("lua/prelude.lua", "lua/memory.lua", $file)
    };
}

macro_rules! checkpoint_script {
    ($file:literal) => {
        script!("lua/checkpoint.lua", $file)
    };
}

macro_rules! graph_script {
    ($file:literal) => {
        script!("lua/graph.lua", $file)
    };
}

/// Every script, hashed once per store.
pub(crate) struct Scripts {
    pub(crate) append: Script,
    pub(crate) save: Script,
    pub(crate) compact: Script,
    pub(crate) replace_archive: Script,
    pub(crate) delete: Script,
    pub(crate) purge: Script,
    pub(crate) list_sessions: Script,
    pub(crate) list_archives: Script,
    pub(crate) search_messages: Script,
    pub(crate) fork: Script,
    pub(crate) rewind: Script,
    pub(crate) update: Script,
    pub(crate) find_sessions: Script,
    pub(crate) put_memory: Script,
    pub(crate) delete_memory: Script,
    pub(crate) list_memories: Script,
    pub(crate) search_memories: Script,
    pub(crate) purge_memories: Script,
    /// Compare-and-set of one store property (needs nothing of the prelude).
    pub(crate) set_property: Script,
    /// Checkpoints (on `lua/checkpoint.lua`, not the session prelude).
    pub(crate) cp_put: Script,
    pub(crate) cp_writes: Script,
    pub(crate) cp_get: Script,
    pub(crate) cp_list: Script,
    pub(crate) cp_threads: Script,
    pub(crate) cp_delete_thread: Script,
    pub(crate) cp_delete_runs: Script,
    pub(crate) cp_copy: Script,
    pub(crate) cp_prune: Script,
    /// The knowledge graph (on `lua/graph.lua`).
    pub(crate) graph_create_entities: Script,
    pub(crate) graph_create_relations: Script,
    pub(crate) graph_add_observations: Script,
    pub(crate) graph_delete_entities: Script,
    pub(crate) graph_delete_observations: Script,
    pub(crate) graph_delete_relations: Script,
    pub(crate) graph_read: Script,
    /// Counting and deleting every embedding vector (needs nothing of the prelude).
    pub(crate) vector_clear: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            append: session_script!("lua/append.lua"),
            save: session_script!("lua/save.lua"),
            compact: session_script!("lua/compact.lua"),
            replace_archive: session_script!("lua/replace_archive.lua"),
            delete: session_script!("lua/delete.lua"),
            purge: session_script!("lua/purge.lua"),
            list_sessions: session_script!("lua/list_sessions.lua"),
            list_archives: session_script!("lua/list_archives.lua"),
            search_messages: session_script!("lua/search_messages.lua"),
            fork: session_script!("lua/fork.lua"),
            rewind: session_script!("lua/rewind.lua"),
            update: session_script!("lua/update.lua"),
            find_sessions: session_script!("lua/find_sessions.lua"),
            put_memory: memory_script!("lua/put_memory.lua"),
            delete_memory: memory_script!("lua/delete_memory.lua"),
            list_memories: memory_script!("lua/list_memories.lua"),
            search_memories: memory_script!("lua/search_memories.lua"),
            purge_memories: memory_script!("lua/purge_memories.lua"),
            set_property: Script::new(include_str!("lua/set_property.lua")),
            cp_put: checkpoint_script!("lua/cp_put.lua"),
            cp_writes: checkpoint_script!("lua/cp_writes.lua"),
            cp_get: checkpoint_script!("lua/cp_get.lua"),
            cp_list: checkpoint_script!("lua/cp_list.lua"),
            cp_threads: checkpoint_script!("lua/cp_threads.lua"),
            cp_delete_thread: checkpoint_script!("lua/cp_delete_thread.lua"),
            cp_delete_runs: checkpoint_script!("lua/cp_delete_runs.lua"),
            cp_copy: checkpoint_script!("lua/cp_copy.lua"),
            cp_prune: checkpoint_script!("lua/cp_prune.lua"),
            graph_create_entities: graph_script!("lua/graph_create_entities.lua"),
            graph_create_relations: graph_script!("lua/graph_create_relations.lua"),
            graph_add_observations: graph_script!("lua/graph_add_observations.lua"),
            graph_delete_entities: graph_script!("lua/graph_delete_entities.lua"),
            graph_delete_observations: graph_script!("lua/graph_delete_observations.lua"),
            graph_delete_relations: graph_script!("lua/graph_delete_relations.lua"),
            graph_read: graph_script!("lua/graph_read.lua"),
            vector_clear: Script::new(include_str!("lua/vector_clear.lua")),
        }
    }
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scripts { .. }")
    }
}
