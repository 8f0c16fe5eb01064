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
    ($($part:expr),+) => {
        Script::new(concat!(include_str!("lua/shared.lua"), $(include_str!($part)),+))
    };
}

macro_rules! session_script {
    ($file:expr) => {
        script!("lua/prelude.lua", $file)
    };
}

macro_rules! memory_script {
    ($file:expr) => {
        script!("lua/prelude.lua", "lua/memory.lua", $file)
    };
}

macro_rules! checkpoint_script {
    ($file:expr) => {
        script!("lua/checkpoint.lua", $file)
    };
}

macro_rules! graph_script {
    ($file:expr) => {
        script!("lua/graph.lua", $file)
    };
}

/// A script that needs nothing of `lua/shared.lua` or a head: its own file alone.
macro_rules! bare_script {
    ($file:expr) => {
        Script::new(include_str!($file))
    };
}

/// [`Scripts`] from one table: each script is a field named as its file, `lua/<name>.lua`,
/// built by the macro of its kind (which adds the shared heads).
macro_rules! scripts {
    ($($kind:ident { $($name:ident),+ $(,)? })+) => {
        /// Every script, hashed once per store.
        pub(crate) struct Scripts {
            $($(pub(crate) $name: Script,)+)+
        }

        impl Scripts {
            pub(crate) fn new() -> Self {
                Scripts {
                    $($($name: $kind!(concat!("lua/", stringify!($name), ".lua")),)+)+
                }
            }
        }
    };
}

scripts! {
    session_script {
        append, save, compact, replace_archive, delete, purge, list_sessions, list_archives,
        search_messages, fork, rewind, update, find_sessions,
    }
    memory_script { put_memory, delete_memory, list_memories, search_memories, purge_memories }
    // Checkpoints, on `lua/checkpoint.lua` rather than the session prelude.
    checkpoint_script {
        cp_put, cp_writes, cp_get, cp_list, cp_threads, cp_delete_thread, cp_delete_runs,
        cp_copy, cp_prune,
    }
    // The knowledge graph.
    graph_script {
        graph_create_entities, graph_create_relations, graph_add_observations,
        graph_delete_entities, graph_delete_observations, graph_delete_relations, graph_read,
    }
    // Compare-and-set of one store property; counting and deleting every embedding vector.
    bare_script { set_property, vector_clear }
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scripts { .. }")
    }
}
