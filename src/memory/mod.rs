//! Agent memory configuration (B1, B2), per-agent memory with history injection and auto-save
//! (B3, B4, B7), workspace-scoped sessions (B5), auto-memory (B6) and learning (B8).
//!
//! Every feature is opt-in: with [`MemoryConfig::default`] nothing is opened or written.
//!
//! ```
//! use std::sync::Arc;
//! use agentmem::memory::{Memory, MemoryConfig};
//! use agentmem::{InMemory, Message};
//!
//! # tokio_block_on(async {
//! let config = MemoryConfig::default()
//!     .with_history(true)
//!     .with_session_id("demo")
//!     .with_auto_memory(true);
//! let memory = Memory::new(config, Arc::new(InMemory::new()), Some("assistant"))?;
//!
//! let turn = vec![Message::user("Hi, I'm Alice and I use Rust")];
//! let context = memory.context_for_turn(&turn).await?;
//! let mut conversation = context.messages("You are helpful.", &turn);
//! conversation.push(Message::assistant("Hello Alice!"));
//! memory.after_turn(&conversation).await?;
//!
//! // A later run: the past turn comes back as history and the facts in the system prompt.
//! let next = vec![Message::user("What is my name?")];
//! let context = memory.context_for_turn(&next).await?;
//! assert_eq!(context.history.len(), 2);
//! assert!(context.system_prompt("You are helpful.").contains("The user's name is Alice."));
//! # Ok::<(), agentmem::Error>(())
//! # }).unwrap();
//! # fn tokio_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

mod agent;
pub mod auto_memory;
mod config;
mod context;
mod home;
pub mod learning;
mod text;

pub use agent::{Memory, TurnReport};
pub use config::{MemoryConfig, StoreSpec, DEFAULT_HISTORY_LIMIT};
pub use context::TurnContext;
pub use home::{agentmem_home, HOME_ENV};
