//! Store properties: a few short named values a store keeps about itself (not about any
//! session), such as the encryption layer's marker. Read with
//! [`SessionStore::store_property`](crate::SessionStore::store_property), written with the
//! compare-and-set [`SessionStore::set_store_property`](crate::SessionStore::set_store_property).

use crate::error::{Error, Result};

/// A compare-and-set of a store property, for
/// [`SessionStore::set_store_property`](crate::SessionStore::set_store_property): set `name` to
/// `value` when its value is `expected` (`None`: when it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PropertyChange<'a> {
    /// The property.
    pub name: &'a str,
    /// The value the property must have for the change to happen; `None`: it must be absent.
    pub expected: Option<&'a str>,
    /// The value to set.
    pub value: &'a str,
}

impl<'a> PropertyChange<'a> {
    /// Sets `name` to `value` if it has no value yet.
    pub fn insert(name: &'a str, value: &'a str) -> Self {
        PropertyChange {
            name,
            expected: None,
            value,
        }
    }

    /// Sets `name` to `value` if its value is `expected` (`None`: if it has none).
    pub fn replace(name: &'a str, expected: Option<&'a str>, value: &'a str) -> Self {
        PropertyChange {
            name,
            expected,
            value,
        }
    }
}

/// The longest property name, in bytes.
pub const MAX_PROPERTY_NAME_BYTES: usize = 64;

/// The longest property value, in bytes.
pub const MAX_PROPERTY_VALUE_BYTES: usize = 4096;

/// Checks a store property name: 1 to [`MAX_PROPERTY_NAME_BYTES`] bytes of ASCII letters,
/// digits, `.`, `_`, `-` and `:`, starting with a letter. `InvalidInput` otherwise.
///
/// ```
/// use agentmem_core::check_property_name;
/// assert!(check_property_name("agentmem.encryption").is_ok());
/// assert!(check_property_name("").is_err());
/// assert!(check_property_name("a b").is_err());
/// assert!(check_property_name(".hidden").is_err());
/// ```
pub fn check_property_name(name: &str) -> Result<()> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':');
    let starts_with_letter = name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
    if name.len() > MAX_PROPERTY_NAME_BYTES || !starts_with_letter || !name.bytes().all(allowed) {
        return Err(Error::invalid_input(format!(
            "invalid store property name {:?}: 1 to {MAX_PROPERTY_NAME_BYTES} ASCII letters, \
             digits, `.`, `_`, `-` or `:`, starting with a letter",
            name.chars()
                .take(MAX_PROPERTY_NAME_BYTES)
                .collect::<String>()
        )));
    }
    Ok(())
}

/// Checks a store property value: at most [`MAX_PROPERTY_VALUE_BYTES`] bytes, without NUL
/// (which some databases' text cannot hold). `InvalidInput` otherwise.
pub fn check_property_value(value: &str) -> Result<()> {
    if value.len() > MAX_PROPERTY_VALUE_BYTES || value.contains('\0') {
        return Err(Error::invalid_input(format!(
            "a store property value must be at most {MAX_PROPERTY_VALUE_BYTES} bytes without \
             NUL (this one has {} bytes)",
            value.len()
        )));
    }
    Ok(())
}
