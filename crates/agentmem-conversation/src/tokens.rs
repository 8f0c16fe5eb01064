//! Token counting with a real BPE tokenizer (tiktoken) and context lengths of known models.
//!
//! Each encoding's BPE tables are built once, lazily, on first use, and shared by every
//! conversation in the process (building one takes a noticeable fraction of a second).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// The context length used when a model is unknown and none is configured (as Swarms does).
pub const DEFAULT_CONTEXT_LENGTH: usize = 16_000;

/// Which BPE encoding counts tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenEncoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-5, the `o` series; the default.
    #[default]
    O200kBase,
    /// `cl100k_base`: GPT-4, GPT-3.5 and the embedding models (and Swarms' own counter).
    Cl100kBase,
}

impl TokenEncoding {
    /// The encoding `model` uses: `cl100k_base` for models tiktoken maps to it (GPT-4,
    /// GPT-3.5, …), otherwise `o200k_base`, which is also the fallback for non-OpenAI models.
    ///
    /// ```
    /// use agentmem_conversation::TokenEncoding;
    /// assert_eq!(TokenEncoding::for_model("gpt-4-0613"), TokenEncoding::Cl100kBase);
    /// assert_eq!(TokenEncoding::for_model("gpt-4o"), TokenEncoding::O200kBase);
    /// assert_eq!(TokenEncoding::for_model("claude-sonnet-4-6"), TokenEncoding::O200kBase);
    /// ```
    pub fn for_model(model: &str) -> Self {
        match tiktoken_rs::tokenizer::get_tokenizer(strip_provider(model)) {
            Some(tiktoken_rs::tokenizer::Tokenizer::Cl100kBase) => TokenEncoding::Cl100kBase,
            _ => TokenEncoding::O200kBase,
        }
    }

    /// The encoding's tiktoken name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEncoding::O200kBase => "o200k_base",
            TokenEncoding::Cl100kBase => "cl100k_base",
        }
    }

    /// How many tokens `text` is in this encoding. Special-token text such as
    /// `<|endoftext|>` counts as ordinary text, since it comes from users and models.
    ///
    /// ```
    /// use agentmem_conversation::TokenEncoding;
    /// assert_eq!(TokenEncoding::O200kBase.count("hello world"), 2);
    /// assert_eq!(TokenEncoding::Cl100kBase.count(""), 0);
    /// ```
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self.bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            // The tables are compiled into tiktoken-rs, so this cannot fail in practice; if it
            // ever did, over-estimating (one token per 3 bytes) keeps compression working.
            None => text.len().div_ceil(3),
        }
    }

    /// The longest prefix of `text` (cut at a char boundary) that is at most `max_tokens`
    /// tokens long.
    pub fn truncate(self, text: &str, max_tokens: usize) -> &str {
        if self.count(text) <= max_tokens {
            return text;
        }
        // Binary search over cut positions (char boundaries). Token counts grow with the
        // prefix up to BPE merges at the cut, so the answer may be a few chars short of the
        // longest fitting prefix, but it always fits: `lo` is 0 or a tested position.
        let cuts: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect();
        let (mut lo, mut hi) = (0usize, cuts.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.count(&text[..cuts[mid]]) <= max_tokens {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        &text[..cuts[lo]]
    }

    fn bpe(self) -> Option<&'static CoreBPE> {
        static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        let (cell, load): (_, fn() -> anyhow_free::Result<CoreBPE>) = match self {
            TokenEncoding::O200kBase => (&O200K, anyhow_free::o200k),
            TokenEncoding::Cl100kBase => (&CL100K, anyhow_free::cl100k),
        };
        cell.get_or_init(|| match load() {
            Ok(bpe) => Some(bpe),
            Err(e) => {
                tracing::warn!(encoding = self.as_str(), error = %e, "cannot load BPE tables; estimating token counts");
                None
            }
        })
        .as_ref()
    }
}

/// Adapters from tiktoken-rs constructors (which return `anyhow::Result`) to a plain string
/// error, so this crate does not need `anyhow` itself.
mod anyhow_free {
    pub type Result<T> = std::result::Result<T, String>;

    pub fn o200k() -> Result<tiktoken_rs::CoreBPE> {
        tiktoken_rs::o200k_base().map_err(|e| e.to_string())
    }

    pub fn cl100k() -> Result<tiktoken_rs::CoreBPE> {
        tiktoken_rs::cl100k_base().map_err(|e| e.to_string())
    }
}

/// Context lengths of model families tiktoken does not know, by name prefix (first match wins).
const CONTEXT_LENGTHS: &[(&str, usize)] = &[
    ("claude-3-5-haiku", 200_000),
    ("claude", 200_000),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-2", 1_048_576),
    ("gemini-3", 1_048_576),
    ("llama-3.1", 128_000),
    ("llama-3.2", 128_000),
    ("llama-3.3", 128_000),
    ("llama3.1", 128_000),
    ("llama-3", 8_192),
    ("llama3", 8_192),
    ("mistral-large", 128_000),
    ("mistral-small", 32_000),
    ("mixtral-8x22b", 65_536),
    ("mixtral", 32_768),
    ("deepseek-chat", 64_000),
    ("deepseek-reasoner", 64_000),
    ("qwen2.5", 32_768),
    ("grok-4", 256_000),
    ("grok-3", 131_072),
];

/// The context length of `model`: from tiktoken's table for OpenAI models, then from a table
/// of other common families (Claude, Gemini, Llama, Mistral, DeepSeek, Qwen, Grok), else
/// [`DEFAULT_CONTEXT_LENGTH`]. A provider prefix such as `openai/` or `anthropic/` is ignored,
/// and so is case.
///
/// ```
/// use agentmem_conversation::tokens::context_length_for_model;
/// assert_eq!(context_length_for_model("gpt-4o"), 128_000);
/// assert_eq!(context_length_for_model("anthropic/claude-sonnet-4-6"), 200_000);
/// assert_eq!(context_length_for_model("my-local-model"), 16_000);
/// ```
pub fn context_length_for_model(model: &str) -> usize {
    let name = strip_provider(model.trim()).to_ascii_lowercase();
    if let Some(n) = tiktoken_rs::model::get_context_size(&name) {
        return n;
    }
    CONTEXT_LENGTHS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT_LENGTH, |&(_, n)| n)
}

/// `openai/gpt-4o` → `gpt-4o` (LiteLLM-style provider prefixes, as Swarms model names carry).
fn strip_provider(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_respects_budget_and_char_boundaries() {
        let text = "Grüße aus München. ".repeat(50);
        for budget in [0, 1, 5, 17, 100, 10_000] {
            let cut = TokenEncoding::O200kBase.truncate(&text, budget);
            assert!(
                TokenEncoding::O200kBase.count(cut) <= budget,
                "budget {budget}"
            );
            assert!(text.starts_with(cut));
        }
        assert_eq!(TokenEncoding::O200kBase.truncate(&text, 10_000), text);
        assert_eq!(TokenEncoding::O200kBase.truncate("", 0), "");
    }

    #[test]
    fn encodings_differ_on_the_same_text() {
        // o200k has larger merges for non-English text, so counts differ between encodings.
        let text = "東京の天気は晴れです。明日は雨が降るでしょう。";
        assert_ne!(
            TokenEncoding::O200kBase.count(text),
            TokenEncoding::Cl100kBase.count(text)
        );
    }

    #[test]
    fn special_tokens_count_as_text() {
        assert!(TokenEncoding::Cl100kBase.count("<|endoftext|>") > 1);
    }

    #[test]
    fn context_lengths() {
        assert_eq!(context_length_for_model("gpt-4"), 8_192);
        assert_eq!(context_length_for_model("GPT-4o-mini"), 128_000);
        assert_eq!(context_length_for_model("openai/gpt-4.1"), 1_047_576);
        assert_eq!(context_length_for_model("claude-haiku-4-5"), 200_000);
        assert_eq!(context_length_for_model("llama-3.1-70b"), 128_000);
        assert_eq!(context_length_for_model(""), DEFAULT_CONTEXT_LENGTH);
    }
}
