//! The client's half of ranked search: tokenizing text for the index kept inside Redis.
//!
//! Lua in Redis knows bytes, not Unicode letters, so words are found here with
//! agentmem-core's tokenizer ([`agentmem_core::search::words`]) and sent along with each
//! write; the scripts store the postings and rank with BM25 exactly as
//! [`agentmem_core::search::rank`] does (same constants, same formula, same order of
//! summation), so scores match the client-side backends.

use std::collections::BTreeMap;

use agentmem_core::search::index_words;
use agentmem_core::{Error, Result};
use serde_json::{json, Value};

/// One text's index entry: `{"l": word count, "t": {term: "frequency"}}`.
pub(crate) fn index_entry(text: &str) -> Value {
    let ws = index_words(text);
    let mut tf: BTreeMap<String, u64> = BTreeMap::new();
    for w in &ws {
        *tf.entry(w.clone()).or_insert(0) += 1;
    }
    // Frequencies as strings: the scripts pass them straight to HSET, and Redis would
    // otherwise format each Lua number anew.
    let tf: BTreeMap<String, String> = tf.into_iter().map(|(w, n)| (w, n.to_string())).collect();
    json!({ "l": ws.len(), "t": tf })
}

/// The index of a batch of messages as the session scripts take it (`push_messages` in
/// `prelude.lua`): the postings grouped per distinct term, so the script writes each term's
/// postings with one `APPEND` and does no work per message.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct BatchIndex {
    /// Words of all the texts (for BM25's average document length).
    pub(crate) words: usize,
    /// Each distinct term, in byte order, with its postings: `k:frequency:length,` for each
    /// text `k` (0-based, in batch order) holding it.
    pub(crate) postings: BTreeMap<String, String>,
}

impl BatchIndex {
    /// Tokenizes `texts` with agentmem-core's index tokenizer and groups the postings.
    pub(crate) fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        use std::fmt::Write;
        let mut index = BatchIndex::default();
        let mut tf: BTreeMap<String, u64> = BTreeMap::new();
        for (k, text) in texts.into_iter().enumerate() {
            let ws = index_words(text);
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
    fn entries_count_words_and_frequencies() {
        let e = index_entry("Rust, rust and Грусть 42");
        assert_eq!(e["l"], 5);
        assert_eq!(e["t"]["rust"], "2");
        assert_eq!(e["t"]["грусть"], "1");
        assert_eq!(e["t"]["42"], "1");
        assert_eq!(index_entry("!!!"), json!({"l": 0, "t": {}}));
    }

    #[test]
    fn batches_group_postings_per_term() {
        let index = BatchIndex::new(["a b", "!!!", "b b", "Rust"]);
        assert_eq!(index.words, 5);
        let postings: Vec<(&str, &str)> = index
            .postings
            .iter()
            .map(|(t, p)| (t.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            postings,
            [("a", "0:1:2,"), ("b", "0:1:2,2:2:2,"), ("rust", "3:1:1,")]
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
