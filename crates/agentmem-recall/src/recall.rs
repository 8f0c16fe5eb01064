//! [`Recall`]: a store and an embedder, searching by keyword, by meaning, or both.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agentmem_core::vector::{decode_vector, MAX_VECTOR_BATCH, MODEL_PROPERTY};
use agentmem_core::{
    AgentMemory, AgentMemoryExt, Embedder, Error, MemoryFilter, MemoryItem, Message, MessageQuery,
    ModelIdentity, PropertyChange, Result, SessionId, VectorKey,
};
use serde::Serialize;

use crate::cache::{dot, unit, UnitVector, VectorCache, DEFAULT_VECTOR_CACHE_BYTES};
use crate::catalog::CatalogSlot;
use crate::codes::shortlist;
use crate::fusion::{Fusion, SearchMode};
use crate::index::IndexMarks;
use crate::similarity::vector_key;

/// How a [`Recall`] embeds and ranks: the default, changed by its `with_` methods (more
/// options may come, so it is not built as a struct literal outside this crate).
///
/// ```
/// use agentmem_recall::RecallOptions;
/// let options = RecallOptions::default().with_embed_messages(true).with_vector_cache_bytes(0);
/// assert!(options.embed_messages);
/// assert_eq!(options.vector_cache_bytes, 0);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecallOptions {
    /// Embed messages as well as memory items (the store URL option `embed=messages`).
    pub embed_messages: bool,
    /// How hybrid search weighs the two rankings.
    pub fusion: Fusion,
    /// How many bytes of decoded vectors to keep in memory between searches (shared by a
    /// `Recall`'s clones); 0 reads every vector from the store each search. Default 256 MiB:
    /// all of 170,000 vectors of 384 dimensions. Vectors of an encrypted store are held
    /// decrypted, as every search holds them. Unless it is 0, semantic search of memory
    /// items also keeps a copy of the items and one byte a dimension of each one's vector
    /// (38 MB for 100,000 of 384 dimensions), listed again when the store's
    /// [`memory_revision`](agentmem_core::MemoryStore::memory_revision) changes (stores
    /// without one are listed by every search).
    pub vector_cache_bytes: usize,
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            embed_messages: false,
            fusion: Fusion::default(),
            vector_cache_bytes: DEFAULT_VECTOR_CACHE_BYTES,
        }
    }
}

impl RecallOptions {
    agentmem_core::setters! {
        /// Embeds messages as well as memory items (or not).
        pub fn with_embed_messages(on: bool) { self.embed_messages = on }

        /// Sets how hybrid search weighs the two rankings.
        pub fn with_fusion(fusion: Fusion) { self.fusion = fusion }

        /// Sets how many bytes of decoded vectors are kept between searches (0: none).
        pub fn with_vector_cache_bytes(bytes: usize) { self.vector_cache_bytes = bytes }
    }
}

/// A memory item found by [`Recall::search_memories`], with how each ranking saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryRecall {
    /// The item.
    pub item: MemoryItem,
    /// The score the mode ranks by: the fused score (hybrid), the similarity (semantic) or
    /// the keyword score (keyword). Higher is better; comparable within one result list.
    pub score: f64,
    /// Its rank (from 1) in the keyword ranking, when that found it.
    pub keyword_rank: Option<usize>,
    /// Its rank (from 1) by similarity, when it has a vector and ranked within the depth.
    pub semantic_rank: Option<usize>,
    /// Its cosine similarity to the query, when it has a vector.
    pub similarity: Option<f32>,
}

/// A message found by [`Recall::search_messages`], with how each ranking saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRecall {
    /// The session holding the message.
    pub session: SessionId,
    /// The message.
    pub message: Message,
    /// As [`MemoryRecall::score`].
    pub score: f64,
    /// As [`MemoryRecall::keyword_rank`].
    pub keyword_rank: Option<usize>,
    /// As [`MemoryRecall::semantic_rank`].
    pub semantic_rank: Option<usize>,
    /// As [`MemoryRecall::similarity`].
    pub similarity: Option<f32>,
}

/// A store and an embedder: semantic and hybrid search, and the indexer (see
/// [`index`](Self::index)). Cheap to clone; share one per store.
#[derive(Debug, Clone)]
pub struct Recall {
    pub(crate) store: Arc<dyn AgentMemory>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) options: RecallOptions,
    pub(crate) cache: Arc<VectorCache>,
    pub(crate) catalog: Arc<CatalogSlot>,
    pub(crate) marks: Arc<tokio::sync::Mutex<IndexMarks>>,
}

/// One ranked candidate before it becomes a result: its position in the candidate list and
/// what each ranking said.
#[derive(Debug, Clone, Copy, Default)]
struct Ranked {
    keyword_rank: Option<usize>,
    keyword_score: Option<f64>,
    semantic_rank: Option<usize>,
    similarity: Option<f32>,
}

impl Recall {
    /// Recall over `store` with `embedder`.
    pub fn new(
        store: Arc<dyn AgentMemory>, embedder: Arc<dyn Embedder>, options: RecallOptions,
    ) -> Self {
        Recall {
            cache: Arc::new(VectorCache::new(options.vector_cache_bytes)),
            catalog: Arc::default(),
            marks: Arc::default(),
            store,
            embedder,
            options,
        }
    }

    /// The store searched.
    pub fn store(&self) -> &Arc<dyn AgentMemory> {
        &self.store
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The options.
    pub fn options(&self) -> &RecallOptions {
        &self.options
    }

    /// The model the store's vectors come from, if any were made.
    pub async fn stored_model(&self) -> Result<Option<ModelIdentity>> {
        self.store
            .store_property(MODEL_PROPERTY)
            .await?
            .map(|value| ModelIdentity::parse(&value))
            .transpose()
    }

    /// Checks that the store's vectors come from this embedder's model; with `bind`, records
    /// the model in a store that has none yet. `Conflict` when they differ.
    pub(crate) async fn check_model(&self, bind: bool) -> Result<()> {
        self.learn_dimensions().await?;
        let ours = self.embedder.model();
        let stored = match self.stored_model().await? {
            Some(stored) => stored,
            None if !bind => return Ok(()),
            None => {
                let value = ours.to_property();
                if self
                    .store
                    .set_store_property(&PropertyChange::insert(MODEL_PROPERTY, &value))
                    .await?
                {
                    return Ok(());
                }
                // Another indexer recorded a model first: it must be ours.
                self.stored_model()
                    .await?
                    .ok_or_else(|| Error::conflict("the store's embedding model changed twice"))?
            }
        };
        if &stored != ours {
            return Err(model_mismatch(&stored, ours));
        }
        Ok(())
    }

    /// Asks an embedder that learns its dimensions from its first reply (an HTTP server's
    /// model) for one vector, so the identity checked and recorded is complete.
    pub(crate) async fn learn_dimensions(&self) -> Result<()> {
        if self.embedder.model().dimensions == 0 {
            self.embedder.embed(&["dimensions".to_owned()]).await?;
        }
        Ok(())
    }

    /// The embedder's model, complete: an embedder that learns its dimensions from its first
    /// reply (an HTTP server's model) is asked for one vector first.
    pub async fn model(&self) -> Result<ModelIdentity> {
        self.learn_dimensions().await?;
        Ok(self.embedder.model().clone())
    }

    /// Embeds `texts` and checks what the model returned.
    pub(crate) async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let vectors = self.embedder.embed(texts).await?;
        let dims = self.embedder.model().dimensions;
        if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != dims) {
            return Err(Error::backend(format!(
                "the embedder {} returned {} vectors for {} texts, or vectors not of {dims} \
                 dimensions",
                self.embedder.model(),
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }

    /// Memory items matching `query` within `filter` (kind, scope, expiry: applied before
    /// ranking), at most `filter.limit` (10 by default), best first.
    pub async fn search_memories(
        &self, query: &str, filter: &MemoryFilter, mode: SearchMode,
    ) -> Result<Vec<MemoryRecall>> {
        let limit = filter
            .limit
            .unwrap_or(agentmem_core::support::DEFAULT_SEARCH_LIMIT);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let depth = self.options.fusion.depth_for(limit);
        let keyword = async {
            if mode == SearchMode::Semantic {
                return Ok(Vec::new());
            }
            let keyword_filter = MemoryFilter {
                limit: Some(depth),
                ..filter.clone()
            };
            self.store.search_memories(query, &keyword_filter).await
        };
        let semantic = async {
            if mode == SearchMode::Keyword {
                return Ok(Vec::new());
            }
            self.memories_by_meaning(query, filter, depth).await
        };
        // The two rankings run at once (the store ranks while the query is embedded and the
        // vectors scanned), the semantic one polled first: it reads the store's revision
        // before the keyword one holds the store's lock (the file store's) to rank.
        let (semantic_hits, keyword_hits) = tokio::try_join!(semantic, keyword)?;
        let mut items: Vec<MemoryItem> = Vec::new();
        let mut ranked: Vec<Ranked> = Vec::new();
        let mut position: HashMap<agentmem_core::MemoryId, usize> = HashMap::new();
        for (rank, hit) in keyword_hits.into_iter().enumerate() {
            position.insert(hit.item.id.clone(), items.len());
            ranked.push(Ranked {
                keyword_rank: Some(rank + 1),
                keyword_score: Some(hit.score),
                ..Ranked::default()
            });
            items.push(hit.item);
        }
        for (item, similarity, rank) in semantic_hits {
            let at = *position.entry(item.id.clone()).or_insert_with(|| {
                items.push(item);
                ranked.push(Ranked::default());
                items.len() - 1
            });
            ranked[at].semantic_rank = Some(rank);
            ranked[at].similarity = Some(similarity);
        }
        let order = self.order(&ranked, mode, limit);
        let mut items: Vec<Option<MemoryItem>> = items.into_iter().map(Some).collect();
        Ok(order
            .into_iter()
            .filter_map(|(at, score)| {
                let r = ranked[at];
                items[at].take().map(|item| MemoryRecall {
                    item,
                    score,
                    keyword_rank: r.keyword_rank,
                    semantic_rank: r.semantic_rank,
                    similarity: r.similarity,
                })
            })
            .collect())
    }

    /// Messages matching `query` in `scope` (one session, or all), at most `scope.limit`,
    /// best first.
    pub async fn search_messages(
        &self, query: &str, scope: &MessageQuery, mode: SearchMode,
    ) -> Result<Vec<MessageRecall>> {
        if scope.limit == 0 {
            return Ok(Vec::new());
        }
        let depth = self.options.fusion.depth_for(scope.limit);
        let mut found: Vec<(SessionId, Message)> = Vec::new();
        let mut ranked: Vec<Ranked> = Vec::new();
        let mut position: HashMap<(SessionId, agentmem_core::MessageId), usize> = HashMap::new();
        if mode != SearchMode::Semantic {
            let keyword_scope = MessageQuery {
                session: scope.session.clone(),
                limit: depth,
            };
            let hits = self.store.search_messages(query, &keyword_scope).await?;
            for (rank, hit) in hits.into_iter().enumerate() {
                position.insert((hit.session.clone(), hit.message.id.clone()), found.len());
                ranked.push(Ranked {
                    keyword_rank: Some(rank + 1),
                    keyword_score: Some(hit.score),
                    ..Ranked::default()
                });
                found.push((hit.session, hit.message));
            }
        }
        if mode != SearchMode::Keyword {
            let candidates = self.messages_in(scope.session.as_ref()).await?;
            let keys: Vec<VectorKey> = candidates
                .iter()
                .map(|(_, m)| vector_key(&m.content))
                .collect();
            let all = (0..keys.len()).collect();
            for (index, similarity, rank) in self.rank_by_meaning(query, keys, all, depth).await? {
                let (session, message) = &candidates[index];
                let id = (session.clone(), message.id.clone());
                let at = *position.entry(id).or_insert_with(|| {
                    found.push((session.clone(), message.clone()));
                    ranked.push(Ranked::default());
                    found.len() - 1
                });
                ranked[at].semantic_rank = Some(rank);
                ranked[at].similarity = Some(similarity);
            }
        }
        let order = self.order(&ranked, mode, scope.limit);
        let mut found: Vec<Option<(SessionId, Message)>> = found.into_iter().map(Some).collect();
        Ok(order
            .into_iter()
            .filter_map(|(at, score)| {
                let r = ranked[at];
                found[at].take().map(|(session, message)| MessageRecall {
                    session,
                    message,
                    score,
                    keyword_rank: r.keyword_rank,
                    semantic_rank: r.semantic_rank,
                    similarity: r.similarity,
                })
            })
            .collect())
    }

    /// The messages of one session, or of every session, in order.
    pub(crate) async fn messages_in(
        &self, session: Option<&SessionId>,
    ) -> Result<Vec<(SessionId, Message)>> {
        let ids = match session {
            Some(id) => vec![id.clone()],
            None => self.store.session_ids().await?,
        };
        let mut out = Vec::new();
        for id in ids {
            if let Some(loaded) = self.store.load(&id, None).await? {
                out.extend(loaded.messages.into_iter().map(|m| (id.clone(), m)));
            }
        }
        Ok(out)
    }

    /// The memory items within `filter` most similar to `query`: `(item, similarity, rank
    /// from 1)`, at most `depth`. The filter applies before ranking. The candidates are
    /// scanned by their codes and the shortlist scored exactly (see `codes.rs`): the result
    /// is that of an exact scan.
    async fn memories_by_meaning(
        &self, query: &str, filter: &MemoryFilter, depth: usize,
    ) -> Result<Vec<(MemoryItem, f32, usize)>> {
        if query.trim().is_empty() || depth == 0 {
            return Ok(Vec::new());
        }
        // The catalog first: a hybrid search's keyword half may hold the store's lock (the
        // file store's) for as long as it ranks, and the revision is read under it.
        self.learn_dimensions().await?;
        let keep = self.options.vector_cache_bytes > 0;
        let dims = self.embedder.model().dimensions;
        let catalog = self.catalog.get(&*self.store, keep, dims).await?;
        let query_vector = self.query_vector(query).await?;
        let (scan_catalog, scan_query, scan_filter) = (
            Arc::clone(&catalog),
            Arc::clone(&query_vector),
            filter.clone(),
        );
        let (coded, unknown) = tokio::task::spawn_blocking(move || {
            let candidates: Vec<usize> = scan_catalog
                .matching(&scan_filter, agentmem_core::now())
                .collect();
            scan_catalog.codes().scan_parallel(&scan_query, &candidates)
        })
        .await
        .map_err(|e| Error::backend(format!("scanning the vectors failed: {e}")))?;
        // Rows not coded yet (new since the catalog was listed, or embedded since): scored
        // exactly, and coded for the next search.
        let mut exact = Vec::new();
        if !unknown.is_empty() {
            let keys: Vec<VectorKey> = unknown.iter().map(|&i| catalog.keys[i]).collect();
            let (vectors, trusted) = self.load_vectors(&keys).await?;
            let mut codes = (trusted && catalog.is_kept()).then(|| catalog.codes_mut());
            for i in unknown {
                if let Some(vector) = vectors.get(&catalog.keys[i]) {
                    if let Some(codes) = codes.as_mut() {
                        codes.set(i, vector);
                    }
                    exact.push((i, dot(&query_vector, vector)));
                }
            }
        }
        let short = {
            let codes = catalog.codes();
            let bound = codes.query_bound(&query_vector);
            shortlist(&coded, &exact, depth, |row| codes.error_bound(row, &bound))
        };
        if !short.is_empty() {
            let keys: Vec<VectorKey> = short.iter().map(|&i| catalog.keys[i]).collect();
            let (vectors, _) = self.load_vectors(&keys).await?;
            exact.extend(short.into_iter().filter_map(|i| {
                vectors
                    .get(&catalog.keys[i])
                    .map(|v| (i, dot(&query_vector, v)))
            }));
        }
        Ok(best(exact, depth)
            .into_iter()
            .enumerate()
            .map(|(rank, (i, similarity))| (catalog.items[i].clone(), similarity, rank + 1))
            .collect())
    }

    /// `query`'s vector, scaled to unit length, once the store's model is checked to be the
    /// embedder's.
    async fn query_vector(&self, query: &str) -> Result<UnitVector> {
        self.check_model(false).await?;
        Ok(unit(
            &self
                .embed(&[query.to_owned()])
                .await?
                .pop()
                .ok_or_else(|| Error::backend("the embedder returned no vector for the query"))?,
        ))
    }

    /// Ranks the `candidates` (indexes into `keys`, the vector keys of the texts searched)
    /// by similarity to `query`: `(index, similarity, rank from 1)` of the best `depth` that
    /// have a vector. Texts without one are passed over (keyword search covers them until
    /// the indexer catches up).
    async fn rank_by_meaning(
        &self, query: &str, keys: impl Into<Arc<Vec<VectorKey>>>, candidates: Vec<usize>,
        depth: usize,
    ) -> Result<Vec<(usize, f32, usize)>> {
        if candidates.is_empty() || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let keys = keys.into();
        let query_vector = self.query_vector(query).await?;
        // The cached vectors are scored off the async threads (100,000 dot products of 384
        // dimensions take milliseconds); the rest are read from the store.
        let (cache, scan_keys, scan_query) = (
            Arc::clone(&self.cache),
            Arc::clone(&keys),
            Arc::clone(&query_vector),
        );
        let (mut scored, missing) =
            tokio::task::spawn_blocking(move || cache.score(&scan_query, &scan_keys, candidates))
                .await
                .map_err(|e| Error::backend(format!("scoring the vectors failed: {e}")))?;
        if !missing.is_empty() {
            let missing_keys: Vec<VectorKey> = missing.iter().map(|&i| keys[i]).collect();
            let (vectors, _) = self.load_vectors(&missing_keys).await?;
            scored.extend(
                missing
                    .into_iter()
                    .filter_map(|i| vectors.get(&keys[i]).map(|v| (i, dot(&query_vector, v)))),
            );
        }
        Ok(best(scored, depth)
            .into_iter()
            .enumerate()
            .map(|(rank, (index, similarity))| (index, similarity, rank + 1))
            .collect())
    }

    /// The vectors of `keys`, scaled to unit length: from the cache, the rest from the store
    /// (each distinct key asked once, in batches), then cached while the store's model is
    /// still this embedder's; and whether they may be kept (the model was still ours).
    async fn load_vectors(
        &self, keys: &[VectorKey],
    ) -> Result<(HashMap<VectorKey, UnitVector>, bool)> {
        let mut out = self.cache.get_many(keys);
        let mut seen = HashSet::new();
        let missing: Vec<VectorKey> = keys
            .iter()
            .copied()
            .filter(|k| !out.contains_key(k) && seen.insert(*k))
            .collect();
        if missing.is_empty() {
            return Ok((out, true));
        }
        let mut loaded = HashMap::with_capacity(missing.len());
        for batch in missing.chunks(MAX_VECTOR_BATCH) {
            for stored in self.store.get_vectors(batch).await? {
                loaded.insert(stored.key, unit(&decode_vector(&stored.data)?));
            }
        }
        // Re-embedding by another process may have begun since the model was checked: what
        // was read then is used once, never cached.
        let trusted = self.stored_model().await?.as_ref() == Some(self.embedder.model());
        if trusted {
            self.cache.insert_many(&loaded);
        }
        out.extend(loaded);
        Ok((out, trusted))
    }

    /// The order of the results: `(position, score)`, best first, at most `limit`.
    fn order(&self, ranked: &[Ranked], mode: SearchMode, limit: usize) -> Vec<(usize, f64)> {
        let fusion = &self.options.fusion;
        let mut scored: Vec<(usize, f64)> = ranked
            .iter()
            .enumerate()
            .filter_map(|(at, r)| {
                let score = match mode {
                    SearchMode::Keyword => r.keyword_score?,
                    SearchMode::Semantic => {
                        r.semantic_rank?;
                        f64::from(r.similarity?)
                    }
                    SearchMode::Hybrid => fusion.score(r.keyword_rank, r.semantic_rank),
                };
                Some((at, score))
            })
            .collect();
        // Ties: the keyword ranking's order, then the vector ranking's.
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(rank_key(ranked[a.0].keyword_rank).cmp(&rank_key(ranked[b.0].keyword_rank)))
                .then(rank_key(ranked[a.0].semantic_rank).cmp(&rank_key(ranked[b.0].semantic_rank)))
        });
        scored.truncate(limit);
        scored
    }
}

/// The best `depth` of `scored`, best first: higher similarity, then the earlier text.
fn best(mut scored: Vec<(usize, f32)>, depth: usize) -> Vec<(usize, f32)> {
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if depth == 0 {
        return Vec::new();
    }
    if scored.len() > depth {
        // Selecting first keeps a search of 100,000 candidates from sorting them all.
        scored.select_nth_unstable_by(depth - 1, order);
        scored.truncate(depth);
    }
    scored.sort_by(order);
    scored
}

fn rank_key(rank: Option<usize>) -> usize {
    rank.unwrap_or(usize::MAX)
}

/// The error of a store whose vectors come from another model.
pub(crate) fn model_mismatch(stored: &ModelIdentity, ours: &ModelIdentity) -> Error {
    Error::conflict(format!(
        "the store's vectors come from {stored}, not from this embedder's {ours}: re-embed the \
         store with `agentmem reindex` (or `Recall::reindex`) before searching or indexing with \
         another model"
    ))
}
