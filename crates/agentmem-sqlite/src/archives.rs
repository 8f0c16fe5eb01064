//! Compaction (archive + replace, in one transaction), rewriting one archive, and reading
//! archives back.

use std::collections::HashSet;

use agentmem_core::support::{archive_id_base, archive_not_found, free_archive_id};
use agentmem_core::{Archive, ArchiveId, ArchiveInfo, Message, SessionId};
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::{corrupt, SqlResult};
use crate::rows::{self, MESSAGE_COLUMNS};
use crate::sessions;
use crate::tx::Tx;

/// Moves the session's live messages into a new archive and makes `replacement` its live
/// messages, in one `IMMEDIATE` transaction: readers see the old state or the new one, and a
/// concurrent append commits wholly before (into the archive) or after (after the replacement).
pub(crate) fn compact(
    conn: &mut Connection, session: &SessionId, replacement: &[Message],
) -> SqlResult<ArchiveInfo> {
    let tx = Tx::immediate(conn)?;
    let now = agentmem_core::now();
    let row = sessions::find_live(&tx, session.as_str(), rows::micros(now))?
        .ok_or_else(|| sessions::not_found(session, "compacted"))?;
    let name = free_name(&tx, row.rowid, now)?;
    let id = ArchiveId::new(name.as_str())?;
    tx.prepare_cached(
        "INSERT INTO agentmem_archives (session_id, name, created_at, message_count)
         VALUES (?1, ?2, ?3, 0)",
    )?
    .execute(params![row.rowid, name, rows::micros(now)])?;
    let archive_rowid = tx.last_insert_rowid();
    // One set-based statement moves every live row into the archive.
    let moved = tx
        .prepare_cached(
            "UPDATE agentmem_messages SET archive_id = ?1 WHERE session_id = ?2 AND archive_id IS NULL",
        )?
        .execute(params![archive_rowid, row.rowid])?;
    tx.prepare_cached("UPDATE agentmem_archives SET message_count = ?2 WHERE id = ?1")?
        .execute(params![archive_rowid, rows::sql_int(moved)])?;
    sessions::replace_live(&tx, row.rowid, row.next_seq, replacement, rows::micros(now))?;
    tx.commit()?;
    Ok(ArchiveInfo {
        id,
        session: session.clone(),
        created_at: now,
        message_count: moved as u64,
    })
}

/// Replaces the messages of archive `archive` of `session` with `messages`, in one `IMMEDIATE`
/// transaction (readers see the old archive or the new one): its rows are deleted and the new
/// ones inserted into it, the full-text triggers following both. The archive keeps its row,
/// so its name, creation time and place among the session's archives; its count is the new
/// one. The new rows reuse the archive's own sequence numbers, in order, and take fresh ones
/// from the session's `next_seq` only for the messages past the old count, so a rewrite of
/// the same length (a re-encryption) leaves the session row untouched. `NotFound`, changing
/// nothing, when the session is missing or has expired or has no such archive.
pub(crate) fn replace(
    conn: &mut Connection, session: &SessionId, archive: &ArchiveId, messages: &[Message],
) -> SqlResult<ArchiveInfo> {
    let tx = Tx::immediate(conn)?;
    let now = rows::micros(agentmem_core::now());
    let row = sessions::find_live(&tx, session.as_str(), now)?
        .ok_or_else(|| archive_not_found(session, archive))?;
    let (archive_rowid, created): (i64, i64) = tx
        .prepare_cached(
            "SELECT id, created_at FROM agentmem_archives WHERE session_id = ?1 AND name = ?2",
        )?
        .query_row(params![row.rowid, archive.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?
        .ok_or_else(|| archive_not_found(session, archive))?;
    let old_seqs = tx
        .prepare_cached("SELECT seq FROM agentmem_messages WHERE archive_id = ?1 ORDER BY seq")?
        .query_map([archive_rowid], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    tx.prepare_cached("DELETE FROM agentmem_messages WHERE archive_id = ?1")?
        .execute([archive_rowid])?;
    let added = messages.len().saturating_sub(old_seqs.len());
    let seqs = old_seqs.iter().copied().chain(row.next_seq..);
    sessions::insert_rows_into(&tx, row.rowid, Some(archive_rowid), seqs, messages)?;
    if added > 0 {
        tx.prepare_cached("UPDATE agentmem_sessions SET next_seq = next_seq + ?2 WHERE id = ?1")?
            .execute(params![row.rowid, rows::sql_int(added)])?;
    }
    tx.prepare_cached("UPDATE agentmem_archives SET message_count = ?2 WHERE id = ?1")?
        .execute(params![archive_rowid, rows::sql_int(messages.len())])?;
    tx.commit()?;
    Ok(ArchiveInfo {
        id: archive.clone(),
        session: session.clone(),
        created_at: rows::time(created)?,
        message_count: messages.len() as u64,
    })
}

/// The name of a new archive of session `session_rowid` made at `at` (see
/// [`free_archive_id`]): `_2`, `_3`, … are added when compactions land in the same second.
fn free_name(conn: &Connection, session_rowid: i64, at: DateTime<Utc>) -> SqlResult<String> {
    let base = archive_id_base(at);
    let taken = conn
        .prepare_cached(
            "SELECT name FROM agentmem_archives
             WHERE session_id = ?1 AND substr(name, 1, length(?2)) = ?2",
        )?
        .query_map(params![session_rowid, base], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(free_archive_id(at, |candidate| taken.contains(candidate)))
}

/// The session's archives, oldest first (none when it is missing or has expired).
pub(crate) fn list(conn: &mut Connection, session: &SessionId) -> SqlResult<Vec<ArchiveInfo>> {
    let now = rows::micros(agentmem_core::now());
    let raw = conn
        .prepare_cached(
            "SELECT a.name, a.created_at, a.message_count
             FROM agentmem_archives a JOIN agentmem_sessions s ON s.id = a.session_id
             WHERE s.name = ?1 AND (s.expires_at IS NULL OR s.expires_at > ?2)
             ORDER BY a.created_at, a.id",
        )?
        .query_map(params![session.as_str(), now], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter()
        .map(|(name, created, count)| info(session, name, created, count))
        .collect()
}

/// One archive with its messages (`NotFound` when the session has expired).
pub(crate) fn load(
    conn: &mut Connection, session: &SessionId, archive: &ArchiveId,
) -> SqlResult<Archive> {
    let now = rows::micros(agentmem_core::now());
    let tx = Tx::deferred(conn)?;
    let found = tx
        .prepare_cached(
            "SELECT a.id, a.created_at, a.message_count
             FROM agentmem_archives a JOIN agentmem_sessions s ON s.id = a.session_id
             WHERE s.name = ?1 AND a.name = ?2 AND (s.expires_at IS NULL OR s.expires_at > ?3)",
        )?
        .query_row(params![session.as_str(), archive.as_str(), now], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    let Some((rowid, created, count)) = found else {
        return Err(archive_not_found(session, archive).into());
    };
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM agentmem_messages m WHERE m.archive_id = ?1 ORDER BY m.seq"
    ))?;
    let expected = usize::try_from(count).unwrap_or(0);
    let messages = rows::collect(stmt.query([rowid])?, expected, |row| rows::message(row, 0))?;
    drop(stmt);
    tx.commit()?;
    Ok(Archive {
        info: info(session, archive.as_str().to_string(), created, count)?,
        messages,
    })
}

fn info(session: &SessionId, name: String, created: i64, count: i64) -> SqlResult<ArchiveInfo> {
    Ok(ArchiveInfo {
        id: ArchiveId::new(name.as_str()).map_err(|_| corrupt(format!("archive id {name:?}")))?,
        session: session.clone(),
        created_at: rows::time(created)?,
        message_count: rows::count(count)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{check_fts, fts_hits, rows, with_session};

    fn hits(conn: &Connection, word: &str) -> i64 {
        fts_hits(conn, "agentmem_messages_fts", word)
    }

    fn seqs(conn: &Connection) -> Vec<(Option<i64>, i64)> {
        rows(
            conn,
            "SELECT archive_id, seq FROM agentmem_messages ORDER BY seq",
            [],
            |r| r.try_into(),
        )
    }

    #[test]
    fn replace_keeps_the_full_text_index_and_sequence_numbers_in_step() {
        let (mut conn, id) = with_session(&[Message::user("walrus"), Message::user("walrus two")]);
        let archive = compact(&mut conn, &id, &[Message::system("summary")]).unwrap();
        assert_eq!(seqs(&conn), [(Some(1), 1), (Some(1), 2), (None, 3)]);

        // Same length: the archive's own sequence numbers, the session row untouched.
        let same = [Message::user("narwhal"), Message::user("narwhal two")];
        let info = replace(&mut conn, &id, &archive.id, &same).unwrap();
        let mut expected = archive.clone();
        expected.message_count = 2;
        assert_eq!(info, expected);
        assert_eq!(seqs(&conn), [(Some(1), 1), (Some(1), 2), (None, 3)]);
        assert_eq!((hits(&conn, "walrus"), hits(&conn, "narwhal")), (0, 2));

        // Longer: fresh numbers past the session's `next_seq` for the extra message.
        let longer = [
            Message::user("a"),
            Message::user("b"),
            Message::user("orca"),
        ];
        replace(&mut conn, &id, &archive.id, &longer).unwrap();
        assert_eq!(
            seqs(&conn),
            [(Some(1), 1), (Some(1), 2), (None, 3), (Some(1), 4)]
        );
        assert_eq!((hits(&conn, "narwhal"), hits(&conn, "orca")), (0, 1));
        assert_eq!(load(&mut conn, &id, &archive.id).unwrap().messages, longer);
        sessions::append(&mut conn, "s", &[Message::user("after")]).unwrap();
        assert_eq!(seqs(&conn).last(), Some(&(None, 5)));

        // Shorter: the first numbers kept, the rest freed.
        replace(&mut conn, &id, &archive.id, &longer[2..]).unwrap();
        assert_eq!(seqs(&conn), [(Some(1), 1), (None, 3), (None, 5)]);
        assert_eq!(hits(&conn, "orca"), 1);
        check_fts(&conn, "agentmem_messages_fts");

        // A missing archive changes nothing and leaves no transaction open.
        let missing = ArchiveId::new("history_1999-01-01_00-00-00").unwrap();
        assert!(replace(&mut conn, &id, &missing, &same).is_err());
        assert!(conn.is_autocommit());
        assert_eq!(seqs(&conn), [(Some(1), 1), (None, 3), (None, 5)]);
    }
}
