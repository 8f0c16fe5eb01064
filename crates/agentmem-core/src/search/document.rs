//! [`DocumentTerms`]: what ranking needs of one document, computed once, so that a backend
//! that keeps its documents in memory can rank them again and again without tokenizing and
//! stemming them on every query.

use super::index_terms;

/// The [index terms](index_terms) of one document, counted: how often it holds each distinct
/// term, and how many terms it holds in all (repeats included, BM25's document length).
/// [`rank_terms`](super::rank_terms) ranks these exactly as [`rank`](super::rank) ranks the
/// texts they were made [of](DocumentTerms::of).
///
/// Memory: the value itself is 40 bytes (on 64-bit targets), plus two heap blocks: the bytes of
/// the document's distinct terms, one after another, and 8 bytes a distinct term (where it
/// ends, and its count). Terms are stems, never longer than their words, so a document costs
/// at most 40 bytes, its text's length and 8 bytes a distinct word (and the allocator's due
/// for two blocks); a note of a dozen distinct words of 5 letters, about 200 bytes.
///
/// ```
/// use agentmem_core::search::DocumentTerms;
/// let doc = DocumentTerms::of("Adopting cats; adopted a cat!");
/// assert_eq!(doc.len(), 5);
/// assert_eq!((doc.count("adopt"), doc.count("cat"), doc.count("a")), (2, 2, 1));
/// assert_eq!(doc.count("dog"), 0);
/// assert_eq!(doc.terms().collect::<Vec<_>>(), [("a", 1), ("adopt", 2), ("cat", 2)]);
/// assert!(DocumentTerms::of("?!").is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentTerms {
    /// The distinct terms in byte order, one after another.
    text: Box<str>,
    /// For each distinct term, in the same order: where it ends in `text`, and how often the
    /// document holds it.
    entries: Box<[(u32, u32)]>,
    /// How many terms the document holds, repeats included.
    len: usize,
}

impl DocumentTerms {
    /// The terms of `text`: its [`index_terms`], counted.
    pub fn of(text: &str) -> Self {
        let mut terms = index_terms(text);
        let len = terms.len();
        terms.sort_unstable();
        let mut joined = String::new();
        let mut entries = Vec::new();
        for same in terms.chunk_by(|a, b| a == b) {
            joined.push_str(&same[0]);
            // At most `MAX_INDEXED_WORDS` distinct terms of at most `MAX_WORD_BYTES` each: the
            // offsets fit; a count does unless the text has over 4 billion words.
            entries.push((to_u32(joined.len()), to_u32(same.len())));
        }
        DocumentTerms {
            text: joined.into_boxed_str(),
            entries: entries.into_boxed_slice(),
            len,
        }
    }

    /// How many terms the document holds, repeats included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the document holds no term.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How often the document holds `term` (a stem, as [`query_terms`](super::query_terms)
    /// gives); 0 when it does not.
    pub fn count(&self, term: &str) -> u32 {
        let (mut low, mut high) = (0, self.entries.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return self.entries[mid].1,
            }
        }
        0
    }

    /// The distinct terms with their counts, in byte order.
    pub fn terms(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        (0..self.entries.len()).map(|i| (self.term(i), self.entries[i].1))
    }

    /// The `i`th distinct term.
    fn term(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.entries[i - 1].0 as usize,
        };
        &self.text[start..self.entries[i].0 as usize]
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
