//! The reliability and security battery of agentmem (issue 11: C2, C3, D).
//!
//! The battery itself is the integration tests under `tests/`; this library holds what those
//! tests share with the helper binary `agentmem-stress`, which the tests run as child
//! processes: how a test message is built and recognised ([`tagged`]), the audit of a stored
//! transcript against the acknowledgements a child printed ([`audit()`]), the line protocol of
//! the helper ([`protocol`]) and a small seeded random number generator ([`rng`]) so every
//! randomised trial can be replayed from its seed.
#![forbid(unsafe_code)]

pub mod audit;
pub mod protocol;
pub mod rng;
pub mod tagged;

pub use audit::{audit, Audit};
pub use rng::SplitMix64;
