//! How keyword and vector rankings are combined: [`SearchMode`] and [`Fusion`].

use agentmem_core::{Error, Result};

agentmem_core::name_enum! {
    /// How a search ranks, named `keyword`, `semantic` or `hybrid`.
    ///
    /// ```
    /// use agentmem_recall::SearchMode;
    /// assert_eq!("semantic".parse::<SearchMode>().unwrap(), SearchMode::Semantic);
    /// assert_eq!(SearchMode::Hybrid.to_string(), "hybrid");
    /// assert!("fuzzy".parse::<SearchMode>().is_err());
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum SearchMode {
        /// The store's keyword ranking (BM25) alone.
        Keyword = "keyword",
        /// Cosine similarity of stored vectors alone (texts not embedded yet are not found).
        Semantic = "semantic",
        /// Both, fused by weighted reciprocal rank ([`Fusion`]).
        #[default]
        Hybrid = "hybrid",
    }
    from_str("search mode");
}

impl SearchMode {
    /// The mode a search runs in: `asked`, or by default hybrid when what is searched is
    /// embedded (the store URL names an embedder, and `embed=messages` for messages), else
    /// keyword.
    ///
    /// ```
    /// use agentmem_recall::SearchMode;
    /// assert_eq!(SearchMode::chosen(None, true), SearchMode::Hybrid);
    /// assert_eq!(SearchMode::chosen(None, false), SearchMode::Keyword);
    /// assert_eq!(SearchMode::chosen(Some(SearchMode::Semantic), false), SearchMode::Semantic);
    /// ```
    pub fn chosen(asked: Option<SearchMode>, embedded: bool) -> SearchMode {
        asked.unwrap_or(if embedded {
            SearchMode::Hybrid
        } else {
            SearchMode::Keyword
        })
    }
}

/// Weighted reciprocal rank fusion: a hit ranked `r` (from 1) by a ranking of weight `w`
/// scores `w / (k + r)`, summed over the rankings that found it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The weight of the keyword ranking.
    pub keyword_weight: f64,
    /// The weight of the vector ranking.
    pub semantic_weight: f64,
    /// The rank offset `k` (60 in the RRF paper): larger flattens the head of each ranking.
    pub k: f64,
    /// How many hits each ranking contributes, as a multiple of the requested limit (at least
    /// 50 each): hits beyond a ranking's depth count as not found by it.
    pub depth: usize,
}

/// The default weighs the vector ranking half the keyword ranking, with `k` 20: on LoCoMo-10
/// with all-MiniLM-L6-v2 an equal weighting at `k` 60 ranks below keyword search alone, this
/// one above it in hit and recall at 5, 10 and 20 (BENCHMARKS.md, recall).
impl Default for Fusion {
    fn default() -> Self {
        Fusion {
            keyword_weight: 1.0,
            semantic_weight: 0.5,
            k: 20.0,
            depth: 5,
        }
    }
}

impl Fusion {
    /// How deep each ranking goes for a search of `limit` hits.
    pub fn depth_for(&self, limit: usize) -> usize {
        limit.saturating_mul(self.depth.max(1)).max(50)
    }

    /// The fused score of a hit at `keyword` and `semantic` ranks (from 1; `None`: not
    /// found by that ranking).
    ///
    /// ```
    /// use agentmem_recall::Fusion;
    /// let f = Fusion::default();
    /// assert!(f.score(Some(1), Some(1)) > f.score(Some(1), None));
    /// assert_eq!(f.score(None, None), 0.0);
    /// ```
    pub fn score(&self, keyword: Option<usize>, semantic: Option<usize>) -> f64 {
        let part =
            |weight: f64, rank: Option<usize>| rank.map_or(0.0, |r| weight / (self.k + r as f64));
        part(self.keyword_weight, keyword) + part(self.semantic_weight, semantic)
    }

    /// Checks the weights: finite, not negative, not both zero; `k` finite and not negative.
    pub fn validate(&self) -> Result<()> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !ok(self.keyword_weight)
            || !ok(self.semantic_weight)
            || !ok(self.k)
            || self.keyword_weight + self.semantic_weight == 0.0
        {
            return Err(Error::invalid_input(format!(
                "fusion weights must be finite, not negative and not both 0, and k finite and \
                 not negative (got keyword {}, semantic {}, k {})",
                self.keyword_weight, self.semantic_weight, self.k
            )));
        }
        Ok(())
    }
}
