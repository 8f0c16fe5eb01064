//! Ranked full-text search over a GIN-indexed `tsvector` with `ts_rank`.
//!
//! The contract says words are runs of letters and digits, lowercased, and a document
//! matches when it holds any query word. PostgreSQL's parser splits text its own way (it
//! keeps `bob@example.com` or `v1.2` whole, and its idea of a letter depends on the
//! database's locale), so this crate does not use `to_tsvector`. It builds the `tsvector`
//! from [`agentmem_core::search::words`] on the client, with positions, and the `tsquery` as
//! an OR of [`agentmem_core::search::query_words`]; both travel as bind parameters (text cast
//! to `tsvector` / `tsquery`). That is the `simple` configuration's behaviour (no stemming,
//! no stop words) with exactly the matching rule of every other backend.
//!
//! Ranking is `ts_rank(tsv, query, 1)`: term frequency, divided by `1 + log(length)`, so a
//! short text using the word often ranks above a long one mentioning it once.

use std::fmt::Write as _;

use agentmem_core::search::{index_words, query_words};
use agentmem_core::support::stored_session_id;
use agentmem_core::{MemoryHit, MessageHit, Result};
use tokio_postgres::Row;

use crate::codec::{get, message_from_row};
use crate::memories::memory_from_row;

/// PostgreSQL keeps at most this many positions per lexeme.
const MAX_POSITIONS: usize = 256;
/// Positions above this are stored as this.
const MAX_POSITION: usize = 16_383;
/// Lexemes with their positions must take under 1 MiB in one `tsvector`; stay below. Text
/// beyond that (a message of several hundred kilobytes of distinct words) is not indexed.
const MAX_TSVECTOR_BYTES: usize = 1_000_000;

/// The `tsvector` text for `text`: each distinct word, quoted, with its positions.
///
/// When the words would overflow a `tsvector`, the words that appear first are kept.
pub(crate) fn tsvector_literal(text: &str) -> String {
    let words = index_words(text);
    // Sorting (word, position) pairs groups each word's positions in ascending order, the
    // layout PostgreSQL keeps anyway, without a map or a list per word.
    let mut pairs: Vec<(&str, usize)> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_str(), (i + 1).min(MAX_POSITION)))
        .collect();
    pairs.sort_unstable();

    // Each word with the range of its positions in `flat`, and what it costs inside the
    // stored tsvector: its bytes padded to even, a position count, two bytes per position.
    let mut flat: Vec<usize> = Vec::with_capacity(pairs.len());
    let mut groups: Vec<(&str, std::ops::Range<usize>, usize)> = Vec::new();
    let mut total = 0usize;
    let mut rest = pairs.as_slice();
    while let Some(&(word, _)) = rest.first() {
        let run = rest.iter().take_while(|(w, _)| *w == word).count();
        let (group, tail) = rest.split_at(run);
        rest = tail;
        let start = flat.len();
        for &(_, pos) in group {
            // Positions past MAX_POSITION collapse into one; PostgreSQL keeps 256 per word.
            if flat.len() == start
                || (flat.last() != Some(&pos) && flat.len() - start < MAX_POSITIONS)
            {
                flat.push(pos);
            }
        }
        let cost = word.len().div_ceil(2) * 2 + 2 + 2 * (flat.len() - start);
        total += cost;
        groups.push((word, start..flat.len(), cost));
    }
    if total > MAX_TSVECTOR_BYTES {
        // Rare (hundreds of kilobytes of distinct words): keep the words seen first.
        let mut by_first: Vec<usize> = (0..groups.len()).collect();
        by_first.sort_unstable_by_key(|&g| flat[groups[g].1.start]);
        let mut keep = vec![false; groups.len()];
        let mut size = 0;
        for g in by_first {
            size += groups[g].2;
            if size > MAX_TSVECTOR_BYTES {
                break;
            }
            keep[g] = true;
        }
        let mut kept = keep.into_iter();
        groups.retain(|_| kept.next().unwrap_or(false));
    }

    let mut out = String::with_capacity(text.len() + flat.len() * 4);
    for (word, range, _) in &groups {
        if !out.is_empty() {
            out.push(' ');
        }
        push_quoted(&mut out, word);
        for (k, pos) in flat[range.clone()].iter().enumerate() {
            out.push(if k == 0 { ':' } else { ',' });
            let _ = write!(out, "{pos}");
        }
    }
    out
}

/// The `tsquery` text matching any word of `query`; `None` when it has no words.
pub(crate) fn tsquery_literal(query: &str) -> Option<String> {
    let mut out = String::new();
    // The words every backend searches for (capped well below a tsquery's 32,768 nodes, and
    // none longer than a lexeme).
    for w in query_words(query) {
        if !out.is_empty() {
            out.push_str(" | ");
        }
        push_quoted(&mut out, &w);
    }
    (!out.is_empty()).then_some(out)
}

/// Appends `'word'`, doubling quotes and backslashes as the tsvector/tsquery syntax wants.
/// Words are letters and digits only, so this never triggers today; it keeps the literal
/// well-formed whatever the word rule becomes.
fn push_quoted(out: &mut String, word: &str) {
    out.push('\'');
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
}

/// A row of the `search_messages` / `search_session` statements.
pub(crate) fn message_hit(row: &Row) -> Result<MessageHit> {
    Ok(MessageHit {
        session: stored_session_id(get::<String>(row, 0)?)?,
        message: message_from_row(row, 1)?,
        score: get(row, 9)?,
    })
}

/// A row of the `memory_search` (or `memory_search_in_scopes`) statement.
pub(crate) fn memory_hit(row: &Row) -> Result<MemoryHit> {
    Ok(MemoryHit {
        item: memory_from_row(row)?,
        score: get(row, 10)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsvector_uses_agentmem_words_with_positions() {
        assert_eq!(
            tsvector_literal("Mail bob@example.com, bob!"),
            "'bob':2,5 'com':4 'example':3 'mail':1"
        );
        assert_eq!(tsvector_literal("!!!"), "");
        let long = "x".repeat(3000);
        assert_eq!(tsvector_literal(&format!("{long} ok")), "'ok':1");
    }

    #[test]
    fn tsquery_is_an_or_of_distinct_words() {
        assert_eq!(
            tsquery_literal("Rust, rust & Go|"),
            Some("'rust' | 'go'".into())
        );
        assert_eq!(tsquery_literal("  ?! "), None);
        // The same words, in the same order, as the core's query_words.
        let query = "Ünïcode, RUST rust; 東京 go Go rust2";
        let expected: Vec<String> = agentmem_core::search::query_words(query)
            .iter()
            .map(|w| format!("'{w}'"))
            .collect();
        assert_eq!(tsquery_literal(query), Some(expected.join(" | ")));
    }

    #[test]
    fn long_queries_are_cut_to_what_every_backend_searches() {
        let query: String = (0..20_000).map(|i| format!("q{i} ")).collect();
        let literal = tsquery_literal(&query).expect("words");
        let kept = agentmem_core::search::MAX_QUERY_WORDS;
        assert_eq!(literal.matches(" | ").count(), kept - 1);
        assert!(
            literal.starts_with("'q0' | 'q1'"),
            "the first words are kept"
        );
    }

    #[test]
    fn quoting_doubles_quotes_and_backslashes() {
        let mut s = String::new();
        push_quoted(&mut s, r"it's\");
        assert_eq!(s, r"'it''s\\'");
    }

    #[test]
    fn positions_are_capped() {
        let text = "a ".repeat(300);
        let lit = tsvector_literal(&text);
        assert_eq!(lit.matches(',').count(), MAX_POSITIONS - 1);
    }
}
