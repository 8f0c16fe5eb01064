//! Copying every session, archive, memory item, checkpoint and the knowledge graph from one
//! store to another.

use agentmem_core::{
    AgentMemory, CheckpointQuery, CheckpointTuple, Error, MemoryFilter, Result, SessionId, ThreadId,
};
use serde::Serialize;

use crate::graph::{plan_graph, verify_graph, write_graph};
use crate::{
    export_graph, is_encrypted, read_session, sync_session, GraphReport, SyncOptions, SyncReport,
};

/// How to migrate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrateOptions {
    /// At most this many messages per write.
    pub batch: usize,
    /// Plan only: report what would be copied, write nothing (and verify nothing).
    pub dry_run: bool,
    /// Copy an encrypted source into a destination that is not encrypted, that is write its
    /// records there in plaintext. Off by default: see [`migrate`].
    pub allow_plaintext: bool,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        MigrateOptions {
            batch: 1000,
            dry_run: false,
            allow_plaintext: false,
        }
    }
}

/// What a migration copied (or, in a dry run, would copy).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// Sessions at the source.
    pub sessions: u64,
    /// Sessions created at the destination.
    pub sessions_created: u64,
    /// Messages at the source, archived ones included.
    pub messages: u64,
    /// Messages written (archived ones included).
    pub messages_written: u64,
    /// Archives at the source.
    pub archives: u64,
    /// Archives created at the destination.
    pub archives_written: u64,
    /// Memory items at the source.
    pub memories: u64,
    /// Memory items written.
    pub memories_written: u64,
    /// Checkpoint threads at the source.
    pub threads: u64,
    /// Checkpoints at the source.
    pub checkpoints: u64,
    /// Checkpoints written (with their channel values and pending writes).
    pub checkpoints_written: u64,
    /// What merging the knowledge graph wrote (its keys `entities`, `entities_created`,
    /// `observations_written`, `relations`, `relations_created` beside the others').
    #[serde(flatten)]
    pub graph: GraphReport,
    /// Whether the destination's counts were checked against the source's (not in dry runs).
    pub verified: bool,
}

/// Told about the migration's progress (a progress bar, log lines, nothing).
///
/// A closure taking a [`ProgressEvent`] is one too, so a caller can pass
/// `&mut |event| eprintln!("{event:?}")`; a type of its own (with state, like a
/// progress bar) implements the three calls (and [`graph`](Progress::graph), when it wants
/// to hear about the knowledge graph).
pub trait Progress {
    /// The migration starts with `sessions` sessions to copy.
    fn start(&mut self, sessions: u64);
    /// One session is done: `messages` at the source (archived ones included), of which
    /// `written` tells what had to be written.
    fn session(&mut self, id: &SessionId, messages: u64, written: &SyncReport);
    /// Every session is done; memory items, checkpoints, the knowledge graph and verification
    /// follow.
    fn finish(&mut self);
    /// The knowledge graph is copied (after [`finish`](Progress::finish); only when the
    /// source holds one): `copied` tells what it held and what had to be written.
    fn graph(&mut self, copied: &GraphReport) {
        let _ = copied;
    }
}

/// One call of [`Progress`], as a progress closure receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProgressEvent {
    /// The migration starts ([`Progress::start`]).
    Start {
        /// Sessions to copy.
        sessions: u64,
    },
    /// One session is done ([`Progress::session`]).
    Session {
        /// The session.
        id: SessionId,
        /// Its messages at the source, archived ones included.
        messages: u64,
        /// What had to be written at the destination.
        written: SyncReport,
    },
    /// Every session is done ([`Progress::finish`]).
    Finish,
    /// The knowledge graph is copied ([`Progress::graph`]).
    Graph {
        /// What the source's graph held and what had to be written at the destination.
        copied: GraphReport,
    },
}

impl<F: FnMut(ProgressEvent)> Progress for F {
    fn start(&mut self, sessions: u64) {
        self(ProgressEvent::Start { sessions });
    }

    fn session(&mut self, id: &SessionId, messages: u64, written: &SyncReport) {
        self(ProgressEvent::Session {
            id: id.clone(),
            messages,
            written: *written,
        });
    }

    fn finish(&mut self) {
        self(ProgressEvent::Finish);
    }

    fn graph(&mut self, copied: &GraphReport) {
        self(ProgressEvent::Graph { copied: *copied });
    }
}

/// A [`Progress`] that says nothing.
#[derive(Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&mut self, _: u64) {}
    fn session(&mut self, _: &SessionId, _: u64, _: &SyncReport) {}
    fn finish(&mut self) {}
}

/// What one session should look like at the destination.
struct Expected {
    id: SessionId,
    messages: u64,
    archives: Vec<u64>,
}

/// Copies everything in `from` to `to`, telling `progress` about each session (and the
/// knowledge graph).
///
/// Sessions are copied one at a time ([`sync_session`]), so only one session is ever in
/// memory; memory items are upserted by id; checkpoints are copied thread by thread; the
/// knowledge graph is read whole and merged in by its rules
/// ([`import_graph`](crate::import_graph)). Re-running a migration (or resuming an
/// interrupted one) adds no duplicates: what the destination already holds is matched by
/// message id and only the missing rest is written. At the end the destination's counts are
/// compared with the source's, session by session, and any difference is a
/// [`Conflict`](agentmem_core::ErrorKind::Conflict). `progress` is `Send` so that the
/// migration can run in a spawned task.
///
/// From an encrypted source (one [marked](crate::is_encrypted) so), the destination must be
/// encrypted too: marked, or wearing an encryption layer, which marks its store on the empty
/// append `migrate` makes there first (it writes no record). Otherwise the migration would
/// write the source's records in plaintext, and is refused (`InvalidInput`) before anything
/// is written, unless [`MigrateOptions::allow_plaintext`] asks for exactly that. A dry run
/// writes nothing, not even that append, and so refuses nothing on this account.
pub async fn migrate(
    from: &dyn AgentMemory, to: &dyn AgentMemory, options: MigrateOptions,
    progress: &mut (dyn Progress + Send),
) -> Result<MigrateReport> {
    check_encryption(from, to, options).await?;
    let mut report = MigrateReport::default();
    let infos = from.list_sessions().await?;
    progress.start(infos.len() as u64);
    let sync = SyncOptions {
        batch: Some(options.batch.max(1)),
        dry_run: options.dry_run,
    };
    let mut expected = Vec::with_capacity(infos.len());
    for info in infos {
        // A session deleted since the listing is simply not copied.
        let Some(session) = read_session(from, &info.id).await? else {
            continue;
        };
        let written = sync_session(to, &session, sync).await?;
        report.sessions += 1;
        report.sessions_created += u64::from(written.created);
        report.messages += session.total_messages();
        report.messages_written += written.messages_written;
        report.archives += session.archives.len() as u64;
        report.archives_written += written.archives_written;
        progress.session(&session.id, session.total_messages(), &written);
        expected.push(Expected {
            id: session.id.clone(),
            messages: session.messages.len() as u64,
            archives: session
                .archives
                .iter()
                .map(|a| a.messages.len() as u64)
                .collect(),
        });
    }
    progress.finish();

    let items = from.list_memories(&MemoryFilter::default()).await?;
    for item in &items {
        report.memories += 1;
        if to.get_memory(&item.id).await?.as_ref() != Some(item) {
            report.memories_written += 1;
            if !options.dry_run {
                to.put_memory(item).await?;
            }
        }
    }

    let threads = copy_checkpoints(from, to, options, &mut report).await?;
    let graph = export_graph(from).await?;
    if !graph.is_empty() {
        let plan = plan_graph(to, &graph).await?;
        report.graph = if options.dry_run {
            plan.report
        } else {
            write_graph(to, plan).await?
        };
        progress.graph(&report.graph);
    }

    if !options.dry_run {
        verify(to, &expected, &items).await?;
        verify_checkpoints(to, &threads).await?;
        verify_graph(to, &graph).await?;
        report.verified = true;
    }
    Ok(report)
}

/// Copies every checkpoint thread (a store without checkpoints has none), oldest checkpoint
/// first, skipping those the destination holds identically; returns each thread's count for
/// the verification. Refused (`Unsupported`) before any checkpoint is written when the source
/// has threads and the destination keeps no checkpoints.
async fn copy_checkpoints(
    from: &dyn AgentMemory, to: &dyn AgentMemory, options: MigrateOptions,
    report: &mut MigrateReport,
) -> Result<Vec<(ThreadId, u64)>> {
    if !from.capabilities().checkpoints {
        return Ok(Vec::new());
    }
    let threads = from.list_threads().await?;
    if threads.is_empty() {
        return Ok(Vec::new());
    }
    if !to.capabilities().checkpoints {
        return Err(Error::unsupported(format!(
            "the source holds {} checkpoint threads and the destination ({} store) keeps no \
             checkpoints",
            threads.len(),
            to.backend().name
        )));
    }
    let mut counts = Vec::with_capacity(threads.len());
    for info in threads {
        let query = CheckpointQuery::thread(info.thread.clone());
        let mut tuples = from.list_checkpoints(&query).await?;
        // Oldest first, so a parent is written before its children.
        tuples.reverse();
        let held: Vec<CheckpointTuple> = to.list_checkpoints(&query).await?;
        report.threads += 1;
        for tuple in &tuples {
            report.checkpoints += 1;
            if held.contains(tuple) {
                continue;
            }
            report.checkpoints_written += 1;
            if !options.dry_run {
                to.put_checkpoint(&tuple.checkpoint, &tuple.blobs).await?;
                if !tuple.writes.is_empty() {
                    to.put_writes(&tuple.checkpoint.key, &tuple.writes).await?;
                }
            }
        }
        counts.push((info.thread, tuples.len() as u64));
    }
    Ok(counts)
}

/// Checks that the destination holds at least each source thread's checkpoints.
async fn verify_checkpoints(to: &dyn AgentMemory, threads: &[(ThreadId, u64)]) -> Result<()> {
    for (thread, expected) in threads {
        let held = to
            .list_checkpoints(&CheckpointQuery::thread(thread.clone()))
            .await?
            .len() as u64;
        if held < *expected {
            return Err(Error::conflict(format!(
                "verification failed: thread {:?} has {held} checkpoints at the destination, \
                 {expected} at the source",
                thread.as_str()
            )));
        }
    }
    Ok(())
}

/// Refuses to copy an encrypted source into a destination that would hold it in plaintext
/// (see [`migrate`]).
async fn check_encryption(
    from: &dyn AgentMemory, to: &dyn AgentMemory, options: MigrateOptions,
) -> Result<()> {
    if options.allow_plaintext || !is_encrypted(from).await? || is_encrypted(to).await? {
        return Ok(());
    }
    if options.dry_run {
        return Ok(());
    }
    // An empty append writes no record (the validation layer of every opened store answers
    // it without a round trip), but an encryption layer checks its store's marker first and
    // marks an unmarked store with its key; a store without one stays unmarked.
    let probe = SessionId::new("agentmem-migrate")?;
    to.append(&probe, &[]).await?;
    if is_encrypted(to).await? {
        return Ok(());
    }
    Err(Error::invalid_input(
        "the source store is encrypted and the destination is not: migrating would write its \
         records in plaintext; open the destination with a key to encrypt them with it, or \
         allow plaintext explicitly (MigrateOptions::allow_plaintext)",
    ))
}

async fn verify(
    to: &dyn AgentMemory, expected: &[Expected], items: &[agentmem_core::MemoryItem],
) -> Result<()> {
    let fail = |why: String| Error::conflict(format!("verification failed: {why}"));
    for e in expected {
        let Some(s) = to.load(&e.id, Some(0)).await? else {
            return Err(fail(format!(
                "session {:?} is missing at the destination",
                e.id.as_str()
            )));
        };
        if s.total_messages != e.messages {
            return Err(fail(format!(
                "session {:?} has {} messages at the destination, {} at the source",
                e.id.as_str(),
                s.total_messages,
                e.messages
            )));
        }
        let archives: Vec<u64> = to
            .list_archives(&e.id)
            .await?
            .iter()
            .map(|a| a.message_count)
            .collect();
        if archives != e.archives {
            return Err(fail(format!(
                "session {:?} has archives of {archives:?} messages at the destination, {:?} at the source",
                e.id.as_str(),
                e.archives
            )));
        }
    }
    let stored = to.list_memories(&MemoryFilter::default()).await?;
    for item in items {
        // An item may have replaced an older one with the same scope, kind and key, keeping
        // its id.
        let found = stored
            .iter()
            .any(|s| s.id == item.id || item.shares_key_with(s));
        if !found {
            return Err(fail(format!(
                "memory item {:?} is missing at the destination",
                item.id
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::{
        InMemoryStore, MemoryItem, MemoryKind, MemoryStore, Message, SessionStore,
    };

    async fn source() -> (agentmem_core::Layered<InMemoryStore>, SessionId) {
        let store = InMemoryStore::new();
        let id: SessionId = "s".parse().unwrap();
        store
            .append(&id, &[Message::user("a"), Message::assistant("b")])
            .await
            .unwrap();
        store.compact(&id, &[Message::system("ab")]).await.unwrap();
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, "f"))
            .await
            .unwrap();
        (store, id)
    }

    #[tokio::test]
    async fn a_closure_hears_every_step_in_order() {
        let (from, id) = source().await;
        let to = InMemoryStore::new();
        let mut events = Vec::new();
        let report = migrate(&from, &to, MigrateOptions::default(), &mut |e| {
            events.push(e)
        })
        .await
        .unwrap();
        let written = SyncReport {
            created: true,
            messages_written: 3,
            archives_written: 1,
            metadata_written: false,
            labels_written: false,
        };
        let expected = [
            ProgressEvent::Start { sessions: 1 },
            ProgressEvent::Session {
                id,
                messages: 3,
                written,
            },
            ProgressEvent::Finish,
        ];
        assert_eq!(events, expected);
        assert!(report.verified);
    }

    #[tokio::test]
    async fn a_dry_run_writes_and_verifies_nothing() {
        let (from, id) = source().await;
        let to = InMemoryStore::new();
        let options = MigrateOptions {
            batch: 1,
            dry_run: true,
            ..MigrateOptions::default()
        };
        let report = migrate(&from, &to, options, &mut Silent).await.unwrap();
        assert_eq!((report.messages_written, report.memories_written), (3, 1));
        assert!(!report.verified);
        assert!(to.load(&id, None).await.unwrap().is_none());
        assert!(to.list_sessions().await.unwrap().is_empty());
    }

    /// Checkpoint threads are copied whole (every namespace, blobs and pending writes), and a
    /// second run writes nothing.
    #[tokio::test]
    async fn checkpoints_are_copied_once() {
        use agentmem_core::{
            ChannelBlob, Checkpoint, CheckpointKey, CheckpointStore, PendingWrite, TypedBytes,
        };
        let (from, _) = source().await;
        for (ns, id) in [("", "c1"), ("", "c2"), ("child", "c1")] {
            let key = CheckpointKey {
                thread: "user:1/chat *".parse().unwrap(),
                ns: ns.parse().unwrap(),
                id: id.parse().unwrap(),
            };
            let mut checkpoint =
                Checkpoint::new(key.clone(), TypedBytes::new("json", b"{}".to_vec()));
            checkpoint.channel_versions.insert("ch".into(), id.into());
            let blob = ChannelBlob {
                channel: "ch".into(),
                version: id.into(),
                value: Some(TypedBytes::new("bytes", vec![0, 255])),
            };
            from.put_checkpoint(&checkpoint, &[blob]).await.unwrap();
            let write = PendingWrite {
                task_id: "t".into(),
                idx: -1,
                channel: "__error__".into(),
                value: TypedBytes::new("json", b"1".to_vec()),
                task_path: "~0".into(),
            };
            from.put_writes(&key, &[write]).await.unwrap();
        }
        let to = InMemoryStore::new();
        let report = migrate(&from, &to, MigrateOptions::default(), &mut Silent)
            .await
            .unwrap();
        assert_eq!((report.threads, report.checkpoints), (1, 3));
        assert_eq!(report.checkpoints_written, 3);
        let all = CheckpointQuery::default();
        assert_eq!(
            from.list_checkpoints(&all).await.unwrap(),
            to.list_checkpoints(&all).await.unwrap()
        );
        let again = migrate(&from, &to, MigrateOptions::default(), &mut Silent)
            .await
            .unwrap();
        assert_eq!(again.checkpoints_written, 0, "nothing left to write");
    }

    /// A migration can run in a spawned task.
    #[test]
    fn the_migration_future_is_send() {
        fn send<T: Send>(_: &T) {}
        let (from, to) = (InMemoryStore::new(), InMemoryStore::new());
        let mut progress = Silent;
        send(&migrate(
            &from,
            &to,
            MigrateOptions::default(),
            &mut progress,
        ));
    }
}
