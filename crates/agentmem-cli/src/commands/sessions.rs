//! Session commands: `sessions`, `show`, `append`, `search`, `compact`, `archives`, `delete`,
//! `purge`.

use std::io::Read;
use std::sync::Arc;

use agentmem::conversation::templates::summary_text;
use agentmem::conversation::{ExtractiveSummarizer, SummaryRequest};
use agentmem_core::{
    AgentMemory, AgentMemoryExt, Error, Message, MessageQuery, Result, RetentionPolicy, Role,
    SessionId, SessionInfo, SessionQuery, SessionStore,
};
use agentmem_formats::swarms::render_memory_md;
use serde_json::json;

use crate::cli::ShowFormat;
use crate::output::{count, printable, snippet, time, Output};

/// The summary length `compact --auto` asks for, in tokens.
const AUTO_SUMMARY_TOKENS: usize = 512;

/// How many sessions `sessions` asks the store for at a time.
const PAGE: usize = 1000;

fn missing(session: &SessionId) -> Error {
    Error::not_found(format!("session {:?} does not exist", session.as_str()))
}

/// `sessions`: id, message count, last update, expiry, owner, tags, title; only those of
/// `owner` and carrying every tag of `tags` when given. Reads every page of `find_sessions`.
pub async fn list(
    store: &Arc<dyn AgentMemory>, out: &mut Output, owner: Option<String>,
    tags: Vec<(String, String)>,
) -> Result<()> {
    let mut query = SessionQuery {
        owner,
        tags: tags.into_iter().collect(),
        ..SessionQuery::default()
    }
    .limit(PAGE);
    let mut sessions: Vec<SessionInfo> = Vec::new();
    loop {
        let page = store.find_sessions(&query).await?;
        sessions.extend(page.sessions);
        match page.next {
            // A store that hands back the cursor it was given would loop for ever.
            Some(next) if query.after.as_ref() != Some(&next) => query.after = Some(next),
            _ => break,
        }
    }
    let columns = [
        "SESSION", "MESSAGES", "UPDATED", "EXPIRES", "OWNER", "TAGS", "TITLE",
    ];
    out.listing(&sessions, &columns, |s| {
        vec![
            s.id.to_string(),
            s.message_count.to_string(),
            time(s.updated_at),
            s.expires_at.map(time).unwrap_or_default(),
            s.labels.owner.clone().unwrap_or_default(),
            tag_list(&s.labels.tags),
            s.labels
                .title
                .as_deref()
                .map(|t| snippet(t, 60))
                .unwrap_or_default(),
        ]
    })
}

/// Tags as `k=v,k2=v2`.
pub fn tag_list(tags: &std::collections::BTreeMap<String, String>) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes `header`, then each message as `show` prints it (`show`, and what `rewind` removed).
pub fn print_messages(out: &mut Output, header: String, messages: &[Message]) -> Result<()> {
    out.line(header)?;
    for m in messages {
        out.line(message_line(m))?;
    }
    Ok(())
}

/// One message as `show` prints it: time, role (with its tool pairing), content.
fn message_line(m: &Message) -> String {
    format!(
        "[{}] {}: {}",
        time(m.timestamp),
        role_label(m),
        printable(&m.content)
    )
}

/// How a message's role reads in text output, with its tool pairing.
fn role_label(m: &Message) -> String {
    match (&m.tool_call_id, &m.tool_name) {
        (Some(id), name) if m.is_tool_call() => {
            format!("{} [call {}#{id}]", m.role, name.as_deref().unwrap_or("?"))
        }
        (Some(id), name) => format!(
            "{} [result {}#{id}]",
            m.role,
            name.as_deref().unwrap_or("?")
        ),
        _ => m.role.to_string(),
    }
}

/// `show`: a session's messages as text, JSON or Swarms Markdown.
pub async fn show(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, limit: Option<usize>,
    format: ShowFormat,
) -> Result<()> {
    let loaded = store
        .load(session, limit)
        .await?
        .ok_or_else(|| missing(session))?;
    match (out.json(), format) {
        (true, _) | (_, ShowFormat::Json) => out.json_value(&loaded),
        (_, ShowFormat::Markdown) => out.text(&render_memory_md(
            session.as_str(),
            loaded.created_at,
            &loaded.messages,
        )),
        (_, ShowFormat::Text) => {
            let header = format!(
                "# {}: {} of {}, updated {}",
                session,
                loaded.messages.len(),
                count(loaded.total_messages, "message"),
                time(loaded.updated_at)
            );
            print_messages(out, header, &loaded.messages)
        }
    }
}

/// `append`: one message; `-` reads the text from standard input.
pub async fn append(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, role: &str, text: &str,
) -> Result<()> {
    let role = Role::parse(role)?;
    let content = if text == "-" {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf).map_err(|e| {
            Error::invalid_input("cannot read the message from standard input").with_source(e)
        })?;
        // `echo text | agentmem append …` ends with one newline that is not part of the text.
        if buf.ends_with('\n') {
            buf.pop();
            if buf.ends_with('\r') {
                buf.pop();
            }
        }
        buf
    } else {
        text.to_string()
    };
    let message = Message::new(role, content);
    store.append_one(session, message.clone()).await?;
    if out.json() {
        return out.json_value(&json!({"session": session, "message": message}));
    }
    out.line(format!("appended message {} to {}", message.id, session))
}

/// `search`: messages matching any word of `query`, best first.
pub async fn search(
    store: &Arc<dyn AgentMemory>, out: &mut Output, query: &str, session: Option<SessionId>,
    limit: usize,
) -> Result<()> {
    let hits = store
        .search_messages(query, &MessageQuery { session, limit })
        .await?;
    out.listing(&hits, &["SESSION", "SCORE", "TIME", "ROLE", "TEXT"], |h| {
        vec![
            h.session.to_string(),
            format!("{:.3}", h.score),
            time(h.message.timestamp),
            h.message.role.to_string(),
            snippet(&h.message.content, 80),
        ]
    })
}

/// `compact`: archive the session's messages, keep one summary system message.
pub async fn compact(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId, summary: Option<&str>,
    auto: bool,
) -> Result<()> {
    let summary = match summary {
        Some(s) if !auto => s.to_string(),
        _ => {
            let messages = store.messages(session).await?;
            if messages.is_empty() && !store.session_exists(session).await? {
                return Err(missing(session));
            }
            ExtractiveSummarizer::new()
                .summarize_now(&SummaryRequest::new(messages, AUTO_SUMMARY_TOKENS))
        }
    };
    let replacement = Message::system(summary_text(&summary));
    let info = store
        .compact(session, std::slice::from_ref(&replacement))
        .await?;
    if out.json() {
        return out.json_value(&json!({"archive": info, "summary": replacement}));
    }
    out.line(format!(
        "compacted {}: {} archived as {}, replaced by a summary",
        session,
        count(info.message_count, "message"),
        info.id
    ))
}

/// `archives`: a session's archives, oldest first.
pub async fn archives(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId,
) -> Result<()> {
    let archives = store.list_archives(session).await?;
    if archives.is_empty() && !store.session_exists(session).await? {
        return Err(missing(session));
    }
    out.listing(&archives, &["ARCHIVE", "CREATED", "MESSAGES"], |a| {
        vec![
            a.id.to_string(),
            time(a.created_at),
            a.message_count.to_string(),
        ]
    })
}

/// `delete`: a session with its archives.
pub async fn delete(
    store: &Arc<dyn AgentMemory>, out: &mut Output, session: &SessionId,
) -> Result<()> {
    if !store.delete_session(session).await? {
        return Err(missing(session));
    }
    if out.json() {
        return out.json_value(&json!({"deleted": session}));
    }
    out.line(format!("deleted session {session}"))
}

/// `purge`: what `policy` deletes (and every expired memory item).
pub async fn purge(
    store: &Arc<dyn AgentMemory>, out: &mut Output, policy: &RetentionPolicy,
) -> Result<()> {
    let report = store.purge(policy).await?;
    if out.json() {
        return out.json_value(&report);
    }
    out.line(format!(
        "purged {}, {}",
        count(report.sessions_deleted, "session"),
        count(report.memories_deleted, "memory item")
    ))
}
