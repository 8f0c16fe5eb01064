//! Ranked search with FTS5 and `bm25()`.
//!
//! The query is split into words by the same rule as every backend
//! ([`agentmem_core::search::query_words`]: letters and digits, lowercased); each word becomes
//! an FTS5 string (double-quoted, quotes doubled) and the words are joined with `OR`, so user
//! text never reaches FTS5 as syntax (`NEAR`, `*`, `-`, column filters) and any word matches.
//! The indexes use the `porter unicode61` tokenizer, which splits and case-folds text the same
//! way and indexes each word's Porter stem, as [`agentmem_core::search::stem`] computes it; it
//! stems the query's words too, so they are sent as they are (a stem stemmed again can
//! change), one per distinct stem.
//! `bm25()` is lower-is-better; scores are negated so higher is better, as the contract says.

use std::collections::HashSet;

use agentmem_core::search::{query_words, stem};
use agentmem_core::support::memory_search_limit;
use agentmem_core::{now, MemoryFilter, MemoryHit, MessageHit, MessageQuery, SessionId};
use rusqlite::types::ToSql;
use rusqlite::{params, Connection};

use crate::error::{corrupt, SqlResult};
use crate::memories;
use crate::rows::{self, RawMemory, MEMORY_COLUMNS, MESSAGE_COLUMNS};

/// The FTS5 `MATCH` expression for `query`, or `None` when it has no words (then nothing
/// matches, and no query is run).
///
/// ```
/// use agentmem_sqlite::match_expression;
/// assert_eq!(match_expression("GCP latency, NEAR(x)*").as_deref(), Some(r#""gcp" OR "latency" OR "near" OR "x""#));
/// assert_eq!(match_expression("adopted, adopting").as_deref(), Some(r#""adopted""#));
/// assert_eq!(match_expression("!!! ---"), None);
/// ```
pub fn match_expression(query: &str) -> Option<String> {
    let mut stems = HashSet::new();
    let words: Vec<String> = query_words(query)
        .into_iter()
        .filter(|w| stems.insert(stem(w).into_owned()))
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// Live messages of sessions not expired matching `query`, best first.
pub(crate) fn messages(
    conn: &mut Connection, query: &str, scope: &MessageQuery,
) -> SqlResult<Vec<MessageHit>> {
    let Some(expression) = match_expression(query).filter(|_| scope.limit > 0) else {
        return Ok(Vec::new());
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT s.name, bm25(agentmem_messages_fts), {MESSAGE_COLUMNS}
         FROM agentmem_messages_fts f
         JOIN agentmem_messages m ON m.id = f.rowid
         JOIN agentmem_sessions s ON s.id = m.session_id
         WHERE agentmem_messages_fts MATCH ?1 AND m.archive_id IS NULL
           AND (?2 IS NULL OR s.name = ?2)
           AND (s.expires_at IS NULL OR s.expires_at > ?4)
         ORDER BY 2, s.name, m.seq
         LIMIT ?3"
    ))?;
    let rows = stmt.query(params![
        expression,
        scope.session.as_ref().map(SessionId::as_str),
        rows::sql_int(scope.limit),
        rows::micros(now())
    ])?;
    rows::collect(rows, scope.limit, |row| {
        let name = row
            .get_ref(0)?
            .as_str()
            .map_err(|e| corrupt(format!("session name ({e})")))?;
        Ok(MessageHit {
            session: SessionId::new(name).map_err(|_| corrupt(format!("session name {name:?}")))?,
            score: -row.get::<_, f64>(1)?,
            message: rows::message(row, 2)?,
        })
    })
}

/// Memory items matching `query` that pass `filter` (kind, scope, not expired), best first (at
/// most `filter.limit`, default 10).
pub(crate) fn memories(
    conn: &mut Connection, query: &str, filter: &MemoryFilter,
) -> SqlResult<Vec<MemoryHit>> {
    let limit = memory_search_limit(filter);
    let Some(expression) = match_expression(query).filter(|_| limit > 0) else {
        return Ok(Vec::new());
    };
    let kind = filter.kind.map(|k| k.as_str());
    let limit = rows::sql_int(limit);
    let at = rows::micros(now());
    let scopes = filter.scope.stored_forms();
    let mut params: Vec<&dyn ToSql> = vec![&expression, &kind, &limit, &at];
    params.extend(scopes.iter().flatten().map(|s| s as &dyn ToSql));
    let raw = conn
        .prepare_cached(&format!(
            "SELECT bm25(agentmem_memories_fts), {MEMORY_COLUMNS}
             FROM agentmem_memories_fts f
             JOIN agentmem_memories m ON m.id = f.rowid
             WHERE agentmem_memories_fts MATCH ?1 AND (?2 IS NULL OR m.kind = ?2)
               AND {live}{in_scopes}
             ORDER BY 1, m.created_at, m.id
             LIMIT ?3",
            live = memories::live(4),
            in_scopes = memories::in_scopes(scopes.as_deref(), 5),
        ))?
        .query_map(params.as_slice(), |row| {
            Ok((row.get::<_, f64>(0)?, RawMemory::read(row, 1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter()
        .map(|(rank, item)| {
            Ok(MemoryHit {
                item: item.decode()?,
                score: -rank,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_never_becomes_fts_syntax() {
        // Stop words (`and`, `y`) are dropped from queries that have other words.
        assert_eq!(
            match_expression("title:x AND y* \"z\" -w ^v").as_deref(),
            Some(r#""title" OR "x" OR "z" OR "w" OR "v""#)
        );
        assert_eq!(
            match_expression("NEAR(kiwi mango) NOT lime*").as_deref(),
            Some(r#""near" OR "kiwi" OR "mango" OR "not" OR "lime""#)
        );
        assert_eq!(
            match_expression("Grüße 東京").as_deref(),
            Some(r#""grüße" OR "東京""#)
        );
        assert_eq!(match_expression("a a A").as_deref(), Some(r#""a""#));
        assert_eq!(match_expression(""), None);
    }
}
