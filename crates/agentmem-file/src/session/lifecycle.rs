//! A session's labels and expiry, kept in its `lifecycle.json` sidecar (format in
//! `crate::lifecycle`): cached, replaced and removed under the session's lock.

use agentmem_core::{now, Error, ErrorKind, Result, SessionInfo, SessionPatch};

use super::{not_found, remove_session_dir, SessionCtx, SessionSlot, Synced};
use crate::fsutil::{remove_if_exists, stat, sync_dir, write_atomic};
use crate::lifecycle::{CachedLifecycle, Lifecycle, Stamp};
use crate::repair::{Aside, Findings};

impl SessionCtx<'_> {
    /// Brings the cached labels and expiry up to date with `lifecycle.json`: a `stat`, and a
    /// read when it changed (nothing under a lease: no other process wrote). A sidecar that
    /// does not read as one (cut off, not JSON, another shape, invalid UTF-8) is moved into
    /// the session's `quarantine/`, never deleted, and the session goes on unlabelled.
    pub(super) fn sync_lifecycle(&self, slot: &mut SessionSlot, f: &mut Findings) -> Result<()> {
        if slot.lease.is_some() && slot.open.is_some() && slot.lifecycle.is_some() {
            return Ok(());
        }
        let path = &self.paths.lifecycle;
        let stamp = stat(path)?.map(|m| Stamp::of(&m));
        if slot.lifecycle.as_ref().is_some_and(|c| c.stamp == stamp) {
            return Ok(());
        }
        slot.lifecycle = None;
        let cached = match crate::lifecycle::read(path) {
            Err(e) if e.kind() == ErrorKind::CorruptData => {
                let dir = &self.paths.dir;
                let moved = f.quarantine(self.id(), dir, path, Aside::WholeFile, &e)?;
                CachedLifecycle {
                    // Only checking: the sidecar stays, unread.
                    stamp: if moved.is_some() { None } else { stamp },
                    data: Lifecycle::default(),
                }
            }
            read => read?,
        };
        slot.lifecycle = Some(cached);
        Ok(())
    }

    /// Replaces the session's labels and expiry with `data` (the sidecar written atomically,
    /// or removed when `data` is empty).
    fn write_lifecycle(&self, slot: &mut SessionSlot, data: Lifecycle) -> Result<()> {
        let p = &self.paths;
        slot.lifecycle = None;
        let stamp = if data.is_empty() {
            if stat(&p.lifecycle)?.is_some() {
                remove_if_exists(&p.lifecycle)?;
                sync_dir(&p.dir)?;
            }
            None
        } else {
            write_atomic(&p.dir, &p.lifecycle, &crate::lifecycle::encode(&data)?)?;
            stat(&p.lifecycle)?.map(|m| Stamp::of(&m))
        };
        slot.lifecycle = Some(CachedLifecycle { stamp, data });
        Ok(())
    }

    /// Changes the session's labels and expiry as `patch` says; `NotFound` when it does not
    /// exist or has expired.
    pub(crate) fn update(
        &self, slot: &mut SessionSlot, patch: &SessionPatch, f: &mut Findings,
    ) -> Result<SessionInfo> {
        if let Synced::Missing = self.sync(slot, f)? {
            return Err(not_found(self.id));
        }
        let mut next = slot.lifecycle();
        patch.apply(&mut next.labels, &mut next.expires_at)?;
        self.write_lifecycle(slot, next)?;
        slot.info(self.id)
            .ok_or_else(|| Error::backend("session state missing after update"))
    }

    /// Before a session is created where `sync` found none: removes an expired session's
    /// folder (renamed into the trash first, as a deletion), or a sidecar without a log.
    pub(super) fn clear_for_create(&self, slot: &mut SessionSlot) -> Result<()> {
        let Some(cached) = slot.lifecycle.as_ref() else {
            return Ok(());
        };
        if cached.stamp.is_none() {
            return Ok(());
        }
        if cached.data.is_expired_at(now()) {
            slot.forget();
            remove_session_dir(&self.paths.dir)?;
        } else {
            remove_if_exists(&self.paths.lifecycle)?;
        }
        slot.lifecycle = Some(CachedLifecycle::default());
        Ok(())
    }
}
