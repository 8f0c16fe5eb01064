//! Forking a session: the copy is built whole in a folder beside it and renamed into place.

use std::io::Write;
use std::path::Path;

use agentmem_core::support::{fork_end, fork_target_exists};
use agentmem_core::{now, Error, MessageId, Result, SessionInfo};
use agentmem_formats::swarms::render_memory_md;

use super::{not_found, remove_session_dir, SessionCtx, SessionSlot, Synced};
use crate::fsutil::{create_dirs, io_error, stat, sync_dir};
use crate::layout::{fork_folder_name, MEMORY_MD, SESSION_LOG};
use crate::lifecycle::{encode, Lifecycle, LIFECYCLE_FILE};
use crate::log::{encode_log, SessionHeader};
use crate::repair::Findings;

/// Copies the messages of `source` up to and including `at` (all when `None`), its metadata
/// and labels into the new session `target` (no archives, no expiry), with both sessions'
/// locks held by the caller.
///
/// `Conflict` when `target` exists (and has not expired); `NotFound` when `source` does not,
/// or does not hold `at`. The target is built whole in a folder `agents/.fork-<random>-<id>`
/// (files fsynced, then the folder) and renamed into place, so a crash leaves no half target;
/// an expired target's folder is moved to the trash just before. A fork folder left by a crash
/// is removed when a store opens (see `root.rs`).
pub(crate) fn fork(
    source: &SessionCtx<'_>, source_slot: &mut SessionSlot, target: &SessionCtx<'_>,
    target_slot: &mut SessionSlot, at: Option<&MessageId>, f: &mut Findings,
) -> Result<SessionInfo> {
    if !matches!(target.sync(target_slot, f)?, Synced::Missing) {
        return Err(fork_target_exists(target.id));
    }
    let Some((mut messages, o)) = source.load(source_slot, f)? else {
        return Err(not_found(source.id));
    };
    let end = fork_end(&messages, source.id, at)?;
    messages.truncate(end);
    let mut header = SessionHeader::new(target.id, now());
    header.metadata = o.header.metadata.clone();
    let lifecycle = Lifecycle {
        labels: source_slot.lifecycle().labels,
        expires_at: None,
    };

    let dir = &target.paths.dir;
    let Some(agents) = dir.parent() else {
        return Err(Error::backend(format!("{} has no parent", dir.display())));
    };
    let building = agents.join(fork_folder_name(target.id));
    let result = (|| {
        create_dirs(&building)?;
        write_new(
            &building.join(SESSION_LOG),
            &encode_log(&header, &messages)?,
        )?;
        let text = render_memory_md(&header.conversation, header.memory_created, &messages);
        write_new(&building.join(MEMORY_MD), text.as_bytes())?;
        if !lifecycle.is_empty() {
            write_new(&building.join(LIFECYCLE_FILE), &encode(&lifecycle)?)?;
        }
        sync_dir(&building)?;
        target_slot.forget();
        if stat(dir)?.is_some() {
            // An expired session, or a folder holding no session (a crash right after its
            // creation): gone before the fork takes its place.
            remove_session_dir(dir)?;
        }
        std::fs::rename(&building, dir)
            .map_err(|e| io_error(dir, "cannot rename a fork into", e))?;
        sync_dir(agents)
    })();
    if result.is_err() {
        target_slot.forget();
        if stat(&building).ok().flatten().is_some() {
            let _ = std::fs::remove_dir_all(&building);
        }
    }
    result?;
    match target.sync(target_slot, f)? {
        Synced::Missing => Err(Error::backend(format!(
            "the fork `{}` vanished after it was written",
            target.id
        ))),
        _ => target_slot
            .info(target.id)
            .ok_or_else(|| Error::backend("session state missing after fork")),
    }
}

/// Writes a new file `path` whole (mode 0600) and fsyncs it.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(crate::fsutil::FILE_MODE)
        .open(path)
        .map_err(|e| io_error(path, "cannot create", e))?;
    file.write_all(bytes)
        .map_err(|e| io_error(path, "cannot write", e))?;
    file.sync_all()
        .map_err(|e| io_error(path, "cannot fsync", e))
}
