//! Ranked full-text search over a GIN-indexed `tsvector`, weighted by inverse document
//! frequency.
//!
//! The contract says words are runs of letters and digits, lowercased, each reduced to its
//! Porter stem exactly as SQLite FTS5's `porter` tokenizer does, and a document matches when
//! it holds the stem of any query word. PostgreSQL's parser splits text its own way (it keeps
//! `bob@example.com` or `v1.2` whole, and its idea of a letter depends on the database's
//! locale) and its `english` stemmer is Snowball, not Porter, so this crate does not use
//! `to_tsvector`. It builds the `tsvector` from [`agentmem_core::search::index_terms`] on the
//! client, with positions, and the query from [`agentmem_core::search::query_terms`]; both
//! travel as bind parameters (text cast to `tsvector` / `tsquery`). That is the `simple`
//! configuration's behaviour (no stop words, no stemming of its own) with exactly the matching
//! rule of every other backend.
//!
//! Ranking is BM25's inverse document frequency over `ts_rank`: a hit scores
//! `Σ idf(t) · ts_rank(tsv, t, 1)` over the query terms `t` it holds, with
//! `idf(t) = ln((N − df + 0.5) / (df + 0.5) + 1)`. `ts_rank(…, 1)` is term frequency divided
//! by `1 + log(length)`, so a short text using a word often ranks above a long one mentioning
//! it once; the idf makes a rare word weigh more than one found in half the rows (a speaker's
//! name). `df` is counted exactly over the searched set: messages of live sessions (of the
//! one session for a session scope), memory items passing the filter. `N` is the searched
//! set's size: a session's message count for a session scope; otherwise the table's row
//! estimate (`pg_class.reltuples`, kept by (auto)analyze; an exact count before the table is
//! first analyzed), which also counts expired rows not yet purged and, for memory items,
//! the items the filter leaves out, and is never below a term's `df`. `sql::ranked_search`
//! builds the statements that compute it.

use std::fmt::Write as _;

use agentmem_core::search::{index_terms, query_terms};
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

/// The `tsvector` text for `text`: each distinct term (a word's stem), quoted, with its
/// positions.
///
/// When the terms would overflow a `tsvector`, the terms that appear first are kept.
pub(crate) fn tsvector_literal(text: &str) -> String {
    let terms = index_terms(text);
    // Sorting (term, position) pairs groups each term's positions in ascending order, the
    // layout PostgreSQL keeps anyway, without a map or a list per term.
    let mut pairs: Vec<(&str, usize)> = terms
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

/// The query terms of `query`, each as the `tsquery` text matching it (`'term'`); none when
/// it has no words.
///
/// The statements match the OR of these and weigh each by its document frequency (see the
/// module docs). They are capped well below a tsquery's 32,768 nodes, none longer than a
/// lexeme: the terms every backend searches for.
pub(crate) fn tsquery_terms(query: &str) -> Vec<String> {
    query_terms(query)
        .iter()
        .map(|t| {
            let mut quoted = String::with_capacity(t.len() + 2);
            push_quoted(&mut quoted, t);
            quoted
        })
        .collect()
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
    fn tsvector_holds_stemmed_terms_with_positions() {
        assert_eq!(
            tsvector_literal("Mail bob@example.com, bob!"),
            "'bob':2,5 'com':4 'exampl':3 'mail':1"
        );
        // Every form of a word is one term, at each of its positions.
        assert_eq!(
            tsvector_literal("Adopting cats; adopted, adoption."),
            "'adopt':1,3,4 'cat':2"
        );
        assert_eq!(tsvector_literal("!!!"), "");
        let long = "x".repeat(3000);
        assert_eq!(tsvector_literal(&format!("{long} ok")), "'ok':1");
    }

    #[test]
    fn query_terms_are_distinct_stems_each_quoted() {
        assert_eq!(tsquery_terms("Rust, rust & Go|"), ["'rust'", "'go'"]);
        assert_eq!(tsquery_terms("adopting adopted cats"), ["'adopt'", "'cat'"]);
        assert!(tsquery_terms("  ?! ").is_empty());
        // The same terms, in the same order, as the core's query_terms.
        let query = "Ünïcode, RUST rust; 東京 go Go rust2 running";
        let expected: Vec<String> = agentmem_core::search::query_terms(query)
            .iter()
            .map(|w| format!("'{w}'"))
            .collect();
        assert_eq!(tsquery_terms(query), expected);
    }

    #[test]
    fn long_queries_are_cut_to_what_every_backend_searches() {
        let query: String = (0..20_000).map(|i| format!("q{i} ")).collect();
        let terms = tsquery_terms(&query);
        assert_eq!(terms.len(), agentmem_core::search::MAX_QUERY_WORDS);
        assert_eq!(terms[..2], ["'q0'", "'q1'"], "the first words are kept");
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
