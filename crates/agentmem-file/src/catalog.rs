//! The sessions of a root as a set: the session folders, a first pass over their sidecars
//! (without their locks), and the operations that go through many sessions (summaries,
//! conditional deletion for `delete_session` and `purge`, every message for search).

use agentmem_core::{
    now, Message, MessageQuery, Result, SessionId, SessionInfo, SessionLabels, SessionQuery,
};

use crate::fsutil::{io_error, list_dir, stat};
use crate::layout::{FORK_PREFIX, TRASH_PREFIX};
use crate::locking::blocking;
use crate::session::{remove_session_dir, Synced};
use crate::store::FileStore;

/// When [`FileStore::delete_one`] deletes, checked under the session's lock.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delete {
    /// In any case (`delete_session`, `max_sessions`).
    Always,
    /// When the session was last written before this time (`max_age`).
    OlderThan(chrono::DateTime<chrono::Utc>),
    /// When its expiry has passed.
    Expired,
}

/// Whether `labels` carry the owner and every tag `query` asks for (matched literally).
fn labels_match(query: &SessionQuery, labels: &SessionLabels) -> bool {
    query
        .owner
        .as_ref()
        .is_none_or(|owner| labels.owner.as_ref() == Some(owner))
        && query
            .tags
            .iter()
            .all(|(key, value)| labels.tags.get(key) == Some(value))
}

impl FileStore {
    /// The ids of the session folders, sorted.
    pub(crate) async fn session_ids(&self) -> Result<Vec<SessionId>> {
        let agents = self.inner.layout.agents.clone();
        blocking(move || {
            let mut ids = Vec::new();
            let Some(entries) = list_dir(&agents)? else {
                return Ok(ids);
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&agents, "cannot list", e))?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                match SessionId::new(name) {
                    Ok(id) => ids.push(id),
                    // Trash, forks being built and foreign folders are not sessions.
                    Err(_) if name.starts_with(TRASH_PREFIX) || name.starts_with(FORK_PREFIX) => {}
                    Err(e) => tracing::debug!(folder = name, error = %e, "skipping a folder that is not a session"),
                }
            }
            ids.sort();
            Ok(ids)
        })
        .await?
    }

    /// The summary of one session, `None` when it does not exist.
    pub(crate) async fn session_info(&self, id: &SessionId) -> Result<Option<SessionInfo>> {
        let session = id.clone();
        self.session_op(id, move |ctx, slot, f| {
            if let Synced::Missing = ctx.sync(slot, f)? {
                return Ok(None);
            }
            Ok(slot.info(&session))
        })
        .await
    }

    /// Deletes one session's folder when `when` still holds under its lock: renamed into the
    /// trash first, so a crash never leaves half a session (the next open finishes removing
    /// the trash).
    pub(crate) async fn delete_one(&self, id: &SessionId, when: Delete) -> Result<bool> {
        self.session_op(id, move |ctx, slot, f| {
            // Purge re-checks under the lock: a session written (or given a new expiry)
            // meanwhile is kept.
            match when {
                Delete::Always => {}
                Delete::OlderThan(cutoff) => match ctx.sync(slot, f)? {
                    Synced::Missing => return Ok(false),
                    _ => {
                        if slot.open.as_ref().is_some_and(|o| o.updated_at() >= cutoff) {
                            return Ok(false);
                        }
                    }
                },
                Delete::Expired => {
                    ctx.sync(slot, f)?;
                    if !slot.expired_now() {
                        return Ok(false);
                    }
                }
            }
            slot.forget();
            let dir = &ctx.paths.dir;
            if stat(dir)?.is_none() {
                return Ok(false);
            }
            // A folder with neither file (left by a crash right after its creation) held no
            // session: it is removed all the same, but reported as not existing.
            let existed = stat(&ctx.paths.log)?.is_some() || stat(&ctx.paths.md)?.is_some();
            remove_session_dir(dir)?;
            Ok(existed)
        })
        .await
    }

    /// The ids of the sessions whose sidecar (read without their locks: it is replaced
    /// atomically) lets them match `query`'s labels and the cursor, and has not expired.
    /// Only a first pass: the caller checks again under each session's lock.
    pub(crate) async fn candidates(&self, query: &SessionQuery) -> Result<Vec<SessionId>> {
        let ids = self.session_ids().await?;
        let layout = self.inner.layout.clone();
        let query = query.clone();
        blocking(move || {
            let at = now();
            let mut out = Vec::new();
            for id in ids {
                if query.after.as_ref().is_some_and(|after| id <= *after) {
                    continue;
                }
                let paths = layout.session(&id);
                // A sidecar that cannot be read is decided under the lock (with its error).
                if let Ok(cached) = crate::lifecycle::read(&paths.lifecycle) {
                    let data = cached.data;
                    if data.is_expired_at(at) || !labels_match(&query, &data.labels) {
                        continue;
                    }
                }
                out.push(id);
            }
            Ok(out)
        })
        .await?
    }

    /// The ids of the sessions whose sidecar (read without their locks) says they expired.
    pub(crate) async fn expired_sessions(&self) -> Result<Vec<SessionId>> {
        let ids = self.session_ids().await?;
        let layout = self.inner.layout.clone();
        blocking(move || {
            let at = now();
            Ok(ids
                .into_iter()
                .filter(|id| {
                    crate::lifecycle::read(&layout.session(id).lifecycle)
                        .is_ok_and(|c| c.data.is_expired_at(at))
                })
                .collect())
        })
        .await?
    }

    /// Every message of the sessions `scope` names (one, or all of them), with its session.
    pub(crate) async fn all_messages(
        &self, scope: &MessageQuery,
    ) -> Result<Vec<(SessionId, Message)>> {
        let ids = match &scope.session {
            Some(id) => vec![id.clone()],
            None => self.session_ids().await?,
        };
        let mut all = Vec::new();
        for id in ids {
            let messages = self
                .session_op(&id, |ctx, slot, f| {
                    Ok(ctx.load(slot, f)?.map(|(m, _)| m).unwrap_or_default())
                })
                .await?;
            all.extend(messages.into_iter().map(|m| (id.clone(), m)));
        }
        Ok(all)
    }
}
