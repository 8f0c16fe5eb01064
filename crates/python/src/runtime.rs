//! One tokio runtime for every store of the process, and the way a call reaches it: with
//! the GIL released, so other Python threads (and an asyncio loop running calls through
//! `asyncio.to_thread`) go on while Rust waits on a lock, a disk or a server.

use std::future::Future;
use std::sync::OnceLock;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

use crate::error::to_py;

static RUNTIME: OnceLock<std::io::Result<Runtime>> = OnceLock::new();

/// The shared runtime, started on first use.
fn runtime() -> PyResult<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("agentmem")
                .build()
        })
        .as_ref()
        .map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "agentmem could not start its runtime: {e}"
            ))
        })
}

/// Runs `future` to completion on the shared runtime without holding the GIL, turning an
/// agentmem error into the Python exception of its kind.
pub fn block_on<T, F>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: Future<Output = agentmem::Result<T>> + Send,
    T: Send,
{
    let runtime = runtime()?;
    py.detach(|| runtime.block_on(future)).map_err(to_py)
}
