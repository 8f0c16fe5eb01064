//! Python exceptions, one per [`agentmem::ErrorKind`], under a common `agentmem.Error`.

use agentmem::{Error as StoreError, ErrorKind};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    agentmem,
    Error,
    PyException,
    "Every error agentmem raises: the kind is the subclass, the message is redacted (no password or key)."
);
pyo3::create_exception!(
    agentmem,
    InvalidInput,
    Error,
    "Something passed in cannot be used: a bad session id, message, URL option, or a missing or wrong encryption key."
);
pyo3::create_exception!(
    agentmem,
    NotFound,
    Error,
    "The session, archive or memory item does not exist."
);
pyo3::create_exception!(
    agentmem,
    Conflict,
    Error,
    "The call lost a race or contradicts what is stored (a duplicate id or key)."
);
pyo3::create_exception!(
    agentmem,
    Unavailable,
    Error,
    "The server could not be reached or refused service; retrying later may succeed."
);
pyo3::create_exception!(
    agentmem,
    CorruptData,
    Error,
    "Stored data could not be read back (a torn record, a malformed file, a foreign database)."
);
pyo3::create_exception!(
    agentmem,
    Unsupported,
    Error,
    "The backend or this build cannot do that."
);
pyo3::create_exception!(
    agentmem,
    Backend,
    Error,
    "Any other failure inside the backend (I/O, driver, server error)."
);

/// The Python exception for an agentmem error: the class of its kind, its whole message
/// (already redacted: errors never carry passwords).
pub fn to_py(error: StoreError) -> PyErr {
    let message = error.to_string();
    match error.kind() {
        ErrorKind::InvalidInput => InvalidInput::new_err(message),
        ErrorKind::NotFound => NotFound::new_err(message),
        ErrorKind::Conflict => Conflict::new_err(message),
        ErrorKind::Unavailable => Unavailable::new_err(message),
        ErrorKind::CorruptData => CorruptData::new_err(message),
        ErrorKind::Unsupported => Unsupported::new_err(message),
        _ => Backend::new_err(message),
    }
}

/// An `InvalidInput` for data from Python that does not have the shape agentmem needs.
pub fn invalid(what: &str, error: impl std::fmt::Display) -> PyErr {
    InvalidInput::new_err(format!("invalid input: {what}: {error}"))
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("Unavailable", py.get_type::<Unavailable>())?;
    m.add("CorruptData", py.get_type::<CorruptData>())?;
    m.add("Unsupported", py.get_type::<Unsupported>())?;
    m.add("Backend", py.get_type::<Backend>())?;
    Ok(())
}
