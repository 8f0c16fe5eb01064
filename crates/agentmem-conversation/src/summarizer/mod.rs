//! Summarizers turn a transcript into the text that replaces it on compaction.

use std::fmt::Debug;

use async_trait::async_trait;

use agentmem_core::{Message, Result};

use crate::tokens::TokenEncoding;

mod extractive;
#[cfg(feature = "openai")]
mod openai;

pub use extractive::ExtractiveSummarizer;
#[cfg(feature = "openai")]
pub use openai::{OpenAiSummarizer, DEFAULT_OPENAI_BASE_URL};

/// What a summarizer is asked to summarize, and within which limits.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SummaryRequest {
    /// The transcript, oldest first: everything after the system prompt and rules
    /// (preloaded memory and earlier summaries included, so their facts survive).
    pub messages: Vec<Message>,
    /// The summary must fit in this many tokens.
    pub max_tokens: usize,
    /// Sampling temperature, for summarizers that call a model.
    pub temperature: f32,
    /// The encoding the conversation counts tokens with.
    pub encoding: TokenEncoding,
}

impl SummaryRequest {
    /// A request to summarize `messages` in at most `max_tokens` tokens, at temperature 0.1,
    /// counting with `o200k_base`.
    pub fn new(messages: Vec<Message>, max_tokens: usize) -> Self {
        SummaryRequest {
            messages,
            max_tokens,
            temperature: 0.1,
            encoding: TokenEncoding::default(),
        }
    }
    agentmem_core::setters! {
        /// Sets the temperature.
        pub fn with_temperature(temperature: f32) { self.temperature = temperature }

        /// Sets the encoding.
        pub fn with_encoding(encoding: TokenEncoding) { self.encoding = encoding }
    }
}

/// Something that summarizes a transcript: an extractive algorithm, a model behind an API, …
///
/// Object-safe, held as `Arc<dyn Summarizer>`. An error leaves the conversation untouched:
/// compaction only starts once a summary exists.
#[async_trait]
pub trait Summarizer: Debug + Send + Sync {
    /// The summary of `request.messages`, at most `request.max_tokens` tokens long.
    async fn summarize(&self, request: &SummaryRequest) -> Result<String>;
}
