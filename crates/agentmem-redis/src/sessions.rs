//! Sessions, their messages and archives, search over messages, and retention.

use agentmem_core::history::trim_orphans;
use agentmem_core::{
    now, Archive, ArchiveId, ArchiveInfo, Error, Message, MessageHit, MessageQuery, Metadata,
    PurgeReport, Result, RetentionPolicy, Session, SessionId, SessionInfo,
};
use chrono::{DateTime, Utc};
use redis::aio::ConnectionManager;

use crate::error::{corrupt_json, encode_json};
use crate::search::{index_entries, parse_score, query_terms};
use crate::store::RedisMemory;

/// How many sessions one purge script deletes before handing control back to the server.
const PURGE_BATCH: u32 = 128;

/// A timestamp as stored: microseconds since the epoch (the precision agentmem keeps).
pub(crate) fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// Reads a stored timestamp.
pub(crate) fn parse_micros(text: &str, what: &str) -> Result<DateTime<Utc>> {
    text.parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(|| Error::corrupt(format!("{what} {text:?} is not a timestamp")))
}

fn parse_messages(raw: Vec<Vec<u8>>) -> Result<Vec<Message>> {
    raw.iter()
        .map(|bytes| serde_json::from_slice(bytes).map_err(|e| corrupt_json("message", e)))
        .collect()
}

/// Encodes every message before anything is sent (the Validate layer has checked them).
fn encode_messages(messages: &[Message]) -> Result<Vec<String>> {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).map_err(|e| encode_json("a message", e)))
        .collect()
}

fn parse_session_id(text: String) -> Result<SessionId> {
    SessionId::new(text).map_err(|e| Error::corrupt(format!("stored session id is invalid: {e}")))
}

impl RedisMemory {
    pub(crate) async fn append_impl(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<()> {
        let encoded = encode_messages(messages)?;
        let mut inv = self.scripts.append.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(session.as_str())
            .arg(micros(now()))
            .arg(index_entries(messages.iter().map(|m| m.content.as_str())));
        for json in &encoded {
            inv.arg(json);
        }
        let _len: i64 = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(())
    }

    pub(crate) async fn save_session_impl(
        &self,
        session: &SessionId,
        history: &[Message],
        metadata: &Metadata,
    ) -> Result<()> {
        let encoded = encode_messages(history)?;
        let metadata =
            serde_json::to_string(metadata).map_err(|e| encode_json("session metadata", e))?;
        let mut inv = self.scripts.save.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(session.as_str())
            .arg(micros(now()))
            .arg(metadata)
            .arg(index_entries(history.iter().map(|m| m.content.as_str())));
        for json in &encoded {
            inv.arg(json);
        }
        let _: i64 = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(())
    }

    pub(crate) async fn load_impl(
        &self,
        session: &SessionId,
        limit: Option<usize>,
    ) -> Result<Option<Session>> {
        let meta = self.keys.meta(session);
        let msgs = self.keys.messages(session);
        // LRANGE takes inclusive indexes from the end; (1, 0) is an empty range.
        let (start, stop): (i64, i64) = match limit {
            None => (0, -1),
            Some(0) => (1, 0),
            Some(n) => (-(i64::try_from(n).unwrap_or(i64::MAX)), -1),
        };
        let mut pipe = redis::pipe();
        // MULTI/EXEC: the count and the window come from the same state.
        pipe.atomic()
            .cmd("HMGET")
            .arg(&meta)
            .arg("created")
            .arg("updated")
            .arg("metadata")
            .cmd("LLEN")
            .arg(&msgs)
            .cmd("LRANGE")
            .arg(&msgs)
            .arg(start)
            .arg(stop);
        type Reply = (Vec<Option<String>>, u64, Vec<Vec<u8>>);
        let (fields, total, raw): Reply = self
            .run(|mut c: ConnectionManager| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut c).await }
            })
            .await?;
        let mut fields = fields.into_iter();
        let (Some(created), updated, metadata) = (
            fields.next().flatten(),
            fields.next().flatten(),
            fields.next().flatten(),
        ) else {
            return Ok(None);
        };
        let created_at = parse_micros(&created, "creation time")?;
        let updated_at = match updated {
            Some(u) => parse_micros(&u, "update time")?,
            None => created_at,
        };
        let metadata: Metadata = match metadata {
            Some(json) => {
                serde_json::from_str(&json).map_err(|e| corrupt_json("session metadata", e))?
            }
            None => Metadata::new(),
        };
        let whole = raw.len() as u64 >= total;
        let messages = trim_orphans(parse_messages(raw)?, whole);
        Ok(Some(Session {
            id: session.clone(),
            messages,
            metadata,
            created_at,
            updated_at,
            total_messages: total,
        }))
    }

    pub(crate) async fn list_sessions_impl(&self) -> Result<Vec<SessionInfo>> {
        let mut inv = self.scripts.list_sessions.prepare_invoke();
        inv.arg(self.keys.prefix());
        let rows: Vec<(String, Option<String>, Option<String>, u64)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        let mut sessions = rows
            .into_iter()
            .map(|(id, created, updated, count)| {
                let created = created.ok_or_else(|| {
                    Error::corrupt(format!("session {id:?} is listed but has no meta"))
                })?;
                let created_at = parse_micros(&created, "creation time")?;
                let updated_at = match updated {
                    Some(u) => parse_micros(&u, "update time")?,
                    None => created_at,
                };
                Ok(SessionInfo {
                    id: parse_session_id(id)?,
                    message_count: count,
                    created_at,
                    updated_at,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(sessions)
    }

    pub(crate) async fn delete_session_impl(&self, session: &SessionId) -> Result<bool> {
        let mut inv = self.scripts.delete.prepare_invoke();
        inv.arg(self.keys.prefix()).arg(session.as_str());
        let deleted: i64 = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(deleted == 1)
    }

    pub(crate) async fn compact_impl(
        &self,
        session: &SessionId,
        replacement: &[Message],
    ) -> Result<ArchiveInfo> {
        let encoded = encode_messages(replacement)?;
        let at = now();
        let base = format!("history_{}", at.format("%Y-%m-%d_%H-%M-%S"));
        let mut inv = self.scripts.compact.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(session.as_str())
            .arg(micros(at))
            .arg(&base)
            .arg(index_entries(
                replacement.iter().map(|m| m.content.as_str()),
            ));
        for json in &encoded {
            inv.arg(json);
        }
        let archived: Option<(String, u64)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        let (id, count) = archived
            .ok_or_else(|| Error::not_found(format!("session `{session}` does not exist")))?;
        Ok(ArchiveInfo {
            id: ArchiveId::new(id)
                .map_err(|e| Error::corrupt(format!("new archive id is invalid: {e}")))?,
            session: session.clone(),
            created_at: at,
            message_count: count,
        })
    }

    pub(crate) async fn list_archives_impl(&self, session: &SessionId) -> Result<Vec<ArchiveInfo>> {
        let mut inv = self.scripts.list_archives.prepare_invoke();
        inv.arg(self.keys.prefix()).arg(session.as_str());
        let rows: Vec<(String, Option<String>, u64)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        rows.into_iter()
            .map(|(id, created, count)| {
                let created = created.ok_or_else(|| {
                    Error::corrupt(format!("archive {id:?} has no creation time"))
                })?;
                Ok(ArchiveInfo {
                    id: ArchiveId::new(id).map_err(|e| {
                        Error::corrupt(format!("stored archive id is invalid: {e}"))
                    })?,
                    session: session.clone(),
                    created_at: parse_micros(&created, "archive creation time")?,
                    message_count: count,
                })
            })
            .collect()
    }

    pub(crate) async fn load_archive_impl(
        &self,
        session: &SessionId,
        archive: &ArchiveId,
    ) -> Result<Archive> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HGET")
            .arg(self.keys.archive_info(session))
            .arg(archive.as_str())
            .cmd("LRANGE")
            .arg(self.keys.archive(session, archive))
            .arg(0)
            .arg(-1);
        let (created, raw): (Option<String>, Vec<Vec<u8>>) = self
            .run(|mut c: ConnectionManager| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut c).await }
            })
            .await?;
        let created = created.ok_or_else(|| {
            Error::not_found(format!(
                "archive `{archive}` of session `{session}` does not exist"
            ))
        })?;
        let messages = parse_messages(raw)?;
        Ok(Archive {
            info: ArchiveInfo {
                id: archive.clone(),
                session: session.clone(),
                created_at: parse_micros(&created, "archive creation time")?,
                message_count: messages.len() as u64,
            },
            messages,
        })
    }

    pub(crate) async fn search_messages_impl(
        &self,
        query: &str,
        scope: &MessageQuery,
    ) -> Result<Vec<MessageHit>> {
        let terms = query_terms(query);
        if terms.is_empty() || scope.limit == 0 {
            return Ok(Vec::new());
        }
        let mut inv = self.scripts.search_messages.prepare_invoke();
        inv.arg(self.keys.prefix())
            .arg(scope.session.as_ref().map_or("", SessionId::as_str))
            .arg(scope.limit.min(u32::MAX as usize));
        for term in &terms {
            inv.arg(term);
        }
        let rows: Vec<(String, Option<Vec<u8>>, String)> = self
            .run(|mut c: ConnectionManager| {
                let inv = &inv;
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        rows.into_iter()
            .map(|(session, json, score)| {
                let json = json.ok_or_else(|| {
                    Error::corrupt(format!(
                        "search index of session {session:?} points past its messages"
                    ))
                })?;
                Ok(MessageHit {
                    session: parse_session_id(session)?,
                    message: serde_json::from_slice(&json)
                        .map_err(|e| corrupt_json("message", e))?,
                    score: parse_score(&score).ok_or_else(|| {
                        Error::corrupt(format!("search score {score:?} is not a number"))
                    })?,
                })
            })
            .collect()
    }

    pub(crate) async fn purge_impl(&self, policy: &RetentionPolicy) -> Result<PurgeReport> {
        // An age too large for chrono reaches back before any possible write: keep all.
        let cutoff = policy
            .max_age
            .and_then(|age| chrono::Duration::from_std(age).ok())
            .and_then(|age| now().checked_sub_signed(age))
            .map(|t| micros(t).to_string());
        if cutoff.is_none() && policy.max_sessions.is_none() {
            return Ok(PurgeReport::default());
        }
        let cutoff = cutoff.unwrap_or_default();
        let max = policy
            .max_sessions
            .map(|n| n.to_string())
            .unwrap_or_default();
        let mut report = PurgeReport::default();
        loop {
            let mut inv = self.scripts.purge.prepare_invoke();
            inv.arg(self.keys.prefix())
                .arg(&cutoff)
                .arg(&max)
                .arg(PURGE_BATCH);
            let deleted: u64 = self
                .run(|mut c: ConnectionManager| {
                    let inv = &inv;
                    async move { inv.invoke_async(&mut c).await }
                })
                .await?;
            if deleted == 0 {
                return Ok(report);
            }
            report.sessions_deleted += deleted;
        }
    }
}
