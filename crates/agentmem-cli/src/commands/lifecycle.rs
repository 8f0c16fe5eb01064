//! Session lifecycle commands: `fork`, `rewind`, `tag`, `expire`; and `rekey`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentmem::crypt::{rekey, MasterKey};
use agentmem_core::{
    AgentMemory, Error, MessageId, Result, Rewind, SessionId, SessionInfo, SessionPatch,
    SessionStore,
};
use serde_json::json;

use super::sessions::{print_messages, tag_list};
use crate::output::{count, store_totals, time, when_any, Output};

/// `fork`: copies `session` (up to and including `at`) into the new session `new`.
pub async fn fork(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, new: &SessionId,
    at: Option<&MessageId>,
) -> Result<()> {
    let info = store.fork(session, new, at).await?;
    if out.json() {
        return out.json_value(&info);
    }
    let upto = at
        .map(|id| format!(" up to message {id}"))
        .unwrap_or_default();
    out.line(format!(
        "forked {session} into {new}{upto}: {}",
        count(info.message_count, "message")
    ))
}

/// `rewind`: removes the last `last` messages, or every message after `to`, and prints them.
pub async fn rewind(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, last: Option<usize>,
    to: Option<MessageId>,
) -> Result<()> {
    let to = match (last, to) {
        (_, Some(id)) => Rewind::After(id),
        (Some(n), None) => Rewind::Last(n),
        (None, None) => {
            return Err(Error::invalid_input(
                "rewind needs --last N or --to MESSAGE_ID",
            ))
        }
    };
    let removed = store.rewind(session, &to).await?;
    if out.json() {
        return out.json_value(&json!({"session": session, "removed": removed}));
    }
    let header = format!(
        "# {session}: removed {}",
        count(removed.len() as u64, "message")
    );
    print_messages(out, header, &removed)
}

/// `tag`: sets the title, owner and tags in one `update_session`.
pub async fn tag(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, title: Option<String>,
    owner: Option<String>, tags: Vec<(String, String)>,
) -> Result<()> {
    let mut patch = SessionPatch::default();
    if let Some(title) = title {
        patch = patch.title(title);
    }
    if let Some(owner) = owner {
        patch = patch.owner(owner);
    }
    for (key, value) in tags {
        patch = patch.tag(key, value);
    }
    let info = store.update_session(session, &patch).await?;
    if out.json() {
        return out.json_value(&info);
    }
    out.line(format!("labelled {session}: {}", labels(&info)))
}

/// A session's labels for people: `owner ada, tags project=kyoto, title "Trip"`.
fn labels(info: &SessionInfo) -> String {
    let mut parts = Vec::new();
    if let Some(owner) = &info.labels.owner {
        parts.push(format!("owner {owner}"));
    }
    if !info.labels.tags.is_empty() {
        parts.push(format!("tags {}", tag_list(&info.labels.tags)));
    }
    if let Some(title) = &info.labels.title {
        parts.push(format!("title {title:?}"));
    }
    if parts.is_empty() {
        "no labels".to_string()
    } else {
        parts.join(", ")
    }
}

/// `expire`: the session expires `ttl` from now.
pub async fn expire(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, ttl: Duration,
) -> Result<()> {
    let info = store
        .update_session(session, &SessionPatch::default().expire_in(ttl))
        .await?;
    if out.json() {
        return out.json_value(&info);
    }
    match info.expires_at {
        Some(at) => out.line(format!("session {session} expires at {}", time(at))),
        None => out.line(format!("session {session} does not expire")),
    }
}

/// `rekey`: re-encrypts `raw` (the store without any key layer) from `old` to the key in
/// `new_key_file`.
pub async fn rekey_store(
    raw: Arc<dyn AgentMemory>, out: &mut Output, old: &MasterKey, new_key_file: &Path,
) -> Result<()> {
    let new = agentmem::key_from_file(new_key_file)?;
    let report = rekey(raw, old, &new).await?;
    if out.json() {
        return out.json_value(&report);
    }
    let threads = when_any(report.threads, || {
        format!(
            " and {} ({})",
            count(report.threads, "checkpoint thread"),
            count(report.checkpoints, "checkpoint")
        )
    });
    let graph = when_any(report.entities + report.relations, || {
        format!(
            " and the knowledge graph ({}, {})",
            count(report.entities, "entity"),
            count(report.relations, "relation")
        )
    });
    out.line(format!(
        "re-encrypted {}{threads}{graph} under key {} (was {})",
        store_totals(
            report.sessions,
            report.messages,
            report.archives,
            report.memories
        ),
        new.id(),
        old.id()
    ))
}
