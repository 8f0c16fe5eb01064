//! Recall by meaning from a store URL: the embedder its options name (`embedder=local`,
//! `embedder=http&embed_url=…&embed_model=…`, `embed=messages`), built with the embedders
//! compiled in (features `embed-local`, `embed-http`).

use std::sync::Arc;

use agentmem_core::{
    redact_url, AgentMemory, Embedder, EmbedderChoice, EmbeddingOptions, Error, Result,
    StoreOptions,
};
use agentmem_recall::{Recall, RecallOptions};

/// The embedding options a store URL names, if any (`InvalidInput` for malformed ones).
///
/// ```
/// let options = agentmem::embedding_options("sqlite://a.db?embedder=local&embed=messages")?;
/// assert!(options.expect("named").messages);
/// assert!(agentmem::embedding_options("sqlite://a.db")?.is_none());
/// # Ok::<(), agentmem::Error>(())
/// ```
pub fn embedding_options(url: &str) -> Result<Option<EmbeddingOptions>> {
    let (_, options) = StoreOptions::split(url)
        .map_err(|e| Error::new(e.kind(), format!("store {}", redact_url(url))).with_source(e))?;
    Ok(options.embedding().cloned())
}

/// The embedder `choice` names, built with the embedders compiled in: `Unsupported`, naming
/// the cargo feature, for one that is not; `NotFound`, naming the install command, when the
/// local model is not installed.
pub fn embedder(choice: &EmbedderChoice) -> Result<Arc<dyn Embedder>> {
    match choice {
        #[cfg(feature = "embed-local")]
        EmbedderChoice::Local { model_dir } => {
            let local = match model_dir {
                Some(dir) => agentmem_embed::LocalEmbedder::from_dir(dir)?,
                None => agentmem_embed::LocalEmbedder::from_env()?,
            };
            Ok(Arc::new(local))
        }
        #[cfg(feature = "embed-http")]
        EmbedderChoice::Http {
            url,
            model,
            key_env,
        } => Ok(Arc::new(
            agentmem_embed::HttpEmbedder::new(url.clone(), model.clone())
                .with_api_key_env(key_env.clone()),
        )),
        #[allow(
            unreachable_patterns,
            reason = "reached when an embedder is not compiled in"
        )]
        other => Err(Error::unsupported(format!(
            "this build has no {} embedder: enable the agentmem feature `{}`",
            match other {
                EmbedderChoice::Local { .. } => "local",
                _ => "HTTP",
            },
            match other {
                EmbedderChoice::Local { .. } => "embed-local",
                _ => "embed-http",
            }
        ))),
    }
}

/// Recall over `store` with the embedder `url`'s options name; `None` when the URL names no
/// embedder (keyword search only).
pub fn recall_for(store: Arc<dyn AgentMemory>, url: &str) -> Result<Option<Recall>> {
    let Some(options) = embedding_options(url)? else {
        return Ok(None);
    };
    let embedder = embedder(&options.embedder)?;
    let recall_options = RecallOptions::default().with_embed_messages(options.messages);
    Ok(Some(Recall::new(store, embedder, recall_options)))
}

/// Opens the store `url` names ([`open`](crate::open)) with recall by the embedder its options
/// name. `InvalidInput` when the URL names no embedder.
///
/// ```no_run
/// # async fn demo() -> agentmem::Result<()> {
/// use agentmem::recall::SearchMode;
/// let recall = agentmem::open_recall("sqlite:///tmp/agent.db?embedder=local").await?;
/// recall.index(&mut |_| {}).await?;
/// let hits = recall
///     .search_memories("adoption", &agentmem::MemoryFilter::default(), SearchMode::Hybrid)
///     .await?;
/// # Ok(()) }
/// ```
pub async fn open_recall(url: &str) -> Result<Recall> {
    const WHAT: &str = "recall by meaning";
    if embedding_options(url)?.is_none() {
        return Err(no_embedder(WHAT, url));
    }
    let store = crate::open(url).await?;
    recall_for(store, url)?.ok_or_else(|| no_embedder(WHAT, url))
}

/// The `InvalidInput` error of `what` (a command, a call) that needs an embedder when the
/// store `url` (shown redacted) names none: it says which options to add.
///
/// ```
/// let e = agentmem::no_embedder("reindex", "postgres://me:secret@db/agent");
/// assert!(e.to_string().contains("embedder=local"));
/// assert!(!e.to_string().contains("secret"));
/// ```
pub fn no_embedder(what: &str, url: &str) -> Error {
    Error::invalid_input(format!(
        "{what} needs an embedder: add `embedder=local` (or `embedder=http&embed_url=…\
         &embed_model=…`) to the store URL {}",
        redact_url(url)
    ))
}
