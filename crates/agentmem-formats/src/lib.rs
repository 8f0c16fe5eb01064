// The crate documentation is the README (also shown on GitHub and crates.io). Its links point
// to docs.rs there; the definitions below come first, so rustdoc links to (and checks) the items.
//! [`ExportDocument`]: crate::ExportDocument
//! [`SessionExport`]: crate::SessionExport
//! [`canonical_checkpoint`]: crate::canonical_checkpoint
//! [`ArchiveExport`]: crate::ArchiveExport
//! [`Format`]: crate::Format
//! [`Format::import`]: crate::Format::import
//! [`Format::import_as`]: crate::Format::import_as
//! [`Format::export`]: crate::Format::export
//! [`canonicalize`]: crate::canonicalize
//! [`jsonl`]: crate::jsonl
//! [`json`]: crate::json
//! [`yaml`]: crate::yaml
//! [`swarms`]: crate::swarms
//! [`praisonai`]: crate::praisonai
//! [`mcp_memory`]: crate::mcp_memory
//! [`time`]: crate::time
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod checkpoints;
mod document;
mod fs;
mod graph;
pub mod json;
pub mod jsonl;
pub mod mcp_memory;
pub mod praisonai;
pub mod swarms;
pub mod time;
pub mod yaml;

pub use fs::{create_dir_all as create_private_dir, sync_parent_folder};

pub use checkpoints::canonical_checkpoint;
pub use document::{
    canonical_map, canonical_session, canonicalize, ArchiveExport, ExportDocument, Format,
    SessionExport, EXPORT_VERSION,
};
