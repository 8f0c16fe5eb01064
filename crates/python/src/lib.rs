//! The native module of the `agentmem` Python package (`agentmem._agentmem`).
//!
//! Thin on purpose: it opens a store through the facade (every backend, encryption keys as
//! the CLI takes them), runs each call on one shared tokio runtime with the GIL released, and
//! hands plain data across in agentmem's own serde shape. The Python modules beside it
//! (`python/agentmem`) give the public names, the OpenAI chat shape and the async API.
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

mod checkpoints;
mod error;
mod input;
mod recall;
mod runtime;
mod store;

use pyo3::prelude::*;

/// The module: `open`, the native store and the exception classes.
#[pymodule]
fn _agentmem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(store::open, m)?)?;
    m.add_class::<store::NativeStore>()?;
    m.add_class::<checkpoints::NativeCheckpoints>()?;
    error::register(m)?;
    Ok(())
}
