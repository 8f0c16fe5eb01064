//! Ranked search over messages and memory items, on one of two paths chosen at open.
//!
//! Both match on the `terms` field every message and memory item carries (see `codec.rs`):
//! the Porter stems of the words of its text ([`index_terms`](agentmem_core::search::index_terms)),
//! computed in the client, since no MongoDB text index stems as the search contract does
//! (MongoDB's English stemmer is Snowball's, and drops stop words). A query searches for its
//! [`query_terms`](agentmem_core::search::query_terms).
//!
//! - **`$text`** where the server has text indexes (MongoDB, nx-27017): one `$text` query per
//!   query term, run concurrently, scores summed per document. MongoDB's own multi-word `$text`
//!   score is the sum of its per-term scores, so this ranks the same, and it keeps "any term
//!   matches" on servers whose `$text` requires every word. The text indexes cover `terms`
//!   with `default_language: "none"` (no stemming of their own, no stop words), and each hit is
//!   checked against its stored terms, dropping the diacritic-insensitive extras of `$text`.
//! - **Fallback** where text indexes are refused (code 67, e.g. SecantusDB): a regex matching
//!   whole query terms in `terms` selects candidates on the server, and
//!   [`agentmem_core::search::rank`] (BM25 over the same terms) ranks their texts in the
//!   client.

use std::collections::{HashMap, HashSet};

use agentmem_core::search::rank;
use agentmem_core::support::{micros, stored_session_id};
use agentmem_core::{now, MemoryFilter, MemoryHit, MessageHit, Result, SessionId};
use futures_util::future::try_join_all;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use crate::codec::{
    all_docs, int_field, memory_from, message_from, str_field, without_terms, TERMS,
};
use crate::memories::{memory_selection, unexpired_alternatives};
use crate::store::MongoStore;

/// Per-word candidates fetched on the `$text` path, as a multiple of the requested limit
/// (plus a floor): enough that the merged top `limit` is the true top in practice.
const TEXT_OVERFETCH: usize = 4;
const TEXT_MIN_FETCH: usize = 50;

/// A regex matching any of `terms` as a whole term of a `terms` field (terms joined by single
/// spaces). Terms are letters and digits only, so they need no escaping, but anything else is
/// escaped anyway. Case-sensitive: stored and query terms are both lowercase.
fn any_term_regex(terms: &[String]) -> String {
    let escaped: Vec<String> = terms
        .iter()
        .map(|t| {
            t.chars()
                .flat_map(|c| {
                    if c.is_alphanumeric() {
                        vec![c]
                    } else {
                        vec!['\\', c]
                    }
                })
                .collect()
        })
        .collect();
    format!("(^| )({})( |$)", escaped.join("|"))
}

/// One document's match: the document and its summed score.
pub(crate) struct Scored {
    doc: Document,
    score: f64,
}

/// The stored fields of messages and memory items, for `$text` projections (which must list
/// them: some servers return only the score for a projection holding nothing else), with
/// `terms` for the check of each hit.
const MESSAGE_FIELDS: &[&str] = &[
    "session",
    "epoch",
    "seq",
    "id",
    "role",
    "content",
    "ts",
    "tool_call_id",
    "tool_name",
    "metadata",
    TERMS,
];
const MEMORY_FIELDS: &[&str] = &[
    "kind", "scope", "key", "text", "metadata", "created", "updated", "expires", TERMS,
];

/// Runs one `$text` query per term on `coll` (restricted by `filter` and, when there are
/// any, one of `alternatives`) and merges the hits whose stored `terms` really hold the term,
/// summing scores; best first.
///
/// Each alternative gets queries of its own (their hits are concatenated; the alternatives
/// are disjoint, so no document is counted twice) instead of one `$or`: some servers
/// (nx-27017) score every document 0 when `$text` shares its filter with a logical operator.
async fn text_search(
    coll: &Collection<Document>, (filter, alternatives): (&Document, &[Document]), fields: &[&str],
    terms: &[String], limit: usize,
) -> Result<Vec<Scored>> {
    let mut projection = doc! {"_score": {"$meta": "textScore"}};
    for f in fields {
        projection.insert(*f, 1);
    }
    let fetch = i64::try_from((limit * TEXT_OVERFETCH).max(TEXT_MIN_FETCH)).unwrap_or(i64::MAX);
    let no_alternative = [doc! {}];
    let alternatives = if alternatives.is_empty() {
        &no_alternative[..]
    } else {
        alternatives
    };
    let queries = terms.iter().flat_map(|term| {
        alternatives.iter().map(move |alternative| {
            let mut f = filter.clone();
            f.extend(alternative.clone());
            f.insert("$text", doc! {"$search": term.as_str()});
            (term, f)
        })
    });
    let per_term = try_join_all(queries.map(|(term, f)| {
        let projection = projection.clone();
        async move {
            let find = coll
                .find(f)
                .projection(projection)
                .sort(doc! {"_score": {"$meta": "textScore"}})
                .limit(fetch);
            let docs = all_docs(find).await?;
            Ok::<_, agentmem_core::Error>((term, docs))
        }
    }))
    .await?;
    let mut merged: HashMap<String, Scored> = HashMap::new();
    for (term, docs) in per_term {
        for mut d in docs {
            let score = match d.remove("_score") {
                Some(Bson::Double(s)) => s,
                Some(Bson::Int32(s)) => f64::from(s),
                Some(Bson::Int64(s)) => s as f64,
                _ => 0.0,
            };
            // Only this check reads the terms: the hit is kept without them.
            let held = match d.remove(TERMS) {
                Some(Bson::String(stored)) => stored.split(' ').any(|t| t == term.as_str()),
                _ => false,
            };
            if !held {
                continue;
            }
            let key = match d.get("_id") {
                Some(Bson::ObjectId(id)) => id.to_hex(),
                Some(Bson::String(s)) => s.clone(),
                other => format!("{other:?}"),
            };
            merged
                .entry(key)
                .and_modify(|m| m.score += score)
                .or_insert(Scored { doc: d, score });
        }
    }
    let mut hits: Vec<Scored> = merged.into_values().collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(hits)
}

/// The most candidates the regex fallback fetches and ranks: the newest ones, so a common
/// word in a huge store costs a bounded read.
const FALLBACK_CANDIDATES: i64 = 10_000;

/// Fetches the documents of `coll` (restricted by `filter`) whose `terms` hold any of
/// `terms`, the newest [`FALLBACK_CANDIDATES`] of them put oldest first by `order`, and ranks
/// their text (in `field`) with BM25; best first.
async fn fallback_search(
    coll: &Collection<Document>, filter: &Document, field: &str, order: Document, query: &str,
    terms: &[String],
) -> Result<Vec<Scored>> {
    let mut f = filter.clone();
    f.insert(TERMS, doc! {"$regex": any_term_regex(terms)});
    let newest_first: Document = order
        .iter()
        .map(|(key, direction)| {
            let ascending = direction.as_i32() != Some(-1) && direction.as_i64() != Some(-1);
            (
                key.clone(),
                mongodb::bson::Bson::Int32(if ascending { -1 } else { 1 }),
            )
        })
        .collect();
    let mut docs = all_docs(
        coll.find(f)
            .projection(without_terms())
            .sort(newest_first)
            .limit(FALLBACK_CANDIDATES),
    )
    .await?;
    docs.reverse();
    let texts: Vec<&str> = docs
        .iter()
        .map(|d| str_field(d, field))
        .collect::<Result<_>>()?;
    let ranked = rank(query, texts.iter().copied(), usize::MAX);
    let mut slots: Vec<Option<Document>> = docs.into_iter().map(Some).collect();
    Ok(ranked
        .into_iter()
        .filter_map(|(i, score)| {
            slots
                .get_mut(i)
                .and_then(Option::take)
                .map(|doc| Scored { doc, score })
        })
        .collect())
}

/// What a search looks through: `coll` restricted by `filter` and, when there are any, one
/// of `alternatives` (disjoint conditions, queried one by one on the `$text` path: see
/// [`text_search`]), with the text in `field`; `fields` are all the stored fields (for
/// `$text` projections), `order` the order in which the fallback fetches candidates (oldest
/// first).
pub(crate) struct Corpus<'a> {
    coll: Collection<Document>,
    filter: Document,
    alternatives: Vec<Document>,
    field: &'a str,
    fields: &'a [&'a str],
    order: Document,
}

impl MongoStore {
    /// The messages, of one session when given.
    pub(crate) fn message_corpus(&self, session: Option<&SessionId>) -> Corpus<'static> {
        let mut filter = doc! {};
        if let Some(session) = session {
            filter.insert("session", session.as_str());
        }
        Corpus {
            coll: self.messages(),
            filter,
            alternatives: Vec::new(),
            field: "content",
            fields: MESSAGE_FIELDS,
            order: doc! {"session": 1, "epoch": 1, "seq": 1},
        }
    }

    /// The memory items `filter` selects (its kind and scopes), less those expired now.
    pub(crate) fn memory_corpus(&self, filter: &MemoryFilter) -> Corpus<'static> {
        Corpus {
            coll: self.memories(),
            filter: memory_selection(filter),
            alternatives: unexpired_alternatives(micros(now())).to_vec(),
            field: "text",
            fields: MEMORY_FIELDS,
            order: doc! {"created": 1, "_id": 1},
        }
    }

    /// The documents of `corpus` holding any of `terms` (the terms of `query`), best first:
    /// ranked by `$text` where the server has text indexes (enough of them for `limit` hits),
    /// else by BM25 in the client.
    pub(crate) async fn scored(
        &self, corpus: &Corpus<'_>, query: &str, terms: &[String], limit: usize,
    ) -> Result<Vec<Scored>> {
        let Corpus {
            coll,
            filter,
            alternatives,
            field,
            fields,
            order,
        } = corpus;
        if self.features().text_search {
            text_search(coll, (filter, alternatives), fields, terms, limit).await
        } else {
            let mut filter = filter.clone();
            if !alternatives.is_empty() {
                filter.insert("$or", alternatives.clone());
            }
            fallback_search(coll, &filter, field, order.clone(), query, terms).await
        }
    }

    /// Each session's current epoch (of one session, when given).
    pub(crate) async fn current_epochs(
        &self, session: Option<&SessionId>,
    ) -> Result<HashMap<String, String>> {
        let mut filter = match session {
            Some(s) => doc! {"_id": s.as_str()},
            None => doc! {},
        };
        // Expired sessions are gone, though their documents may still be stored.
        filter.extend(crate::sessions::live_filter(micros(now())));
        let projection = doc! {"_id": 1, "epoch": 1};
        all_docs(self.sessions().find(filter).projection(projection))
            .await?
            .iter()
            .map(|d| {
                Ok((
                    str_field(d, "_id")?.to_string(),
                    str_field(d, "epoch")?.to_string(),
                ))
            })
            .collect()
    }
}

/// The message hits among `hits`: those of each session's current epoch (`epochs`), best
/// first, ties in conversation order, at most `limit`.
pub(crate) fn message_hits(
    hits: Vec<Scored>, epochs: &HashMap<String, String>, limit: usize,
) -> Result<Vec<MessageHit>> {
    let mut out = Vec::new();
    for hit in hits {
        let session = str_field(&hit.doc, "session")?;
        let epoch = str_field(&hit.doc, "epoch")?;
        if epochs.get(session).map(String::as_str) != Some(epoch) {
            continue;
        }
        let session = stored_session_id(session)?;
        // Ties keep conversation order.
        let seq = int_field(&hit.doc, "seq")?;
        out.push((hit.score, session, seq, message_from(&hit.doc)?));
    }
    out.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2.cmp(&b.2))
    });
    out.truncate(limit);
    Ok(out
        .into_iter()
        .map(|(score, session, _, message)| MessageHit {
            session,
            message,
            score,
        })
        .collect())
}

/// The memory hits among `hits`, each item once, best first (ties: older first, as listing
/// does), at most `limit`.
pub(crate) fn memory_hits(hits: Vec<Scored>, limit: usize) -> Result<Vec<MemoryHit>> {
    let mut out: Vec<MemoryHit> = Vec::new();
    let mut seen = HashSet::new();
    for hit in hits {
        let item = memory_from(&hit.doc)?;
        if seen.insert(item.id.clone()) {
            out.push(MemoryHit {
                item,
                score: hit.score,
            });
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.item.created_at.cmp(&b.item.created_at))
            .then_with(|| a.item.id.cmp(&b.item.id))
    });
    out.truncate(limit);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::search::query_terms;

    #[test]
    fn regex_is_an_alternation_of_whole_stemmed_terms() {
        let terms = query_terms("Rust, rusting! GCP-latency adopting 東京");
        assert_eq!(
            any_term_regex(&terms),
            "(^| )(rust|gcp|latenc|adopt|東京)( |$)"
        );
        assert_eq!(any_term_regex(&["a.b".to_string()]), "(^| )(a\\.b)( |$)");
    }
}
