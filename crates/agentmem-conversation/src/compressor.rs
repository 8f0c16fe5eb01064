//! The context compressor: when to compact, and with which summarizer.

use std::sync::Arc;

use agentmem_core::{Error, Result};

use crate::summarizer::{ExtractiveSummarizer, Summarizer};

/// Compacts a conversation automatically when its prompt string reaches `threshold` ×
/// context length (checked by [`Conversation::maybe_compress`](crate::Conversation::maybe_compress)
/// at the top of each agent loop iteration).
///
/// Swarms' `ContextCompressor`: threshold 0.9 by default, a summarizer with its temperature and
/// maximum summary length, on by default.
///
/// ```
/// use std::sync::Arc;
/// use agentmem_conversation::{Compressor, ExtractiveSummarizer};
/// let c = Compressor::new(Arc::new(ExtractiveSummarizer::new())).with_threshold(0.75);
/// assert!(c.enabled && c.threshold == 0.75 && c.max_summary_tokens == 2_000);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Compressor {
    /// The fraction of the context length at which compaction starts, in (0, 1]; 0.9 by default.
    pub threshold: f64,
    /// What writes the summary.
    pub summarizer: Arc<dyn Summarizer>,
    /// The summarizer's sampling temperature; 0.1 by default.
    pub temperature: f32,
    /// The longest summary, in tokens; 2,000 by default. A summary is also held to a quarter
    /// of the threshold's token count, so that compaction brings the prompt well under it and
    /// a later preload (half the context by default) has room for the turns after it.
    pub max_summary_tokens: usize,
    /// Whether automatic compression runs; on by default.
    pub enabled: bool,
}

impl Default for Compressor {
    /// The extractive summarizer, threshold 0.9, on.
    fn default() -> Self {
        Compressor::new(Arc::new(ExtractiveSummarizer::new()))
    }
}

impl Compressor {
    /// A compressor using `summarizer`, with the defaults otherwise.
    pub fn new(summarizer: Arc<dyn Summarizer>) -> Self {
        Compressor {
            threshold: 0.9,
            summarizer,
            temperature: 0.1,
            max_summary_tokens: 2_000,
            enabled: true,
        }
    }

    /// A compressor that never runs (Swarms' `context_compression=False`). Manual
    /// [`compact`](crate::Conversation::compact) still works.
    pub fn disabled() -> Self {
        Compressor {
            enabled: false,
            ..Compressor::default()
        }
    }

    agentmem_core::setters! {
        /// Sets the threshold.
        pub fn with_threshold(threshold: f64) { self.threshold = threshold }

        /// Sets the summarizer's temperature.
        pub fn with_temperature(temperature: f32) { self.temperature = temperature }

        /// Sets the longest summary, in tokens.
        pub fn with_max_summary_tokens(tokens: usize) { self.max_summary_tokens = tokens }

        /// Turns automatic compression on or off.
        pub fn with_enabled(enabled: bool) { self.enabled = enabled }
    }

    /// Checks the settings: a threshold in (0, 1], a finite temperature >= 0, and a summary of
    /// at least one token.
    pub fn validate(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::invalid_input(format!(
                "compressor threshold {} is outside (0, 1]",
                self.threshold
            )));
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(Error::invalid_input(format!(
                "summarizer temperature {} must be a finite number >= 0",
                self.temperature
            )));
        }
        if self.max_summary_tokens == 0 {
            return Err(Error::invalid_input(
                "max_summary_tokens must be at least 1",
            ));
        }
        Ok(())
    }

    /// The token count at which compaction starts for `context_length`.
    pub fn trigger_tokens(&self, context_length: usize) -> usize {
        (self.threshold * context_length as f64).ceil() as usize
    }

    /// The summary budget for `context_length`: `max_summary_tokens`, held to a quarter of
    /// the trigger so a compacted conversation is well under the threshold (at least 1).
    pub fn summary_budget(&self, context_length: usize) -> usize {
        self.max_summary_tokens
            .min(self.trigger_tokens(context_length) / 4)
            .max(1)
    }
}
