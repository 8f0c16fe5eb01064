//! Search by meaning and the vectors behind it: `search --mode`, `memories --search`,
//! `reindex`, and the index lag `doctor` shows. The embedder is the one the store URL names
//! (`embedder=local`, `embedder=http&embed_url=…&embed_model=…`); keyword search needs none
//! and runs as it always did.

use std::sync::Arc;

use agentmem::no_embedder;
use agentmem::recall::{IndexProgress, Recall, SearchMode};
use agentmem_core::{AgentMemory, Error, MemoryFilter, MessageQuery, ModelIdentity, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use super::sessions;
use crate::output::{count, snippet, time, Output};

/// Recall over `store` with the embedder `url` names; `no_embedder(what)` without one.
fn recall(store: &Arc<dyn AgentMemory>, url: &str, what: &str) -> Result<Recall> {
    agentmem::recall_for(store.clone(), url)?.ok_or_else(|| no_embedder(what, url))
}

/// Whether the store's vectors (`stored`) come from `ours`; dimensions not learnt yet (0)
/// match any, so `doctor` need not ask the embedder.
fn same_model(stored: &ModelIdentity, ours: &ModelIdentity) -> bool {
    stored.id == ours.id
        && stored.normalized == ours.normalized
        && (ours.dimensions == 0 || stored.dimensions == ours.dimensions)
}

/// How a hit was found, from the rankings that placed it: `keyword`, `semantic` or `both`.
fn found_by(keyword: Option<usize>, semantic: Option<usize>) -> &'static str {
    match (keyword, semantic) {
        (Some(_), Some(_)) => "both",
        (None, Some(_)) => "semantic",
        _ => "keyword",
    }
}

/// `search`: messages by keyword as before, or by meaning (alone or fused with keywords) when
/// the store URL embeds messages. Hybrid by default then.
pub async fn search_messages(
    store: &Arc<dyn AgentMemory>, url: &str, out: &mut Output, query: &str, scope: MessageQuery,
    mode: Option<SearchMode>,
) -> Result<()> {
    let options = agentmem::embedding_options(url)?;
    let embeds_messages = options.as_ref().is_some_and(|o| o.messages);
    let mode = SearchMode::chosen(mode, embeds_messages);
    if mode == SearchMode::Keyword {
        return sessions::search(store, out, query, scope.session, scope.limit).await;
    }
    let what = format!("search --mode {mode}");
    if options.is_none() {
        return Err(no_embedder(&what, url));
    }
    if !embeds_messages {
        return Err(Error::invalid_input(format!(
            "{what}: the store URL embeds memory items only; add `embed=messages` to it (then \
             run `agentmem reindex`) to search messages by meaning"
        )));
    }
    let hits = recall(store, url, &what)?
        .search_messages(query, &scope, mode)
        .await?;
    let columns = ["SESSION", "SCORE", "FOUND BY", "TIME", "ROLE", "TEXT"];
    out.listing(&hits, &columns, |h| {
        vec![
            h.session.to_string(),
            format!("{:.3}", h.score),
            found_by(h.keyword_rank, h.semantic_rank).to_string(),
            time(h.message.timestamp),
            h.message.role.to_string(),
            snippet(&h.message.content, 80),
        ]
    })
}

/// `memories --search`: memory items within `filter`, by keyword, or by meaning (alone or
/// fused) when the store URL names an embedder. Hybrid by default then.
pub async fn search_memories(
    store: &Arc<dyn AgentMemory>, url: &str, out: &mut Output, query: &str, filter: &MemoryFilter,
    mode: Option<SearchMode>,
) -> Result<()> {
    let named = agentmem::embedding_options(url)?.is_some();
    let mode = SearchMode::chosen(mode, named);
    if mode == SearchMode::Keyword {
        let hits = store.search_memories(query, filter).await?;
        let columns = ["SCORE", "ID", "KIND", "SCOPE", "KEY", "TEXT"];
        return out.listing(&hits, &columns, |h| {
            vec![
                format!("{:.3}", h.score),
                h.item.id.to_string(),
                h.item.kind.to_string(),
                h.item.scope.to_string(),
                h.item.key.clone().unwrap_or_default(),
                snippet(&h.item.text, 80),
            ]
        });
    }
    let what = format!("memories --search --mode {mode}");
    let hits = recall(store, url, &what)?
        .search_memories(query, filter, mode)
        .await?;
    let columns = ["SCORE", "FOUND BY", "ID", "KIND", "SCOPE", "KEY", "TEXT"];
    out.listing(&hits, &columns, |h| {
        vec![
            format!("{:.3}", h.score),
            found_by(h.keyword_rank, h.semantic_rank).to_string(),
            h.item.id.to_string(),
            h.item.kind.to_string(),
            h.item.scope.to_string(),
            h.item.key.clone().unwrap_or_default(),
            snippet(&h.item.text, 80),
        ]
    })
}

/// What `reindex --json` prints.
#[derive(Debug, Serialize)]
struct ReindexReport {
    /// Distinct texts indexed (memory items, and messages with `embed=messages`).
    texts: u64,
    /// Of them, embedded by this run.
    embedded: u64,
    /// Whether every text was embedded anew (`--all`, or another model's vectors).
    all: bool,
    /// The model the vectors now come from.
    model: ModelIdentity,
    /// The model the store's vectors came from before, when it was another.
    previous_model: Option<ModelIdentity>,
}

/// `reindex`: embeds what has no vector; everything anew with `all` or when the store's
/// vectors come from another model than the URL's embedder.
pub async fn reindex(
    store: &Arc<dyn AgentMemory>, url: &str, out: &mut Output, all: bool,
) -> Result<()> {
    let recall = recall(store, url, "reindex")?;
    let bar = if out.json() {
        ProgressBar::hidden()
    } else {
        // Drawn only on a terminal: piped standard error stays empty.
        ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} texts embedded") {
        bar.set_style(style);
    }
    let mut progress = |p: IndexProgress| {
        bar.set_length(p.pending);
        bar.set_position(p.embedded);
    };
    let update = recall.update_index(all, &mut progress).await;
    bar.finish_and_clear();
    let update = update?;
    let report = update.report;
    let model = update.model;
    if out.json() {
        return out.json_value(&ReindexReport {
            texts: report.texts,
            embedded: report.embedded,
            all: update.anew,
            model,
            previous_model: update.previous_model,
        });
    }
    let why = match (&update.previous_model, all) {
        (Some(previous), _) => format!(" (anew: the vectors came from {previous})"),
        (None, true) => " (anew: --all)".to_string(),
        (None, false) => String::new(),
    };
    out.line(format!(
        "embedded {}{why} with {model}; {} indexed",
        count(report.embedded, "text"),
        count(report.texts, "text")
    ))
}

/// How far the vectors lag behind the texts, as `doctor` shows it.
#[derive(Debug, Serialize)]
pub struct IndexStatus {
    /// The embedder the store URL names (its model), or why it cannot be built.
    pub embedder: String,
    /// Distinct texts indexed (memory items, and messages with `embed=messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub texts: Option<u64>,
    /// Of them, texts with no vector yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    /// The model the store's vectors come from (none before the first indexing).
    pub stored_model: Option<ModelIdentity>,
    /// What to do about a lag, when there is one (a lag is not a failure).
    pub notice: Option<String>,
}

/// The index lag of the store at `url` (opened with `open`), when its URL names an embedder.
pub async fn index_status(
    url: &str, store: impl std::future::Future<Output = Result<Arc<dyn AgentMemory>>>,
) -> Result<Option<IndexStatus>> {
    if agentmem::embedding_options(url)?.is_none() {
        return Ok(None);
    }
    let recall = match agentmem::recall_for(store.await?, url) {
        Ok(Some(recall)) => recall,
        Ok(None) => return Ok(None),
        // A missing model is for `reindex` and searches to report; the store is fine.
        Err(e) => {
            return Ok(Some(IndexStatus {
                embedder: crate::one_line(&e),
                texts: None,
                pending: None,
                stored_model: None,
                notice: Some("search by meaning and `agentmem reindex` need the embedder".into()),
            }))
        }
    };
    let lag = recall.lag().await?;
    let ours = recall.embedder().model();
    let other = lag.model.as_ref().is_some_and(|m| !same_model(m, ours));
    let notice = if other {
        Some(
            "the vectors come from another model than the store URL's embedder: run \
             `agentmem reindex` to embed everything anew"
                .to_string(),
        )
    } else if lag.pending > 0 {
        Some(format!(
            "{} not embedded yet: run `agentmem reindex`",
            count(lag.pending, "text")
        ))
    } else {
        None
    };
    Ok(Some(IndexStatus {
        // Dimensions an HTTP embedder has not been asked for yet are not shown as 0.
        embedder: if ours.dimensions == 0 {
            ours.id.clone()
        } else {
            ours.to_string()
        },
        texts: Some(lag.texts),
        pending: Some(lag.pending),
        stored_model: lag.model,
        notice,
    }))
}

/// The lines `doctor` prints for `status`.
pub fn print_index(out: &mut Output, status: &IndexStatus) -> Result<()> {
    match (status.texts, status.pending) {
        (Some(texts), Some(pending)) => out.line(format!(
            "index:     {} embedded of {}, {pending} pending; vectors from {}",
            texts - pending.min(texts),
            count(texts, "text"),
            status
                .stored_model
                .as_ref()
                .map_or_else(|| "no model yet".to_string(), ToString::to_string)
        ))?,
        _ => out.line(format!("index:     unavailable ({})", status.embedder))?,
    }
    if let Some(notice) = &status.notice {
        out.line(format!("           {notice}"))?;
    }
    Ok(())
}
