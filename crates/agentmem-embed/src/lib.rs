//! Text embedders for agentmem's semantic search: implementations of
//! [`agentmem_core::Embedder`].
//!
//! - [`LocalEmbedder`] (feature `local`): the sentence model all-MiniLM-L6-v2 (384 dimensions,
//!   unit vectors) in pure Rust with candle, on the CPU, with no network at run time. Install
//!   the model once with `bash crates/agentmem-embed/install-model.sh [DIR]`.
//! - [`HttpEmbedder`] (feature `http`): any OpenAI-compatible `POST /v1/embeddings` server
//!   (OpenAI, vLLM, Ollama, LiteLLM, text-embeddings-inference, …).
//!
//! Both run their blocking work (inference, the HTTP call) on tokio's blocking threads.
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

#[cfg(feature = "http")]
mod http;
#[cfg(feature = "local")]
mod local;

#[cfg(feature = "http")]
pub use http::{HttpEmbedder, DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL};
#[cfg(feature = "local")]
pub use local::{
    default_model_dir, LocalEmbedder, DEFAULT_BATCH_SIZE, INSTALL_COMMAND, MAX_TOKENS,
    MODEL_DIR_ENV, MODEL_FILES, MODEL_ID,
};
