//! Key names, built only from the validated prefix and validated names.
//!
//! The Lua scripts (`src/lua/prelude.lua`, `src/lua/memory.lua`) build the same names; the
//! layout is documented in the crate README. A session id can hold neither `:` nor a glob
//! character (agentmem-core's naming rules), and the prefix only ASCII letters, digits,
//! `_` and `-`, so `{prefix}:s:{session}:…` cannot collide across sessions or stores, and
//! nothing here is ever used as a `KEYS`/`SCAN` pattern: the store keeps its own indexes
//! (`{prefix}:sessions`, per-session archive lists) instead of scanning.

use agentmem_core::{ArchiveId, SessionId};

/// The key names of one store.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    /// Key names under `prefix`, which the caller has validated.
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// The prefix, passed to every script as `ARGV[1]`.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// String: the schema version of the data under the prefix.
    pub(crate) fn schema(&self) -> String {
        format!("{}:schema", self.prefix)
    }

    /// Hash: `created`, `updated` (microseconds since the epoch), `metadata` (JSON) and
    /// `words` (the word count of the current messages, for ranking).
    pub(crate) fn meta(&self, session: &SessionId) -> String {
        format!("{}:s:{}:meta", self.prefix, session.as_str())
    }

    /// List: the session's current messages, one JSON document each, oldest first.
    pub(crate) fn messages(&self, session: &SessionId) -> String {
        format!("{}:s:{}:msgs", self.prefix, session.as_str())
    }

    /// Hash: archive id → creation time (microseconds since the epoch).
    pub(crate) fn archive_info(&self, session: &SessionId) -> String {
        format!("{}:s:{}:ainfo", self.prefix, session.as_str())
    }

    /// List: one archive's messages, as they were before compaction.
    pub(crate) fn archive(&self, session: &SessionId, archive: &ArchiveId) -> String {
        format!(
            "{}:s:{}:a:{}",
            self.prefix,
            session.as_str(),
            archive.as_str()
        )
    }

    /// Hash: memory id → item JSON.
    pub(crate) fn memory_items(&self) -> String {
        format!("{}:mem:items", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_layout() {
        let keys = Keys::new("app");
        let s = SessionId::new("Research Agent@x").expect("valid id");
        let a = ArchiveId::new("history_2026-01-02_03-04-05_2").expect("valid id");
        assert_eq!(keys.schema(), "app:schema");
        assert_eq!(keys.meta(&s), "app:s:Research Agent@x:meta");
        assert_eq!(keys.messages(&s), "app:s:Research Agent@x:msgs");
        assert_eq!(keys.archive_info(&s), "app:s:Research Agent@x:ainfo");
        assert_eq!(
            keys.archive(&s, &a),
            "app:s:Research Agent@x:a:history_2026-01-02_03-04-05_2"
        );
        assert_eq!(keys.memory_items(), "app:mem:items");
    }
}
