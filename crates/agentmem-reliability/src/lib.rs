// The crate documentation is the README (also shown on GitHub). The crate is not published, so
// its links point to the sources there; the definitions below come first, so rustdoc links to
// (and checks) the items.
//! [`tagged`]: crate::tagged
//! [`audit()`]: crate::audit()
//! [`Audit`]: crate::Audit
//! [`protocol`]: crate::protocol
//! [`rng`]: crate::rng
//! [`SplitMix64`]: crate::SplitMix64
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, clippy::unwrap_used)]

pub mod audit;
pub mod protocol;
pub mod rng;
pub mod tagged;

pub use audit::{audit, Audit};
pub use rng::SplitMix64;
