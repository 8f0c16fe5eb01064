//! The client's half of ranked search: tokenizing text for the index kept inside Redis.
//!
//! Lua in Redis knows bytes, not Unicode letters, and cannot stem, so the terms are found
//! here with agentmem-core's tokenizer and Porter stemmer
//! ([`agentmem_core::search::index_terms`]) and sent along with each write; searches send
//! the query's terms ([`agentmem_core::search::query_terms`], through
//! [`agentmem_core::support::search_terms`]). The scripts store the postings and rank with
//! BM25 exactly as [`agentmem_core::search::rank`] does (same terms, same constants, same
//! formula, same order of summation), so scores match the client-side backends.

use std::collections::BTreeMap;

use agentmem_core::search::index_terms;
use agentmem_core::{Error, Result};
use serde_json::{json, Value};

/// One text's index entry: `{"l": term count, "t": {term: "frequency"}}`.
pub(crate) fn index_entry(text: &str) -> Value {
    entry_of(index_terms(text))
}

/// [`index_entry`] of the terms `tokenize` finds (schema version 4 indexed
/// [`agentmem_core::search::index_words`]).
#[cfg(test)]
pub(crate) fn entry_with(text: &str, tokenize: fn(&str) -> Vec<String>) -> Value {
    entry_of(tokenize(text))
}

/// The index entry of a text of terms `ws` (every occurrence).
fn entry_of(ws: Vec<String>) -> Value {
    let mut tf: BTreeMap<String, u64> = BTreeMap::new();
    for w in &ws {
        *tf.entry(w.clone()).or_insert(0) += 1;
    }
    // Frequencies as strings: the scripts pass them straight to HSET, and Redis would
    // otherwise format each Lua number anew.
    let tf: BTreeMap<String, String> = tf.into_iter().map(|(w, n)| (w, n.to_string())).collect();
    json!({ "l": ws.len(), "t": tf })
}

/// The index of a batch of messages as the session scripts take it (`index_batch` in
/// `prelude.lua`): the postings grouped per distinct term, so the script writes each term's
/// postings with one `APPEND` and does no work per message.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct BatchIndex {
    /// Terms of all the texts, every occurrence (for BM25's average document length).
    pub(crate) words: usize,
    /// Each distinct term, in byte order, with its postings: `k:frequency:length,` for each
    /// text `k` (0-based, in batch order) holding it.
    pub(crate) postings: BTreeMap<String, String>,
}

impl BatchIndex {
    /// Finds the terms of `texts` with [`index_terms`] and groups the postings.
    pub(crate) fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        Self::of_terms(texts.into_iter().map(index_terms))
    }

    /// [`new`](Self::new) with the terms `tokenize` finds (schema version 4 indexed
    /// [`agentmem_core::search::index_words`]).
    #[cfg(test)]
    pub(crate) fn with<'a>(
        texts: impl IntoIterator<Item = &'a str>, tokenize: fn(&str) -> Vec<String>,
    ) -> Self {
        Self::of_terms(texts.into_iter().map(tokenize))
    }

    /// The index of texts of the terms `texts` (each text's, every occurrence).
    fn of_terms(texts: impl IntoIterator<Item = Vec<String>>) -> Self {
        use std::fmt::Write;
        let mut index = BatchIndex::default();
        let mut tf: BTreeMap<String, u64> = BTreeMap::new();
        for (k, ws) in texts.into_iter().enumerate() {
            if ws.is_empty() {
                continue;
            }
            index.words += ws.len();
            tf.clear();
            for w in ws.iter() {
                *tf.entry(w.clone()).or_insert(0) += 1;
            }
            for (term, n) in &tf {
                let p = index.postings.entry(term.clone()).or_default();
                // Writing to a String cannot fail.
                let _ = write!(p, "{k}:{n}:{},", ws.len());
            }
        }
        index
    }
}

/// Parses a score the scripts format with `%.17g` (which round-trips an f64 exactly).
pub(crate) fn parse_score(text: &str) -> Result<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite())
        .ok_or_else(|| Error::corrupt(format!("search score {text:?} is not a number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_capped_as_every_index_is() {
        use agentmem_core::search::{MAX_INDEXED_WORDS, MAX_WORD_BYTES};
        let text: String = (0..MAX_INDEXED_WORDS + 5_000)
            .map(|i| format!("w{i} "))
            .collect::<String>()
            + &"x".repeat(MAX_WORD_BYTES + 1);
        let e = index_entry(&text);
        let terms = e["t"].as_object().expect("a terms object");
        assert_eq!(terms.len(), MAX_INDEXED_WORDS);
        assert!(terms.contains_key("w0") && !terms.contains_key(&format!("w{MAX_INDEXED_WORDS}")));
        assert_eq!(e["l"], MAX_INDEXED_WORDS);
    }

    #[test]
    fn entries_count_stemmed_terms_and_frequencies() {
        let e = index_entry("Rust, rusting and Грусть 42");
        assert_eq!(e["l"], 5);
        assert_eq!(e["t"]["rust"], "2");
        assert_eq!(e["t"]["грусть"], "1");
        assert_eq!(e["t"]["42"], "1");
        assert!(e["t"].get("rusting").is_none());
        assert_eq!(index_entry("!!!"), json!({"l": 0, "t": {}}));
        // Schema version 4's entries, which tests write to migrate: the words as they are.
        let old = entry_with("Rust, rusting", agentmem_core::search::index_words);
        assert_eq!(old, json!({"l": 2, "t": {"rust": "1", "rusting": "1"}}));
    }

    #[test]
    fn batches_group_postings_per_term() {
        let index = BatchIndex::new(["a b", "!!!", "b b", "Rust rusting"]);
        assert_eq!(index.words, 6);
        let postings: Vec<(&str, &str)> = index
            .postings
            .iter()
            .map(|(t, p)| (t.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            postings,
            [("a", "0:1:2,"), ("b", "0:1:2,2:2:2,"), ("rust", "3:2:2,")]
        );
        assert_eq!(BatchIndex::new(["..."]), BatchIndex::default());
    }

    #[test]
    fn scores_round_trip() {
        let s = 0.1f64 + 0.2;
        assert_eq!(parse_score(&format!("{s:.17e}")).ok(), Some(s));
        assert!(parse_score("nan").is_err());
    }
}
