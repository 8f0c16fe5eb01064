//! Appends from concurrent tasks: nothing lost, nothing duplicated, each task's order kept,
//! batches contiguous, and appends racing a compaction land exactly once (C2, A6).
//!
//! The cases take `&dyn AgentMemory`, so the "tasks" are futures polled together
//! (`join_all`) that yield between operations: their requests interleave at the backend
//! (several connections, blocking threads or locks in flight at once).

use std::collections::{HashMap, HashSet};

use agentmem_core::{AgentMemory, Message, MessageId, SessionId};
use futures_util::future::join_all;

use super::{contents, ids, load_some, mid, must, numbered, sid};

const TASKS: usize = 16;
const PER_TASK: usize = 25;

/// Parses `task {t} message {i}` / `task {t} batch {b} item {k}` contents back to numbers.
fn numbers(content: &str) -> Vec<usize> {
    content.split(' ').filter_map(|w| w.parse().ok()).collect()
}

/// For each of `tasks` tasks, `per_task` user messages `task {t} message {i}`.
fn task_messages(tasks: usize, per_task: usize) -> Vec<Vec<Message>> {
    (0..tasks)
        .map(|t| {
            (0..per_task)
                .map(|i| Message::user(format!("task {t} message {i}")))
                .collect()
        })
        .collect()
}

/// The ids of `messages`, as a set.
fn id_set<'m>(messages: impl IntoIterator<Item = &'m Message>) -> HashSet<MessageId> {
    messages.into_iter().map(|m| m.id.clone()).collect()
}

/// Appends `messages` to session `id` one at a time, yielding after each so that other
/// tasks' appends interleave with them.
async fn append_one_by_one(store: &dyn AgentMemory, id: &SessionId, messages: &[Message]) {
    for m in messages {
        must::append(store, id, std::slice::from_ref(m)).await;
        tokio::task::yield_now().await;
    }
}

/// Checks that the messages hold every expected id exactly once.
fn assert_exactly_once(messages: &[Message], expected: &HashSet<MessageId>, what: &str) {
    let mut seen = HashSet::new();
    for m in messages {
        assert!(
            seen.insert(m.id.as_str()),
            "{what}: message {:?} appears twice",
            m.content
        );
    }
    let missing: Vec<&MessageId> = expected
        .iter()
        .filter(|id| !seen.contains(id.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{what}: {} acknowledged messages are missing",
        missing.len()
    );
    assert_eq!(
        messages.len(),
        expected.len(),
        "{what}: unexpected extra messages"
    );
}

/// 16 tasks each append 25 messages one by one to one session: all 400 are there once,
/// and each task's messages are in the order it appended them.
pub async fn concurrent_appends_keep_each_task_order(store: &dyn AgentMemory) {
    let id = sid("contended");
    let per_task = task_messages(TASKS, PER_TASK);
    join_all(
        per_task
            .iter()
            .map(|msgs| append_one_by_one(store, &id, msgs)),
    )
    .await;
    let session = load_some(store, &id, None, "concurrent appends").await;
    let expected = id_set(per_task.iter().flatten());
    assert_exactly_once(&session.messages, &expected, "concurrent appends");
    assert_eq!(session.total_messages, (TASKS * PER_TASK) as u64);
    let mut next = [0usize; TASKS];
    for m in &session.messages {
        let n = numbers(&m.content);
        let (t, i) = (n[0], n[1]);
        assert_eq!(i, next[t], "task {t}: message {i} arrived out of order");
        next[t] += 1;
        assert_eq!(m, &per_task[t][i], "task {t} message {i} must be intact");
    }
}

/// 16 tasks each append 5 batches of 5 messages: every batch is stored contiguously
/// (no other task's message inside it), and each task's batches keep their order.
pub async fn concurrent_batch_appends_stay_contiguous(store: &dyn AgentMemory) {
    const BATCHES: usize = 5;
    const BATCH: usize = 5;
    let id = sid("batches");
    let batches: Vec<Vec<Vec<Message>>> = (0..TASKS)
        .map(|t| {
            (0..BATCHES)
                .map(|b| {
                    (0..BATCH)
                        .map(|k| Message::user(format!("task {t} batch {b} item {k}")))
                        .collect()
                })
                .collect()
        })
        .collect();
    join_all(batches.iter().map(|task| {
        let id = &id;
        async move {
            for batch in task {
                must::append(store, id, batch).await;
                tokio::task::yield_now().await;
            }
        }
    }))
    .await;
    let messages = load_some(store, &id, None, "batches").await.messages;
    let expected = id_set(batches.iter().flatten().flatten());
    assert_exactly_once(&messages, &expected, "concurrent batches");
    let mut next_batch = [0usize; TASKS];
    for chunk in messages.chunks(BATCH) {
        let first = numbers(&chunk[0].content);
        let (t, b) = (first[0], first[1]);
        assert_eq!(
            b, next_batch[t],
            "task {t}: batch {b} out of order or split"
        );
        assert_eq!(
            chunk,
            batches[t][b].as_slice(),
            "batch {b} of task {t} must be contiguous, got {:?}",
            contents(chunk)
        );
        next_batch[t] += 1;
    }
}

/// 16 tasks each create and fill their own session at the same time: every session holds
/// exactly its own 25 messages in order, and all 16 are listed with the right counts.
pub async fn concurrent_appends_to_many_sessions_do_not_mix(store: &dyn AgentMemory) {
    let sessions: Vec<(SessionId, Vec<Message>)> = (0..TASKS)
        .map(|t| {
            (
                sid(&format!("parallel_{t:02}")),
                numbered(&format!("session {t}"), PER_TASK),
            )
        })
        .collect();
    join_all(
        sessions
            .iter()
            .map(|(id, msgs)| append_one_by_one(store, id, msgs)),
    )
    .await;
    for (id, msgs) in &sessions {
        assert_eq!(
            ids(&load_some(store, id, None, "many sessions").await.messages),
            ids(msgs),
            "session {id}"
        );
    }
    let listed = must::list_sessions(store).await;
    assert_eq!(listed.len(), TASKS, "every session is listed");
    assert!(
        listed.iter().all(|i| i.message_count == PER_TASK as u64),
        "every session counts {PER_TASK} messages"
    );
}

/// Appends racing with compactions are never lost (A6): 8 tasks append 20 messages each
/// while another task compacts 4 times. Afterwards, reading the archives oldest first and
/// then the session, every appended message appears exactly once, each task's messages in
/// order; every archive after the first starts with the previous compaction's replacement,
/// and the session starts with the last one (a compaction is never half-applied).
pub async fn appends_racing_compaction_are_never_lost(store: &dyn AgentMemory) {
    const APPENDERS: usize = 8;
    const APPENDS: usize = 20;
    const COMPACTIONS: usize = 4;
    let id = sid("racing");
    let initial = numbered("initial", 5);
    must::append(store, &id, &initial).await;
    let per_task = task_messages(APPENDERS, APPENDS);
    let summaries: Vec<Message> = (0..COMPACTIONS)
        .map(|k| Message::system(format!("summary {k}")).with_id(mid(&format!("summary-{k}"))))
        .collect();
    let appenders = join_all(
        per_task
            .iter()
            .map(|msgs| append_one_by_one(store, &id, msgs)),
    );
    let compactor = async {
        for summary in &summaries {
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            must::compact(store, &id, std::slice::from_ref(summary)).await;
        }
    };
    tokio::join!(appenders, compactor);

    let archives = must::list_archives(store, &id).await;
    assert_eq!(archives.len(), COMPACTIONS, "one archive per compaction");
    let mut stages: Vec<Vec<Message>> = Vec::new();
    for info in &archives {
        stages.push(
            store
                .load_archive(&id, &info.id)
                .await
                .expect("load_archive")
                .messages,
        );
    }
    stages.push(load_some(store, &id, None, "racing").await.messages);
    assert_eq!(
        stages[0][..initial.len()],
        initial[..],
        "the first archive starts with the initial messages"
    );
    for (k, stage) in stages.iter().enumerate().skip(1) {
        assert_eq!(
            stage.first(),
            Some(&summaries[k - 1]),
            "stage {k} must start with the replacement of compaction {}",
            k - 1
        );
    }
    let all: Vec<Message> = stages.into_iter().flatten().collect();
    let expected = id_set(per_task.iter().flatten().chain(&initial).chain(&summaries));
    assert_exactly_once(&all, &expected, "appends racing compaction");
    let mut next: HashMap<usize, usize> = HashMap::new();
    for m in all.iter().filter(|m| m.content.starts_with("task ")) {
        let n = numbers(&m.content);
        let slot = next.entry(n[0]).or_insert(0);
        assert_eq!(
            n[1], *slot,
            "task {}: message {} out of order across compactions",
            n[0], n[1]
        );
        *slot += 1;
    }
}
