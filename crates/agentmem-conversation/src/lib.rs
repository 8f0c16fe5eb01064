//! A Swarms-style conversation engine over any agentmem store (features A1–A12).
//!
//! [`Conversation`] keeps an agent's history in memory and, when persistent, in any
//! [`AgentMemory`](agentmem_core::AgentMemory) backend:
//!
//! - **Opt-in persistence (A1)**: ephemeral by default; the store is not even read.
//! - **Preload (A4)**: the stored memory comes back as one system message,
//!   `[Persistent Memory — MEMORY.md]` and the session rendered as `MEMORY.md`, after the
//!   system prompt, rules and custom rules, within a token budget (newest blocks kept).
//! - **Write-through (A5)**: each added message is appended to the store at once; the static
//!   prompt is never stored. Concurrent adds keep one order in memory and in the store.
//! - **Compaction (A6)**: [`Conversation::compact`] archives the stored transcript and
//!   replaces it with a `[Compressed Memory Summary]` message in one atomic store call.
//! - **Auto-compression (A7)**: [`Conversation::maybe_compress`], at the top of each agent
//!   loop iteration, compacts once the prompt reaches `threshold` × context length, counting
//!   tokens with tiktoken; summaries come from a [`Summarizer`]: [`ExtractiveSummarizer`]
//!   (no network) or, with feature `openai`, `OpenAiSummarizer` (any chat-completions API).
//! - **Access, stop writing, export, search, tool (A8–A12)**.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use agentmem_conversation::Conversation;
//! use agentmem_core::{AgentMemory, InMemory, Role};
//!
//! let store: Arc<dyn AgentMemory> = Arc::new(InMemory::new());
//! let first = Conversation::builder("ResearchAgent".parse()?)
//!     .persistent(true)
//!     .store(store.clone())
//!     .build()
//!     .await?;
//! first.add(Role::User, "We prefer GCP.").await?;
//!
//! // A later run with the same agent name preloads what the first one wrote.
//! let second = Conversation::builder("ResearchAgent".parse()?)
//!     .persistent(true)
//!     .store(store)
//!     .build()
//!     .await?;
//! let preload = &second.messages()[0];
//! assert!(preload.content.starts_with("[Persistent Memory — MEMORY.md]\n"));
//! assert!(preload.content.contains("### User — "));
//! assert!(preload.content.contains("We prefer GCP."));
//! # Ok::<(), agentmem_core::Error>(())
//! # }).unwrap();
//! ```
#![forbid(unsafe_code)]

mod builder;
pub mod compressor;
mod conversation;
pub mod export;
mod preload;
pub mod summarizer;
pub mod templates;
pub mod tokens;
mod tool;

pub use builder::{workspace_dir_from_env, ConversationBuilder, WORKSPACE_DIR_ENV};
pub use compressor::Compressor;
pub use conversation::{Compaction, Conversation};
pub use export::ExportFormat;
pub use preload::Preload;
#[cfg(feature = "openai")]
pub use summarizer::OpenAiSummarizer;
pub use summarizer::{ExtractiveSummarizer, Summarizer, SummaryRequest};
pub use tokens::{context_length_for_model, TokenEncoding, DEFAULT_CONTEXT_LENGTH};
pub use tool::MemorySearchTool;
