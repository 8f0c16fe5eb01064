// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`migrate`]: crate::migrate()
//! [`Progress`]: crate::Progress
//! [`ProgressEvent`]: crate::ProgressEvent
//! [`sync_session`]: crate::sync_session
//! [`read_session`]: crate::read_session
//! [`import_document`]: crate::import_document
//! [`export_document`]: crate::export_document
//! [`write_jsonl`]: crate::write_jsonl
//! [`session_ids`]: crate::session_ids
//! [`all_memories`]: crate::all_memories
//! [`export_session`]: crate::export_session
//! [`is_encrypted`]: crate::is_encrypted
//! [`MigrateOptions`]: crate::MigrateOptions
//! [`import_graph`]: crate::import_graph
//! [`export_graph`]: crate::export_graph
//! [`GraphReport`]: crate::GraphReport
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod encrypted;
mod export;
mod graph;
mod import;
mod migrate;
mod sync;

pub use encrypted::{is_encrypted, ENCRYPTION_MARKER};
pub use export::{
    all_memories, export_document, export_session, export_thread, session_ids, thread_ids,
    write_jsonl, ExportCounts,
};
pub use graph::{export_graph, import_graph, GraphReport};
pub use import::{import_document, ImportReport};
pub use migrate::{migrate, MigrateOptions, MigrateReport, Progress, ProgressEvent, Silent};
pub use sync::{read_session, sync_session, SyncOptions, SyncReport};
