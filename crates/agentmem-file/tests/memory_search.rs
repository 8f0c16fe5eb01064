//! Memory items seen from two handles on one root, as from two processes: the revision of
//! one handle follows the other's writes (and only writes), and searches, answered from the
//! terms each handle keeps of its items, rank exactly as `rank_memories` ranks the items
//! listed.

mod common;

use agentmem_core::support::rank_memories;
use agentmem_core::{
    AgentMemory, Layered, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore,
    RetentionPolicy, ScopeFilter, SessionStore,
};
use agentmem_file::FileStore;
use common::open;

async fn revision(store: &Layered<FileStore>) -> u64 {
    store
        .memory_revision()
        .await
        .expect("memory_revision")
        .expect("the file store keeps a revision")
}

/// Lists, gets and searches through `store`, which must not change any revision.
async fn read_all(store: &Layered<FileStore>) {
    let items = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    if let Some(item) = items.first() {
        store.get_memory(&item.id).await.expect("get");
    }
    store
        .search_memories("revision note", &MemoryFilter::default())
        .await
        .expect("search");
}

/// Checks that `now` differs from `last`, and keeps it as the last.
fn changed(last: &mut u64, now: u64, what: &str) {
    assert_ne!(now, *last, "the revision changes with {what}");
    *last = now;
}

#[tokio::test]
async fn revision_follows_the_writes_of_another_handle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = open(dir.path()).await;
    let second = open(dir.path()).await;

    // No log yet: reading changes nothing.
    let mut last = revision(&first).await;
    read_all(&first).await;
    read_all(&second).await;
    assert_eq!(revision(&first).await, last, "reads of an empty store");

    let item = MemoryItem::new(MemoryKind::Fact, "revision note one").with_key("k");
    second.put_memory(&item).await.expect("put");
    changed(
        &mut last,
        revision(&first).await,
        "another handle's new item",
    );

    read_all(&first).await;
    read_all(&second).await;
    assert_eq!(revision(&first).await, last, "reads of either handle");
    assert_eq!(revision(&first).await, last, "asking again");

    let replacement = MemoryItem::new(MemoryKind::Fact, "revision note two").with_key("k");
    second.put_memory(&replacement).await.expect("replace");
    changed(
        &mut last,
        revision(&first).await,
        "another handle's replacement by key",
    );
    let found = first
        .search_memories("two", &MemoryFilter::default())
        .await
        .expect("search");
    assert_eq!(
        found.len(),
        1,
        "the first handle searches the replaced text"
    );

    assert!(second.delete_memory(&item.id).await.expect("delete"));
    changed(&mut last, revision(&first).await, "another handle's delete");

    let past = agentmem_core::now() - chrono::Duration::seconds(1);
    let expired = MemoryItem::new(MemoryKind::ShortTerm, "gone").expiring_at(past);
    second.put_memory(&expired).await.expect("put expired");
    changed(
        &mut last,
        revision(&first).await,
        "another handle's expired item",
    );
    let report = second
        .purge(&RetentionPolicy::default())
        .await
        .expect("purge");
    assert_eq!(report.memories_deleted, 1);
    changed(&mut last, revision(&first).await, "another handle's purge");

    // Enough replacements for the second handle to compact (rewrite) the log.
    for i in 0..200 {
        let churn = MemoryItem::new(MemoryKind::Fact, format!("churn {i}")).with_key("churn");
        second.put_memory(&churn).await.expect("churn");
    }
    changed(
        &mut last,
        revision(&first).await,
        "another handle's churn and compaction",
    );
    read_all(&first).await;
    assert_eq!(revision(&first).await, last, "reads after a compaction");
    let listed = first
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].text, "churn 199");

    // The first handle's own writes too; the second handle sees them.
    let before = revision(&second).await;
    first
        .put_memory(&MemoryItem::new(MemoryKind::Insight, "mine"))
        .await
        .expect("put");
    changed(&mut last, revision(&first).await, "its own put");
    assert_ne!(revision(&second).await, before);
}

/// A deterministic generator (an LCG), the same every run.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

const VOCABULARY: &[&str] = &[
    "adopt",
    "adopted",
    "Adopting",
    "adoption",
    "cat",
    "cats",
    "CAT",
    "the",
    "and",
    "is",
    "deployment",
    "deploying",
    "failed",
    "failure",
    "service",
    "services",
    "42",
    "x42",
    "Grüße",
    "grüße",
    "мир",
    "東京",
    "café",
    "caféS",
    "running",
    "runs",
    "happy",
    "happiness",
    "ponies",
    "pony",
    "GCP-latency",
    "rust's",
    "naïve",
];

/// A text of 0 to 14 words of the vocabulary (repeats likely), with punctuation.
fn text(draw: &mut Draw) -> String {
    let n = draw.below(15);
    let mut out = String::new();
    for _ in 0..n {
        out.push_str(VOCABULARY[draw.below(VOCABULARY.len())]);
        out.push_str([" ", ", ", "! ", " -- ", "\n"][draw.below(5)]);
    }
    out
}

const KINDS: [MemoryKind; 3] = [MemoryKind::Fact, MemoryKind::Insight, MemoryKind::LongTerm];

fn scopes() -> [MemoryScope; 3] {
    [
        MemoryScope::global(),
        MemoryScope::agent("ada"),
        MemoryScope::agent("bob"),
    ]
}

/// Items of varied texts, kinds and scopes; some keyed (so later puts replace them), some
/// already expired, some expiring much later.
fn items(draw: &mut Draw, n: usize) -> Vec<MemoryItem> {
    let past = agentmem_core::now() - chrono::Duration::seconds(5);
    let later = agentmem_core::now() + chrono::Duration::days(1);
    (0..n)
        .map(|_| {
            let mut item = MemoryItem::new(KINDS[draw.below(3)], text(draw))
                .in_scope(scopes()[draw.below(3)].clone());
            match draw.below(10) {
                0 => item = item.expiring_at(past),
                1 => item = item.expiring_at(later),
                2..=4 => item = item.with_key(format!("key{}", draw.below(40))),
                _ => {}
            }
            item
        })
        .collect()
}

fn filters() -> Vec<MemoryFilter> {
    vec![
        MemoryFilter::default(),
        MemoryFilter::default().with_limit(1),
        MemoryFilter::default().with_limit(1000),
        MemoryFilter::default().with_limit(0),
        MemoryFilter::kind(MemoryKind::Fact).with_limit(25),
        MemoryFilter::kind(MemoryKind::ShortTerm),
        MemoryFilter::default().with_scope(ScopeFilter::Exactly(MemoryScope::agent("ada"))),
        MemoryFilter::kind(MemoryKind::Insight)
            .visible_from(MemoryScope::agent("bob"))
            .with_limit(50),
    ]
}

const QUERIES: &[&str] = &[
    "adopted cats",
    "Adoption",
    "the",
    "the and is",
    "deployment failed service 42",
    "мир 東京",
    "Grüße café",
    "happy ponies running",
    "x42 gcp latency rust",
    "nothing here",
    "",
    "?!",
    "naïve NAÏVE naive",
];

/// Every query and filter searched through `store` finds exactly what `rank_memories` finds
/// among the items it lists (in first-stored order: their creation times never go back).
async fn assert_ranks_as_listed(store: &Layered<FileStore>, what: &str) {
    let listed = store
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list");
    for filter in filters() {
        for query in QUERIES {
            let found = store.search_memories(query, &filter).await.expect("search");
            let expected = rank_memories(query, &listed, &filter);
            assert_eq!(found, expected, "{what}: {query:?} with {filter:?}");
        }
    }
}

#[tokio::test]
async fn searches_rank_as_rank_memories_over_the_items() {
    let dir = tempfile::tempdir().expect("temp dir");
    let searcher = open(dir.path()).await;
    let writer = open(dir.path()).await;
    let mut draw = Draw(7);

    let mut first = items(&mut draw, 400);
    for (i, item) in first.iter_mut().enumerate() {
        // Every tenth an empty text.
        if i % 10 == 9 {
            item.text.clear();
        }
        writer.put_memory(item).await.expect("put");
    }
    assert_ranks_as_listed(&searcher, "another handle's items").await;
    assert!(
        !searcher
            .search_memories("adopt", &MemoryFilter::default())
            .await
            .expect("search")
            .is_empty(),
        "the texts match something"
    );

    // Replacements (by key), deletions and new items from both handles, after the searcher
    // counted the terms of what it held.
    let ids: Vec<_> = writer
        .list_memories(&MemoryFilter::default())
        .await
        .expect("list")
        .into_iter()
        .map(|item| item.id)
        .collect();
    for id in ids.iter().step_by(7) {
        writer.delete_memory(id).await.expect("delete");
    }
    for (i, item) in items(&mut draw, 150).iter().enumerate() {
        let by = if i % 2 == 0 { &writer } else { &searcher };
        by.put_memory(item).await.expect("put");
    }
    assert_ranks_as_listed(&searcher, "after changes by both handles").await;
    assert_ranks_as_listed(&writer, "the writer").await;

    // A purge deletes the expired items; a new handle replays the log from scratch.
    writer
        .purge(&RetentionPolicy::default())
        .await
        .expect("purge");
    assert_ranks_as_listed(&searcher, "after a purge").await;
    assert_ranks_as_listed(&open(dir.path()).await, "a fresh handle").await;
    // The same answers through `dyn AgentMemory`.
    let store: &dyn AgentMemory = &searcher;
    assert!(store.memory_revision().await.expect("revision").is_some());
}
