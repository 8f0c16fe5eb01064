//! Client-side ranked search (Okapi BM25), for backends without a server-side text index.
//!
//! Words are maximal runs of letters and digits, lowercased; each is indexed and searched as
//! its Porter stem ([`stem`]), its *term*, so "adopting" finds "adoption". A document matches
//! when it holds any query term. Backends with their own index (SQLite FTS5, Postgres
//! tsvector, MongoDB `$text`) rank with it instead, under the same matching rule.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

mod document;
mod stem;

pub use document::DocumentTerms;
pub use stem::stem;

/// Splits `text` into lowercase words of letters and digits.
///
/// ```
/// assert_eq!(agentmem_core::search::words("Hello, GCP-latency!"), ["hello", "gcp", "latency"]);
/// ```
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Words longer than this (bytes) are neither indexed nor searched, on every backend
/// (PostgreSQL's limit for one lexeme).
pub const MAX_WORD_BYTES: usize = 2046;

/// The most distinct words a query keeps, the first ones: a query may be a whole message
/// (the agent layer searches with the last user message), and no backend should build a
/// query or a script argument of unbounded size from it.
pub const MAX_QUERY_WORDS: usize = 1024;

/// The most distinct words one text contributes to a search index, the first ones (a text of
/// more distinct words is still stored whole; its later words are not searchable).
pub const MAX_INDEXED_WORDS: usize = 10_000;

/// English function words a query drops when it has other words: matching "the" or "did"
/// finds nearly every text, so on every backend they only add noise to an OR ranking (on
/// LoCoMo-10 dropping them lifts keyword hit@20 from 0.655 to the figure in BENCHMARKS.md).
/// The list is NLTK's English stop words, without negations.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "might",
    "more",
    "most",
    "my",
    "myself",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lowercase) is one of [`STOP_WORDS`].
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// The distinct words of a query, in order of first appearance, without [`STOP_WORDS`] unless
/// the query has nothing else: at most [`MAX_QUERY_WORDS`], none longer than
/// [`MAX_WORD_BYTES`].
///
/// ```
/// use agentmem_core::search::query_words;
/// assert_eq!(query_words("When did Caroline go to the park?"), ["caroline", "go", "park"]);
/// assert_eq!(query_words("what is it"), ["what", "is", "it"]);
/// ```
pub fn query_words(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let all: Vec<String> = words(query)
        .into_iter()
        .filter(|w| w.len() <= MAX_WORD_BYTES && seen.insert(w.clone()))
        .collect();
    let content: Vec<&String> = all.iter().filter(|w| !is_stop_word(w)).collect();
    if content.is_empty() {
        return all.into_iter().take(MAX_QUERY_WORDS).collect();
    }
    content.into_iter().take(MAX_QUERY_WORDS).cloned().collect()
}

/// The words of `text` a search index holds, in order: every occurrence of its first
/// [`MAX_INDEXED_WORDS`] distinct words, none longer than [`MAX_WORD_BYTES`]. Every backend
/// with an index of its own, and the client-side ranking, count these.
///
/// ```
/// use agentmem_core::search::index_words;
/// assert_eq!(index_words("Rust, rust and Go"), ["rust", "rust", "and", "go"]);
/// let long = "x".repeat(3000);
/// assert_eq!(index_words(&format!("{long} ok")), ["ok"]);
/// ```
pub fn index_words(text: &str) -> Vec<String> {
    capped(words(text))
}

/// Every occurrence of the first [`MAX_INDEXED_WORDS`] distinct words of `words`, dropping
/// words longer than [`MAX_WORD_BYTES`].
fn capped(words: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut distinct = HashSet::new();
    let mut out = Vec::new();
    for w in words {
        if w.len() > MAX_WORD_BYTES {
            continue;
        }
        if distinct.contains(&w) || distinct.len() < MAX_INDEXED_WORDS {
            distinct.insert(w.clone());
            out.push(w);
        }
    }
    out
}

/// The terms of `text` a search index holds: the [stems](stem) of its words, every
/// occurrence, in order, with the caps of [`index_words`] counted in distinct terms. Every
/// backend that tokenizes on the client indexes these.
///
/// ```
/// use agentmem_core::search::index_terms;
/// assert_eq!(index_terms("Adopting, adopted: adoption!"), ["adopt", "adopt", "adopt"]);
/// ```
pub fn index_terms(text: &str) -> Vec<String> {
    // A word over MAX_WORD_BYTES is its own stem (only words up to 64 bytes are stemmed),
    // so `capped` drops it as `index_words` does.
    capped(words(text).into_iter().map(|w| stem(&w).into_owned()))
}

/// The distinct terms a query searches for: the [stems](stem) of its [`query_words`], in
/// order of first appearance.
///
/// ```
/// use agentmem_core::search::query_terms;
/// assert_eq!(query_terms("Who adopted the adopting cats?"), ["adopt", "cat"]);
/// ```
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    query_words(query)
        .into_iter()
        .map(|w| stem(&w).into_owned())
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Ranks `documents` against `query` with BM25 over [terms](index_terms) and returns
/// `(index, score)` of the matching ones, best first (ties keep document order), at most
/// `limit`. Each document is tokenized and stemmed; to rank the same documents again and
/// again, keep their [`DocumentTerms`] and rank those with [`rank_terms`] (the same scores).
///
/// ```
/// use agentmem_core::search::rank;
/// let docs = ["rust is fast", "python", "rust rust rust"];
/// let hits = rank("Rust", docs.iter().copied(), 10);
/// assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [2, 0]);
/// ```
pub fn rank<'a>(
    query: &str, documents: impl IntoIterator<Item = &'a str>, limit: usize,
) -> Vec<(usize, f64)> {
    // One document's terms at a time: nothing is kept of those that do not match.
    rank_documents(query, documents.into_iter().map(DocumentTerms::of), limit)
}

/// [`rank`] over documents already [counted](DocumentTerms::of): the same scores and the same
/// order as `rank` over their texts, without tokenizing them again. A backend that holds its
/// documents in memory keeps their terms beside them and ranks with this.
///
/// ```
/// use agentmem_core::search::{rank, rank_terms, DocumentTerms};
/// let texts = ["rust is fast", "python", "rust rust rust"];
/// let docs: Vec<DocumentTerms> = texts.iter().map(|t| DocumentTerms::of(t)).collect();
/// assert_eq!(rank_terms("Rusting", &docs, 10), rank("Rusting", texts, 10));
/// ```
pub fn rank_terms<'a>(
    query: &str, documents: impl IntoIterator<Item = &'a DocumentTerms>, limit: usize,
) -> Vec<(usize, f64)> {
    rank_documents(query, documents, limit)
}

/// BM25 for [`rank`] and [`rank_terms`]. The average length and the idf are over all
/// `documents`; ties are broken by document order.
fn rank_documents<D: Borrow<DocumentTerms>>(
    query: &str, documents: impl IntoIterator<Item = D>, limit: usize,
) -> Vec<(usize, f64)> {
    let terms = query_terms(query);
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    // One pass: the lengths of all documents, and for the matching ones their counts of the
    // query terms (`terms.len()` a document, one after another in `counts`).
    let mut matching: Vec<(usize, usize)> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut tf = vec![0u32; terms.len()];
    let mut doc_freq = vec![0u32; terms.len()];
    let mut total_len = 0usize;
    let mut n_docs = 0usize;
    for (index, doc) in documents.into_iter().enumerate() {
        let doc = doc.borrow();
        n_docs += 1;
        total_len += doc.len();
        let mut any = false;
        for (f, term) in tf.iter_mut().zip(&terms) {
            *f = doc.count(term);
            any |= *f > 0;
        }
        if any {
            for (df, &f) in doc_freq.iter_mut().zip(&tf) {
                if f > 0 {
                    *df += 1;
                }
            }
            counts.extend_from_slice(&tf);
            matching.push((index, doc.len()));
        }
    }
    if matching.is_empty() {
        return Vec::new();
    }
    let avg_len = (total_len as f64 / n_docs as f64).max(1.0);
    let idf: Vec<f64> = doc_freq
        .iter()
        .map(|&df| {
            let df = df as f64;
            ((n_docs as f64 - df + 0.5) / (df + 0.5) + 1.0).ln()
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = matching
        .into_iter()
        .zip(counts.chunks_exact(terms.len()))
        .map(|((index, len), tf)| {
            let norm = K1 * (1.0 - B + B * len as f64 / avg_len);
            let score = tf
                .iter()
                .zip(&idf)
                .map(|(&f, &idf)| {
                    let f = f as f64;
                    idf * f * (K1 + 1.0) / (f + norm)
                })
                .sum();
            (index, score)
        })
        .collect();
    // Best first, ties in document order: a total order (indexes differ), so selecting the
    // best `limit` and sorting only those gives what sorting all would.
    let order = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, order);
        scored.truncate(limit);
    }
    scored.sort_by(order);
    scored
}

/// Counts how often each query term occurs in `document`; a cheap tie-breaker for backends.
pub fn term_counts(query: &str, document: &str) -> HashMap<String, u32> {
    let terms = query_terms(query);
    let mut counts = HashMap::new();
    for t in index_terms(document) {
        if terms.contains(&t) {
            *counts.entry(t).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(super::STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(super::is_stop_word("the") && !super::is_stop_word("not"));
    }

    use super::*;

    #[test]
    fn more_occurrences_in_shorter_text_rank_first() {
        let docs = [
            "kubernetes kubernetes kubernetes cluster",
            "a long text that mentions kubernetes only once among many other words here",
            "nothing relevant",
        ];
        let hits = rank("Kubernetes", docs.iter().copied(), 10);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [0, 1]);
        assert!(hits[0].1 > hits[1].1 && hits[1].1 > 0.0);
    }

    #[test]
    fn queries_and_indexes_are_bounded() {
        let query: String = (0..5_000).map(|i| format!("q{i} q{i} ")).collect();
        let terms = query_words(&query);
        assert_eq!(terms.len(), MAX_QUERY_WORDS);
        assert_eq!((terms[0].as_str(), terms[1].as_str()), ("q0", "q1"));
        let long = "y".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(query_words(&format!("{long} ok")), ["ok"]);
        // A document beyond the index cap is ranked on its first words only.
        let doc: String = (0..MAX_INDEXED_WORDS + 10)
            .map(|i| format!("d{i} "))
            .collect();
        assert_eq!(rank("d0", [doc.as_str()], 10).len(), 1);
        assert!(rank(&format!("d{}", MAX_INDEXED_WORDS + 5), [doc.as_str()], 10).is_empty());
    }

    #[test]
    fn any_word_matches_and_limit_applies() {
        let docs = ["alpha", "beta", "gamma"];
        assert_eq!(rank("alpha beta", docs.iter().copied(), 10).len(), 2);
        assert_eq!(rank("alpha beta", docs.iter().copied(), 1).len(), 1);
        assert!(rank("!!!", docs.iter().copied(), 10).is_empty());
        assert!(rank("delta", docs.iter().copied(), 10).is_empty());
    }

    #[test]
    fn inflections_match_and_count_as_one_term() {
        let advice = "I contacted my mentor for adoption advice";
        let found: Vec<usize> = rank("adopted cat", [advice, "adopting a dog", "cats"], 10)
            .into_iter()
            .map(|(index, _)| index)
            .collect();
        assert_eq!(found, [2, 1, 0], "the shortest text first");
        assert_eq!(term_counts("adopt", "adopted, adopting")["adopt"], 2);
    }

    #[test]
    fn document_terms_count_the_index_terms() {
        let texts = [
            "",
            "?! --",
            "Adopting, adopted: adoption! The cat and the CATS.",
            "Grüße, мир! 東京 мир Grüße grüße",
            "a b c a b a zzz 42 42 x42",
        ];
        for text in texts {
            let doc = DocumentTerms::of(text);
            let terms = index_terms(text);
            assert_eq!(doc.len(), terms.len(), "{text:?}");
            assert_eq!(doc.is_empty(), terms.is_empty());
            let distinct: HashSet<&String> = terms.iter().collect();
            assert_eq!(doc.terms().count(), distinct.len());
            for term in &terms {
                let n = terms.iter().filter(|t| *t == term).count();
                assert_eq!(doc.count(term) as usize, n, "{term:?} in {text:?}");
            }
            assert!(doc
                .terms()
                .all(|(t, n)| n > 0 && terms.iter().any(|w| w == t)));
            assert!(doc.terms().zip(doc.terms().skip(1)).all(|(a, b)| a.0 < b.0));
            for absent in ["", "dog", "ad", "adopts", "zzzz", "~"] {
                assert_eq!(doc.count(absent), 0, "{absent:?} in {text:?}");
            }
        }
    }

    #[test]
    fn ranking_terms_ranks_as_ranking_texts() {
        // Many ties (equal texts), several limits below and above the matches.
        let words = [
            "rust", "rusting", "go", "cat", "cats", "the", "мир", "東京", "42",
        ];
        let texts: Vec<String> = (0..300usize)
            .map(|i| {
                (0..(i * 7 % 11))
                    .map(|j| words[(i * 3 + j * j) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let docs: Vec<DocumentTerms> = texts.iter().map(|t| DocumentTerms::of(t)).collect();
        for query in [
            "rust",
            "cat go",
            "the",
            "мир 東京 42",
            "nothing",
            "",
            "rusted cats",
        ] {
            let all = rank(query, texts.iter().map(String::as_str), usize::MAX);
            for limit in [0, 1, 3, 10, 100, 1000] {
                let hits = rank_terms(query, &docs, limit);
                assert_eq!(hits, rank(query, texts.iter().map(String::as_str), limit));
                assert_eq!(hits[..], all[..limit.min(all.len())], "{query:?} {limit}");
            }
        }
    }

    #[test]
    fn unicode_words() {
        assert_eq!(words("Grüße, мир! 東京"), ["grüße", "мир", "東京"]);
        assert_eq!(term_counts("мир", "мир мир")["мир"], 2);
    }
}
