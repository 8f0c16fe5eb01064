//! Compaction and archives: reading back what the statements return. The operations are
//! the `AgentMemory` methods in `store.rs`.

use agentmem_core::support::{archive_not_found, stored_archive_id};
use agentmem_core::{Archive, ArchiveId, ArchiveInfo, Result, SessionId};
use tokio_postgres::Row;

use crate::codec::{count, get, numbered_messages};

/// A row of the `list_archives` statement, an archive of `session`.
pub(crate) fn archive_info(session: &SessionId, row: &Row) -> Result<ArchiveInfo> {
    Ok(ArchiveInfo {
        id: stored_archive_id(get::<String>(row, 0)?)?,
        session: session.clone(),
        created_at: get(row, 1)?,
        message_count: count(get(row, 2)?)?,
    })
}

/// The archive the `load_archive` statement read; `NotFound` when it returned no row.
pub(crate) fn archive_from(
    session: &SessionId, archive: &ArchiveId, rows: &[Row],
) -> Result<Archive> {
    let Some(first) = rows.first() else {
        return Err(archive_not_found(session, archive));
    };
    Ok(Archive {
        info: ArchiveInfo {
            id: archive.clone(),
            session: session.clone(),
            created_at: get(first, 0)?,
            message_count: count(get(first, 1)?)?,
        },
        messages: numbered_messages(rows, 2)?,
    })
}
