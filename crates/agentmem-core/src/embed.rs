//! [`Embedder`]: turns texts into vectors for semantic search. Implementations live outside
//! core (`agentmem-embed`: a local model in pure Rust, an OpenAI-compatible HTTP client); the
//! recall engine and every search surface take an `Arc<dyn Embedder>`.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::error::Result;
use crate::vector::ModelIdentity;

/// A text embedding model.
///
/// ```
/// use agentmem_core::{async_trait, Embedder, ModelIdentity, Result};
///
/// /// Two dimensions: how many `a`s and how many `b`s.
/// #[derive(Debug)]
/// struct Letters(ModelIdentity);
///
/// #[async_trait]
/// impl Embedder for Letters {
///     fn model(&self) -> &ModelIdentity {
///         &self.0
///     }
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
///         Ok(texts
///             .iter()
///             .map(|t| vec![t.matches('a').count() as f32, t.matches('b').count() as f32])
///             .collect())
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let letters = Letters(ModelIdentity { id: "letters".into(), dimensions: 2, normalized: false });
/// assert_eq!(letters.embed(&["abba".into()]).await?, [vec![2.0, 2.0]]);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait Embedder: Debug + Send + Sync + 'static {
    /// The model: its name, dimensions and whether its vectors have unit length.
    fn model(&self) -> &ModelIdentity;

    /// One vector per text, in order, each of [`ModelIdentity::dimensions`] components.
    /// Blocking work (running a local model) happens off the async threads.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;

    /// How many texts one [`embed`](Self::embed) call should carry at most (the indexer
    /// batches by it).
    fn batch_size(&self) -> usize {
        32
    }
}
