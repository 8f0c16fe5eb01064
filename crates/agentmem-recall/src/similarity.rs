//! Keys and similarity: what a vector is stored under, and how two vectors compare.

use agentmem_core::VectorKey;
use sha2::{Digest, Sha256};

/// The key a text's vector is stored under: the SHA-256 of the text.
///
/// ```
/// use agentmem_recall::vector_key;
/// assert_eq!(vector_key("a"), vector_key("a"));
/// assert_ne!(vector_key("a"), vector_key("b"));
/// ```
pub fn vector_key(text: &str) -> VectorKey {
    VectorKey(Sha256::digest(text.as_bytes()).into())
}

/// The cosine similarity of two vectors (0 when either is all zeros or their lengths differ).
///
/// ```
/// use agentmem_recall::cosine;
/// assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
/// assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
/// assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}
