//! What the standard layer stack costs per operation (issue 17: at most 1 µs).
//!
//! A store that does nothing (`Noop`) is timed bare and wearing the standard stack
//! ([`layered`]: validation, the `agentmem.op` span, error labels), so the difference is the
//! stack alone. No `tracing` subscriber is installed, as in a program that does not collect
//! DEBUG spans; the error case shows the labelling path.
//!
//! `cargo bench -p agentmem-core --bench layers`. With `AGENTMEM_BENCH_QUICK=1` criterion
//! takes fewer samples (for CI).
use std::time::Duration;

use agentmem_core::backend::BackendInfo;
use agentmem_core::layer::layered;
use agentmem_core::{
    async_trait, AgentMemory, Archive, ArchiveId, ArchiveInfo, Error, MemoryFilter, MemoryHit,
    MemoryId, MemoryItem, MemoryKind, MemoryStore, Message, MessageHit, MessageId, MessageQuery,
    Metadata, PropertyChange, PurgeReport, Result, RetentionPolicy, Rewind, Session, SessionId,
    SessionInfo, SessionPage, SessionPatch, SessionQuery, SessionStore,
};
use agentmem_testkit::bench::quick;
use criterion::{criterion_group, Criterion};
use tokio::runtime::Runtime;

/// A store that answers at once: what is left of a timing is the layers' work.
#[derive(Debug)]
struct Noop;

#[async_trait]
impl SessionStore for Noop {
    fn backend(&self) -> &'static BackendInfo {
        static NOOP: BackendInfo = BackendInfo::new("noop");
        &NOOP
    }
    async fn schema_version(&self) -> Result<u32> {
        Ok(1)
    }
    async fn save_session(&self, _: &SessionId, _: &[Message], _: &Metadata) -> Result<()> {
        Ok(())
    }
    async fn append(&self, _: &SessionId, _: &[Message]) -> Result<()> {
        Ok(())
    }
    async fn load(&self, _: &SessionId, _: Option<usize>) -> Result<Option<Session>> {
        Ok(None)
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        Ok(Vec::new())
    }
    async fn delete_session(&self, _: &SessionId) -> Result<bool> {
        Ok(false)
    }
    async fn compact(&self, s: &SessionId, _: &[Message]) -> Result<ArchiveInfo> {
        Err(Error::not_found(format!("session `{s}` does not exist")))
    }
    async fn list_archives(&self, _: &SessionId) -> Result<Vec<ArchiveInfo>> {
        Ok(Vec::new())
    }
    async fn load_archive(&self, _: &SessionId, _: &ArchiveId) -> Result<Archive> {
        Err(Error::not_found("no archive"))
    }
    async fn search_messages(&self, _: &str, _: &MessageQuery) -> Result<Vec<MessageHit>> {
        Ok(Vec::new())
    }
    async fn purge(&self, _: &RetentionPolicy) -> Result<PurgeReport> {
        Ok(PurgeReport::default())
    }
    async fn fork(
        &self, s: &SessionId, _: &SessionId, _: Option<&MessageId>,
    ) -> Result<SessionInfo> {
        Err(Error::not_found(format!("session `{s}` does not exist")))
    }
    async fn rewind(&self, s: &SessionId, _: &Rewind) -> Result<Vec<Message>> {
        Err(Error::not_found(format!("session `{s}` does not exist")))
    }
    async fn update_session(&self, s: &SessionId, _: &SessionPatch) -> Result<SessionInfo> {
        Err(Error::not_found(format!("session `{s}` does not exist")))
    }
    async fn find_sessions(&self, _: &SessionQuery) -> Result<SessionPage> {
        Ok(SessionQuery::default().page(Vec::new()))
    }
    async fn replace_archive(
        &self, _: &SessionId, _: &ArchiveId, _: &[Message],
    ) -> Result<ArchiveInfo> {
        Err(Error::not_found("no archive"))
    }
    async fn store_property(&self, _: &str) -> Result<Option<String>> {
        Ok(None)
    }
    async fn set_store_property(&self, _: &PropertyChange<'_>) -> Result<bool> {
        Ok(true)
    }
}

#[async_trait]
impl MemoryStore for Noop {
    async fn put_memory(&self, item: &MemoryItem) -> Result<MemoryItem> {
        Ok(item.clone())
    }
    async fn get_memory(&self, _: &MemoryId) -> Result<Option<MemoryItem>> {
        Ok(None)
    }
    async fn list_memories(&self, _: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        Ok(Vec::new())
    }
    async fn search_memories(&self, _: &str, _: &MemoryFilter) -> Result<Vec<MemoryHit>> {
        Ok(Vec::new())
    }
    async fn delete_memory(&self, _: &MemoryId) -> Result<bool> {
        Ok(false)
    }
}

fn layer_overhead(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let bare: Box<dyn AgentMemory> = Box::new(Noop);
    let stacked: Box<dyn AgentMemory> = Box::new(layered(Noop));
    let session: SessionId = "bench".parse().unwrap();
    let one = [Message::user(
        "What did we decide about the schema migration?",
    )];
    let batch: Vec<Message> = (0..20)
        .map(|i| Message::assistant(format!("message {i}")))
        .collect();
    let item = MemoryItem::new(MemoryKind::Fact, "The user prefers metric units");

    let mut group = c.benchmark_group("layers");
    for (name, store) in [("bare", &bare), ("layered", &stacked)] {
        group.bench_function(format!("append_one_{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.append(&session, &one).await.unwrap() })
        });
        group.bench_function(format!("append_20_{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.append(&session, &batch).await.unwrap() })
        });
        group.bench_function(format!("load_last_20_{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.load(&session, Some(20)).await.unwrap() })
        });
        group.bench_function(format!("put_memory_{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.put_memory(&item).await.unwrap() })
        });
        group.bench_function(format!("compact_error_{name}"), |b| {
            b.to_async(&rt)
                .iter(|| async { store.compact(&session, &one).await.unwrap_err() })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.sample_size(10)
            .warm_up_time(Duration::from_millis(100))
            .measurement_time(Duration::from_millis(200))
    } else {
        c
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = layer_overhead
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}

agentmem_core::refuse_checkpoints!(Noop, "noop");
agentmem_core::refuse_graph!(Noop, "noop");
agentmem_core::refuse_vectors!(Noop, "noop");
