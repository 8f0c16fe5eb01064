// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`AgentMemory`]: agentmem_core::AgentMemory
//! [`Conversation`]: crate::Conversation
//! [`Conversation::compact`]: crate::Conversation::compact
//! [`Conversation::maybe_compress`]: crate::Conversation::maybe_compress
//! [`Summarizer`]: crate::Summarizer
//! [`ExtractiveSummarizer`]: crate::ExtractiveSummarizer
//! [`Compressor`]: crate::Compressor
//! [`MemorySearchTool`]: crate::MemorySearchTool
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod builder;
pub mod compressor;
mod conversation;
pub mod export;
mod history;
mod preload;
pub mod summarizer;
pub mod templates;
pub mod tokens;
mod tool;

pub use builder::{
    resolve_workspace_dir, workspace_dir_from_env, ConversationBuilder, DEFAULT_WORKSPACE_DIR,
    WORKSPACE_DIR_ENV,
};
pub use compressor::Compressor;
pub use conversation::{Compaction, Conversation};
pub use export::ExportFormat;
pub use preload::{Preload, DEFAULT_PRELOAD_WINDOW};
#[cfg(feature = "openai")]
pub use summarizer::OpenAiSummarizer;
pub use summarizer::{ExtractiveSummarizer, Summarizer, SummaryRequest};
pub use tokens::{context_length_for_model, TokenEncoding, DEFAULT_CONTEXT_LENGTH};
pub use tool::MemorySearchTool;
