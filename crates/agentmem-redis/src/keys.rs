//! Key names, built only from the validated prefix and validated names.
//!
//! The Lua scripts (`src/lua/prelude.lua`, `src/lua/memory.lua`) build the same names; the
//! layout is documented in the crate README. A session id can hold neither `:` nor a glob
//! character (agentmem-core's naming rules), and the prefix only ASCII letters, digits,
//! `_` and `-`, so `{prefix}:s:{session}:…` cannot collide across sessions or stores, and
//! nothing here is ever used as a `KEYS`/`SCAN` pattern: the store keeps its own indexes
//! (`{prefix}:sessions`, per-session archive lists) instead of scanning.
//!
//! On a Redis Cluster every key starts with the prefix in braces, `{prefix}:…`: a hash tag, so
//! all keys of a store hash to one slot and every script, which builds its key names from the
//! root it is given, touches keys of that slot only. On a single server the root is the bare
//! prefix, as it always was.

use agentmem_core::{ArchiveId, SessionId};
use redis::{Script, ScriptInvocation};

/// The key names of one store.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
    /// What every key name starts with: the prefix, or on a cluster `{prefix}`.
    root: String,
    /// `{root}:schema`, made once: every script invocation names it.
    schema: String,
}

impl Keys {
    /// Key names under `prefix`, which the caller has validated; hash-tagged on a cluster.
    pub(crate) fn new(prefix: &str, cluster: bool) -> Self {
        let root = if cluster {
            format!("{{{prefix}}}")
        } else {
            prefix.to_string()
        };
        Keys {
            prefix: prefix.to_string(),
            schema: format!("{root}:schema"),
            root,
        }
    }

    /// The prefix, as the user gave it (for messages and `RedisStore::prefix`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// What every key name starts with, passed to every script as `ARGV[1]`.
    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// An invocation of `script` for this store: `KEYS[1]` is the schema key, so a cluster
    /// client routes it to the node of the store's slot (and the server knows the slot the
    /// script works in), and `ARGV[1]` is the [`root`](Self::root) the script builds its key
    /// names from.
    pub(crate) fn invoke<'s>(&self, script: &'s Script) -> ScriptInvocation<'s> {
        let mut inv = script.prepare_invoke();
        inv.key(&self.schema).arg(&self.root);
        inv
    }

    /// String: the schema version of the data under the prefix.
    pub(crate) fn schema(&self) -> String {
        self.schema.clone()
    }

    /// String: the token of the process migrating the data (`schema.rs`), with an expiry.
    pub(crate) fn migration_lock(&self) -> String {
        format!("{}:migrating", self.root)
    }

    /// Hash: `created`, `updated` (microseconds since the epoch), `metadata` (JSON) and
    /// `words` (the term count of the current messages, every occurrence, for ranking).
    pub(crate) fn meta(&self, session: &SessionId) -> String {
        format!("{}:s:{}:meta", self.root, session.as_str())
    }

    /// List: the session's current messages, one JSON document each, oldest first.
    pub(crate) fn messages(&self, session: &SessionId) -> String {
        format!("{}:s:{}:msgs", self.root, session.as_str())
    }

    /// Hash: archive id → creation time (microseconds since the epoch).
    pub(crate) fn archive_info(&self, session: &SessionId) -> String {
        format!("{}:s:{}:ainfo", self.root, session.as_str())
    }

    /// List: one archive's messages, as they were before compaction.
    pub(crate) fn archive(&self, session: &SessionId, archive: &ArchiveId) -> String {
        format!(
            "{}:s:{}:a:{}",
            self.root,
            session.as_str(),
            archive.as_str()
        )
    }

    /// Hash: store property name → value (`lua/set_property.lua` builds the same name).
    pub(crate) fn properties(&self) -> String {
        format!("{}:props", self.root)
    }

    /// Hash: memory id → item JSON.
    pub(crate) fn memory_items(&self) -> String {
        format!("{}:mem:items", self.root)
    }

    /// Hash: vector key (its 32 raw bytes) → the vector's bytes (`lua/vector_clear.lua`
    /// builds the same name).
    pub(crate) fn vectors(&self) -> String {
        format!("{}:vec", self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_layout() {
        let keys = Keys::new("app", false);
        let s = SessionId::new("Research Agent@x").expect("valid id");
        let a = ArchiveId::new("history_2026-01-02_03-04-05_2").expect("valid id");
        assert_eq!(keys.schema(), "app:schema");
        assert_eq!(keys.migration_lock(), "app:migrating");
        assert_eq!(keys.meta(&s), "app:s:Research Agent@x:meta");
        assert_eq!(keys.messages(&s), "app:s:Research Agent@x:msgs");
        assert_eq!(keys.archive_info(&s), "app:s:Research Agent@x:ainfo");
        assert_eq!(
            keys.archive(&s, &a),
            "app:s:Research Agent@x:a:history_2026-01-02_03-04-05_2"
        );
        assert_eq!(keys.memory_items(), "app:mem:items");
        assert_eq!(keys.vectors(), "app:vec");
        assert_eq!(keys.root(), "app");
    }

    #[test]
    fn cluster_names_share_one_hash_tag() {
        let keys = Keys::new("app", true);
        let s = SessionId::new("Research Agent@x").expect("valid id");
        assert_eq!(keys.prefix(), "app");
        assert_eq!(keys.root(), "{app}");
        assert_eq!(keys.schema(), "{app}:schema");
        assert_eq!(keys.migration_lock(), "{app}:migrating");
        // Names hold no braces (agentmem-core's naming rules), so `{app}` is the only tag.
        assert_eq!(keys.meta(&s), "{app}:s:Research Agent@x:meta");
        assert_eq!(keys.memory_items(), "{app}:mem:items");
        assert_eq!(keys.vectors(), "{app}:vec");
    }
}
