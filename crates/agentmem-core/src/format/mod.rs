//! Interchange formats shared by backends, the conversation engine and the CLI.
//!
//! - [`swarms`]: the `MEMORY.md` format Swarms agents write and preload (header, one block
//!   per message, archive file names), rendered byte for byte and parsed back.
//!
//! The most used items are re-exported here.

pub mod swarms;

pub use swarms::{
    archive_file_stem, isoformat, parse_iso_time, parse_memory_md, render_block, render_header,
    render_memory_md, ParsedBlock, ParsedMemory,
};
