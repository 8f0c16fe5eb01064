//! Placeholder.
/// Placeholder.
#[derive(Debug, Default)]
pub struct InMemory;
impl InMemory {
    /// Placeholder.
    pub fn new() -> Self { InMemory }
}
