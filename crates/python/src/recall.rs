//! Search by meaning for `NativeStore`: which mode a search runs in, and the indexing calls,
//! as the CLI's `search --mode`, `memories --search --mode`, `reindex` and `doctor` decide
//! them. The embedder is the one the store URL names (`embedder=local`, `embedder=http&…`).

use std::sync::Arc;

use agentmem::recall::{IndexReport, Recall, SearchMode};
use agentmem::{no_embedder, AgentMemory, Error};
use pyo3::prelude::*;

use crate::error::to_py;

/// The embedder a store URL names, built once at open.
pub struct Recalling {
    /// `None` when the URL names no embedder. An embedder that could not be built (the local
    /// model not installed) is an error raised by the first call that needs it, so sessions and
    /// keyword search still work, as they do from the CLI with the same URL.
    recall: Option<Result<Recall, PyErr>>,
    /// Whether messages are embedded too (`embed=messages`), not just memory items.
    embeds_messages: bool,
    /// The store URL, redacted, for error messages.
    redacted: String,
}

/// Which items a search ranks: messages are searched by meaning only with `embed=messages`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Searched {
    /// `search`.
    Messages,
    /// `search_memories`.
    Memories,
}

impl Recalling {
    /// Reads the embedding options of `url` (`InvalidInput` when malformed) and builds its
    /// embedder over `store`.
    pub fn new(store: Arc<dyn AgentMemory>, url: &str, redacted: String) -> PyResult<Self> {
        let options = agentmem::embedding_options(url).map_err(to_py)?;
        let embeds_messages = options.as_ref().is_some_and(|o| o.messages);
        let recall = options
            .is_some()
            .then(|| match agentmem::recall_for(store, url) {
                Ok(Some(recall)) => Ok(recall),
                Ok(None) => Err(to_py(no_embedder("search by meaning", &redacted))),
                Err(e) => Err(to_py(e)),
            });
        Ok(Recalling {
            recall,
            embeds_messages,
            redacted,
        })
    }

    /// The recall and mode a search runs with, or `None` for the store's keyword search.
    /// `mode` (`keyword`, `semantic`, `hybrid`) defaults to hybrid when the URL embeds what
    /// is searched, else keyword; asking for meaning without an embedder is `InvalidInput`.
    pub fn mode(
        &self, py: Python<'_>, mode: Option<&str>, searched: Searched,
    ) -> PyResult<Option<(Recall, SearchMode)>> {
        let embeds =
            self.recall.is_some() && (searched == Searched::Memories || self.embeds_messages);
        let asked = mode
            .map(str::parse::<SearchMode>)
            .transpose()
            .map_err(to_py)?;
        let mode = SearchMode::chosen(asked, embeds);
        if mode == SearchMode::Keyword {
            return Ok(None);
        }
        let what = match searched {
            Searched::Messages => format!("search(mode={:?})", mode.as_str()),
            Searched::Memories => format!("search_memories(mode={:?})", mode.as_str()),
        };
        if self.recall.is_some() && !embeds {
            return Err(to_py(Error::invalid_input(format!(
                "{what}: the store URL embeds memory items only; add `embed=messages` to it \
                 (then call `reindex()`) to search messages by meaning"
            ))));
        }
        Ok(Some((self.require(py, &what)?, mode)))
    }

    /// The recall, or the error of a URL that names no embedder (or one not built).
    pub fn require(&self, py: Python<'_>, what: &str) -> PyResult<Recall> {
        match &self.recall {
            Some(Ok(recall)) => Ok(recall.clone()),
            Some(Err(e)) => Err(e.clone_ref(py)),
            None => Err(to_py(no_embedder(what, &self.redacted))),
        }
    }
}

/// Embeds the texts that have no vector; every text anew with `all`, or when the store's
/// vectors come from another model than the embedder's (as `agentmem reindex`).
pub async fn reindex(recall: Recall, all: bool) -> agentmem::Result<IndexReport> {
    Ok(recall.update_index(all, &mut |_| {}).await?.report)
}
