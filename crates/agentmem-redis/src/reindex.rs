//! Migration 4 → 5: the search index holds stemmed terms.
//!
//! Version 4 indexed words ([`agentmem_core::search::index_words`]); version 5 indexes their
//! Porter stems ([`agentmem_core::search::index_terms`]), so that "adopting" finds
//! "adoption". Lua cannot stem, so the client rebuilds every index, under the migration lock
//! of `schema.rs` and through its fenced scripts:
//!
//! - each session, in id order (`P:ids`, a page of ids at a time): its current messages are
//!   read a page at a time and each page's index is sent to `migrate_4_5_session.lua`; the
//!   first page starts a new index epoch, as a save does (the old epoch is retired, and its
//!   postings deleted once the last page is in), the others add to it. The script checks that
//!   the session is as the client read it (list length, epoch, update time), else the client
//!   reads it again. Finishing a session records its id as the progress;
//! - then each memory item, in insertion order (`P:mem:order`): a page of items' new index
//!   entries goes to `migrate_4_5_memory.lua`, which replaces the old ones of the items whose
//!   JSON is still the one read, and records the page's last insertion sequence.
//!
//! So a migration cut short resumes with the session or the page where it stopped: a session
//! half rebuilt is rebuilt from its first page (retiring the partial epoch), and rebuilding
//! an item's entry twice changes nothing.

use std::future::Future;
use std::pin::Pin;

use agentmem_core::support::micros;
use agentmem_core::{now, Error, Message};
use redis::{Cmd, Script};

use crate::memories::parse_item;
use crate::schema::{migration_script, Fenced, Migrator, Stop};
use crate::search::{index_entry, BatchIndex};
use crate::sessions::push_index;

/// Sessions listed per read of `P:ids` (small in tests, so that paging is exercised).
const SESSION_PAGE: usize = if cfg!(test) { 3 } else { 100 };

/// Messages indexed per script: a page's index is one script's arguments.
const MESSAGE_PAGE: usize = if cfg!(test) { 4 } else { 256 };

/// Memory items read and indexed per script (items may be large: a page is one reply and
/// one script's arguments).
const ITEM_PAGE: usize = if cfg!(test) { 2 } else { 64 };

/// How many retired index entries one `finish` step deletes.
const COLLECT_BUDGET: usize = 1000;

/// How often a session or a page of items is read again after other clients changed it
/// before the migration gives up (only clients of older builds still write meanwhile).
const MAX_ATTEMPTS: usize = 16;

/// The scripts of this migration.
struct Scripts {
    session: Script,
    memory: Script,
}

/// The migration (see the module documentation), as `schema.rs` runs it.
pub(crate) fn migrate_4_5(
    m: &mut Migrator,
) -> Pin<Box<dyn Future<Output = Fenced<()>> + Send + '_>> {
    Box::pin(async move {
        let scripts = Scripts {
            session: migration_script!(
                "lua/shared.lua",
                "lua/prelude.lua",
                "lua/migrate_4_5_session.lua"
            ),
            memory: migration_script!(
                "lua/shared.lua",
                "lua/prelude.lua",
                "lua/memory.lua",
                "lua/migrate_4_5_memory.lua"
            ),
        };
        if m.progress("sessions").is_none() {
            sessions(m, &scripts.session).await?;
            m.set_progress("sessions", "done").await?;
        }
        items(m, &scripts.memory).await
    })
}

/// Rebuilds the index of every session after the last one done.
async fn sessions(m: &mut Migrator, script: &Script) -> Fenced<()> {
    let ids = format!("{}:ids", m.keys().root());
    let mut after = m.progress("s").map(str::to_string);
    loop {
        let list = next_page(&ids, By::Member, after.as_deref(), SESSION_PAGE);
        let page: Vec<String> = m.query(&list).await?;
        for sid in &page {
            session(m, script, sid).await?;
        }
        match page.last() {
            Some(last) if page.len() == SESSION_PAGE => after = Some(last.clone()),
            _ => return Ok(()),
        }
    }
}

/// How a rebuild walks a sorted set: by member (`P:ids`, whose session ids all score 0),
/// or by score, reading the scores too (`P:mem:order`, memory items by insertion sequence).
#[derive(Clone, Copy)]
enum By {
    Member,
    Score,
}

/// The read of the next page, `limit` entries at most, of the sorted set `key` walked `by`
/// member or score: those after `after` (the last member or score of the page before, as
/// the progress records it), or from the first when `None`.
fn next_page(key: &str, by: By, after: Option<&str>, limit: usize) -> Cmd {
    let (command, min, max) = match by {
        By::Member => ("ZRANGEBYLEX", "-", "+"),
        By::Score => ("ZRANGEBYSCORE", "-inf", "+inf"),
    };
    let mut list = redis::cmd(command);
    list.arg(key);
    match after {
        Some(last) => list.arg(format!("({last}")),
        None => list.arg(min),
    };
    list.arg(max);
    if let By::Score = by {
        list.arg("WITHSCORES");
    }
    list.arg("LIMIT").arg(0).arg(limit);
    list
}

/// How one attempt at rebuilding a session's index ended.
enum Pages {
    /// Every page is indexed, or the session is gone.
    Done,
    /// Another client wrote to the session meanwhile: start over.
    Changed,
}

/// Rebuilds the index of session `sid`, then deletes its retired postings.
async fn session(m: &mut Migrator, script: &Script, sid: &str) -> Fenced<()> {
    for _ in 0..MAX_ATTEMPTS {
        if let Pages::Done = pages(m, script, sid).await? {
            loop {
                let mut inv = m.invocation(script);
                inv.arg("finish").arg(sid).arg(COLLECT_BUDGET);
                match m.run(&inv).await?.0.as_str() {
                    "ok" => return Ok(()),
                    "more" => {}
                    other => return Err(unexpected(other)),
                }
            }
        }
    }
    Err(Stop::Failed(Error::conflict(format!(
        "session {sid:?} kept changing while its search index was rebuilt for schema version 5; stop the processes of older agentmem builds and open the store again"
    ))))
}

/// One attempt at indexing every current message of session `sid`, a page at a time.
async fn pages(m: &mut Migrator, script: &Script, sid: &str) -> Fenced<Pages> {
    let root = m.keys().root().to_string();
    let (meta, msgs) = (
        format!("{root}:s:{sid}:meta"),
        format!("{root}:s:{sid}:msgs"),
    );
    let mut read = redis::pipe();
    // MULTI/EXEC: the length and the meta of one state, which every page's script checks.
    read.atomic()
        .cmd("HMGET")
        .arg(&meta)
        .arg(&["created", "epoch", "updated"])
        .cmd("LLEN")
        .arg(&msgs);
    let (fields, len): (Vec<Option<String>>, usize) = m.query_pipe(&read).await?;
    let [created, epoch, updated] = <[Option<String>; 3]>::try_from(fields)
        .map_err(|_| Error::corrupt("unexpected reply to HMGET of a session's meta"))?;
    if created.is_none() {
        return Ok(Pages::Done);
    }
    let mut epoch = match epoch {
        Some(e) => e
            .parse::<i64>()
            .map_err(|_| Error::corrupt(format!("session {sid:?} has the index epoch {e:?}")))?,
        None => 0,
    };
    let updated = updated.unwrap_or_default();
    let mut at = 0;
    loop {
        let n = MESSAGE_PAGE.min(len - at);
        let raw: Vec<Vec<u8>> = if n == 0 {
            Vec::new()
        } else {
            let mut range = redis::cmd("LRANGE");
            range.arg(&msgs).arg(at).arg(at + n - 1);
            m.query(&range).await?
        };
        if raw.len() != n {
            return Ok(Pages::Changed);
        }
        let texts: Vec<String> = raw.iter().map(|json| content(sid, json)).collect();
        let index = BatchIndex::new(texts.iter().map(String::as_str));
        let mut inv = m.invocation(script);
        inv.arg("page")
            .arg(sid)
            .arg(micros(now()))
            .arg(at)
            .arg(n)
            .arg(len)
            .arg(epoch)
            .arg(&updated);
        push_index(&mut inv, &index);
        let (status, rest) = m.run(&inv).await?;
        match status.as_str() {
            "ok" => {
                epoch = rest
                    .into_iter()
                    .next()
                    .map(redis::from_redis_value)
                    .transpose()
                    .ok()
                    .flatten()
                    .ok_or_else(|| unexpected("ok without an epoch"))?;
            }
            "gone" => return Ok(Pages::Done),
            "changed" => return Ok(Pages::Changed),
            other => return Err(unexpected(other)),
        }
        at += n;
        if at >= len {
            return Ok(Pages::Done);
        }
    }
}

/// The text a stored message contributes to the index; none (with a warning) when it is
/// unreadable, as no search could return it anyway.
fn content(sid: &str, json: &[u8]) -> String {
    match serde_json::from_slice::<Message>(json) {
        Ok(message) => message.content,
        Err(e) => {
            tracing::warn!(session = sid, error = %e, "an unreadable message is left out of the search index");
            String::new()
        }
    }
}

/// Rebuilds the index entry of every memory item after the last page done.
async fn items(m: &mut Migrator, script: &Script) -> Fenced<()> {
    let root = m.keys().root().to_string();
    let (order, items) = (format!("{root}:mem:order"), format!("{root}:mem:items"));
    let mut after = m.progress("m").map(str::to_string);
    loop {
        let list = next_page(&order, By::Score, after.as_deref(), ITEM_PAGE);
        // Sequences are integers below 2^53: a double holds them, and prints them whole.
        let page: Vec<(String, f64)> = m.query(&list).await?;
        let Some(&(_, last)) = page.last() else {
            return Ok(());
        };
        let last = last.to_string();
        let ids: Vec<String> = page.into_iter().map(|(id, _)| id).collect();
        item_page(m, script, &items, ids, &last).await?;
        after = Some(last);
    }
}

/// Rebuilds the index entries of the items `ids` (of `items`, the items hash), recording
/// `last` (the page's last insertion sequence) as done.
async fn item_page(
    m: &mut Migrator, script: &Script, items: &str, mut ids: Vec<String>, last: &str,
) -> Fenced<()> {
    for _ in 0..MAX_ATTEMPTS {
        let jsons: Vec<Option<Vec<u8>>> = if ids.is_empty() {
            Vec::new()
        } else {
            m.query(redis::cmd("HMGET").arg(items).arg(&ids)).await?
        };
        let mut inv = m.invocation(script);
        inv.arg(last);
        for (id, json) in ids.iter().zip(jsons) {
            // Deleted meanwhile: nothing to index.
            let Some(json) = json else { continue };
            let text = match parse_item(&json) {
                Ok(item) => item.text,
                Err(e) => {
                    tracing::warn!(item = id.as_str(), error = %e, "an unreadable memory item keeps its index entry");
                    continue;
                }
            };
            inv.arg(id).arg(json).arg(index_entry(&text).to_string());
        }
        let (status, rest) = m.run(&inv).await?;
        match status.as_str() {
            "ok" => return Ok(()),
            "changed" => {
                ids = rest
                    .into_iter()
                    .map(redis::from_redis_value)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| Error::corrupt(format!("unreadable migration reply: {e}")))?;
            }
            other => return Err(unexpected(other)),
        }
    }
    Err(Stop::Failed(Error::conflict(
        "memory items kept changing while their search index was rebuilt for schema version 5; stop the processes of older agentmem builds and open the store again",
    )))
}

/// A reply no migration script gives.
fn unexpected(status: &str) -> Stop {
    Stop::Failed(Error::corrupt(format!(
        "unexpected reply {status:?} from a migration script"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memories::put_item;
    use crate::schema::{self, Limits, MIGRATIONS};
    use crate::search::entry_with;
    use crate::sessions::write_indexed;
    use crate::test_raw::{index_counters, keys};
    use crate::{RedisStore, SCHEMA_VERSION};
    use agentmem_core::search::{index_terms, index_words};
    use agentmem_core::support::archive_id_base;
    use agentmem_core::{
        AgentMemory, InMemoryStore, Layered, MemoryFilter, MemoryItem, MemoryKind, MemoryScope,
        MemoryStore, MessageQuery, SessionId, SessionPatch, SessionStore,
    };
    use agentmem_testkit::NamespaceGuard;
    use chrono::{DateTime, Utc};
    use redis::aio::MultiplexedConnection;
    use redis::FromRedisValue;
    use std::time::Duration;

    fn url() -> String {
        agentmem_testkit::env_url("REDIS_URL", "redis://127.0.0.1:6379")
    }

    async fn open(prefix: &str) -> Layered<RedisStore> {
        let client = redis::Client::open(url()).unwrap();
        RedisStore::from_client(client, prefix).await.unwrap()
    }

    /// A store under a fresh prefix holding [`version_4_data`], a raw connection, the guard
    /// that deletes the prefix's keys, and the reference store holding the same data; `None`
    /// (the test skips) when Redis does not answer.
    async fn at_version_4(
        tag: &str,
    ) -> Option<(
        Layered<RedisStore>,
        MultiplexedConnection,
        NamespaceGuard,
        Layered<InMemoryStore>,
    )> {
        let prefix = agentmem_testkit::unique_namespace(tag);
        let guard = NamespaceGuard::new().redis_store_prefix(&url(), &prefix);
        let client = redis::Client::open(url()).unwrap();
        let store = match RedisStore::from_client(client.clone(), &prefix).await {
            Ok(store) => store,
            Err(e) => return agentmem_testkit::service_unavailable("redis", &url(), &e),
        };
        let mut raw = client.get_multiplexed_async_connection().await.unwrap();
        let reference = version_4_data(&store, &mut raw).await;
        Some((store, raw, guard, reference))
    }

    fn sid(s: &str) -> SessionId {
        s.parse().unwrap()
    }

    /// Runs session script `script` of `store`, which writes `messages` to `session` at
    /// `at` (after the script's `extra` arguments), indexing them as schema version 4 did:
    /// words, unstemmed. Returns the script's reply.
    async fn write_old<T: FromRedisValue>(
        store: &RedisStore, script: &Script, session: &SessionId, at: DateTime<Utc>,
        extra: &[&str], messages: &[Message],
    ) -> T {
        let index = BatchIndex::with(messages.iter().map(|m| m.content.as_str()), index_words);
        let inv = write_indexed(script, &store.keys, session, at, extra, messages, &index).unwrap();
        store.invoke(&inv).await.unwrap()
    }

    /// Appends `texts` to session `id` of `store` as schema version 4 did (unstemmed words
    /// in the index), and to `reference` as it is.
    async fn append(store: &RedisStore, reference: &dyn AgentMemory, id: &str, texts: &[&str]) {
        let messages: Vec<Message> = texts.iter().copied().map(Message::user).collect();
        let session = sid(id);
        let script = &store.scripts.append;
        let _: i64 = write_old(store, script, &session, now(), &[], &messages).await;
        reference.append(&session, &messages).await.unwrap();
    }

    /// Compacts session `id` into the messages of `texts`, as [`append`] appends.
    async fn compact(store: &RedisStore, reference: &dyn AgentMemory, id: &str, texts: &[&str]) {
        let messages: Vec<Message> = texts.iter().copied().map(Message::system).collect();
        let session = sid(id);
        let at = now();
        let base = archive_id_base(at);
        let script = &store.scripts.compact;
        let _: Option<(String, u64)> =
            write_old(store, script, &session, at, &[&base], &messages).await;
        reference.compact(&session, &messages).await.unwrap();
    }

    /// Saves session `id` as holding nothing, as [`append`] appends.
    async fn save_empty(store: &RedisStore, reference: &dyn AgentMemory, id: &str) {
        let session = sid(id);
        let _: i64 = write_old(store, &store.scripts.save, &session, now(), &["{}"], &[]).await;
        reference
            .save_session(&session, &[], &Default::default())
            .await
            .unwrap();
    }

    /// Puts `item` as schema version 4 did (unstemmed words in its index entry).
    async fn put(store: &RedisStore, reference: &dyn AgentMemory, item: MemoryItem) {
        let entry = entry_with(&item.text, index_words).to_string();
        let inv = put_item(&store.scripts.put_memory, &store.keys, &item, &entry, now()).unwrap();
        let reply: Vec<String> = store.invoke(&inv).await.unwrap();
        assert_eq!(reply, ["ok"]);
        reference.put_memory(&item).await.unwrap();
    }

    const SESSIONS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];

    /// Data of schema version 4 under `store`'s prefix, and the same data in a reference
    /// store: sessions written in one batch and in several (postings with position markers),
    /// compacted (a retired epoch left to collect), expiring, empty, more of them than one
    /// page lists, and longer than one page of messages; memory items of several kinds and
    /// scopes, more than one page of them.
    async fn version_4_data(
        store: &RedisStore, raw: &mut MultiplexedConnection,
    ) -> Layered<InMemoryStore> {
        let reference = InMemoryStore::new();
        let r = &reference;
        append(
            store,
            r,
            "a",
            &[
                "I looked into adoption",
                "They adopted a cat",
                "nothing here",
            ],
        )
        .await;
        append(store, r, "a", &["adopting again"]).await;
        append(
            store,
            r,
            "a",
            &["more cats", "running runners ran", "connections"],
        )
        .await;
        let long: Vec<String> = (0..10)
            .map(|i| format!("message {i} about adoptions and running cats"))
            .collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        append(store, r, "b", &long).await;
        compact(store, r, "b", &long[..9]).await;
        append(store, r, "b", &["connecting the adopted"]).await;
        append(store, r, "c", &["an expiring adoption"]).await;
        let expires = SessionPatch {
            expires_at: Some(Some(now() + chrono::Duration::days(1))),
            ..SessionPatch::default()
        };
        for s in [store as &dyn AgentMemory, r] {
            s.update_session(&sid("c"), &expires).await.unwrap();
        }
        save_empty(store, r, "d").await;
        for id in ["e", "f", "g"] {
            append(store, r, id, &[&format!("session {id} is adopting cats")]).await;
        }
        for (kind, text) in [
            (MemoryKind::Fact, "The user is adopting a dog"),
            (MemoryKind::Fact, "adoption papers signed"),
            (MemoryKind::Insight, "runners running"),
            (MemoryKind::LongTerm, "cats"),
            (MemoryKind::Fact, "connection issues when adopting"),
        ] {
            put(store, r, MemoryItem::new(kind, text)).await;
        }
        let mut scoped = MemoryItem::new(MemoryKind::Fact, "alice adopted a cat");
        scoped.scope = MemoryScope::agent("alice");
        put(store, r, scoped).await;
        let _: () = redis::cmd("SET")
            .arg(store.keys.schema())
            .arg(4)
            .query_async(raw)
            .await
            .unwrap();
        reference
    }

    /// Meta field `field` of each session of [`SESSIONS`] (`None`: not set).
    async fn meta_fields<T: FromRedisValue>(
        store: &RedisStore, raw: &mut MultiplexedConnection, field: &str,
    ) -> Vec<Option<T>> {
        let mut out = Vec::new();
        for id in SESSIONS {
            let value: Option<T> = redis::cmd("HGET")
                .arg(store.keys.meta(&sid(id)))
                .arg(field)
                .query_async(raw)
                .await
                .unwrap();
            out.push(value);
        }
        out
    }

    /// The index epoch of each session of [`SESSIONS`].
    async fn epochs(store: &RedisStore, raw: &mut MultiplexedConnection) -> Vec<i64> {
        let epochs = meta_fields(store, raw, "epoch").await;
        epochs.into_iter().map(|e| e.unwrap_or(0)).collect()
    }

    fn message_view(hits: Vec<agentmem_core::MessageHit>) -> Vec<(String, String, f64)> {
        hits.into_iter()
            .map(|h| (h.session.into_string(), h.message.content, h.score))
            .collect()
    }

    fn memory_view(hits: Vec<agentmem_core::MemoryHit>) -> Vec<(String, f64)> {
        hits.into_iter().map(|h| (h.item.text, h.score)).collect()
    }

    /// Asserts that `store` holds the index schema version 5 builds: it finds and ranks as
    /// the reference store (agentmem-core's BM25 over stemmed terms) does, keeps counters of
    /// the stemmed terms, and holds no postings of unstemmed words, retired epochs or
    /// migration keys.
    async fn assert_migrated(
        store: &RedisStore, reference: &dyn AgentMemory, raw: &mut MultiplexedConnection,
    ) {
        assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
        let root = store.keys.root();
        let hits = store
            .search_messages("adopting", &MessageQuery::default())
            .await
            .unwrap();
        assert!(
            hits.iter()
                .any(|h| h.message.content == "I looked into adoption"),
            "{hits:?}"
        );
        for query in [
            "adopting",
            "adoption",
            "cats",
            "run",
            "connecting",
            "session summary",
        ] {
            for session in [None].into_iter().chain(SESSIONS.map(|s| Some(sid(s)))) {
                let scope = MessageQuery { session, limit: 50 };
                let want = message_view(reference.search_messages(query, &scope).await.unwrap());
                let got = message_view(store.search_messages(query, &scope).await.unwrap());
                assert_eq!(got, want, "{query:?} {scope:?}");
            }
            let everything = MemoryFilter::default();
            let want = memory_view(reference.search_memories(query, &everything).await.unwrap());
            let got = memory_view(store.search_memories(query, &everything).await.unwrap());
            assert_eq!(got, want, "{query:?}");
        }
        let hits = store
            .search_memories("adopting", &MemoryFilter::default())
            .await
            .unwrap();
        assert!(hits.iter().any(|h| h.item.text == "adoption papers signed"));
        // The counters hold the terms of the current messages.
        let mut docs = 0;
        let mut words = 0;
        for id in SESSIONS {
            if let Some(session) = reference.load(&sid(id), None).await.unwrap() {
                docs += session.messages.len();
                words += session
                    .messages
                    .iter()
                    .map(|m| index_terms(&m.content).len())
                    .sum::<usize>();
            }
        }
        assert_eq!(index_counters(raw, root).await, (docs as i64, words as i64));
        // Nothing of the unstemmed index, of retired epochs or of the migration is left.
        for pattern in [
            format!("{root}:ix:adoption"),
            format!("{root}:s:*:t:adoption"),
            format!("{root}:s:*:adoption"),
            format!("{root}:mem:t:adoption"),
            format!("{root}:mem:t:running"),
            format!("{root}:s:*:gc"),
            format!("{root}:migrat*"),
        ] {
            assert_eq!(keys(raw, &pattern).await, Vec::<String>::new(), "{pattern}");
        }
        let reindexed: Vec<Option<String>> = meta_fields(store, raw, "reindexed").await;
        assert_eq!(reindexed, vec![None; SESSIONS.len()]);
    }

    /// What an open rebuilds: the epoch of every session holding words moves on once.
    fn once(before: &[i64]) -> Vec<i64> {
        SESSIONS
            .iter()
            .zip(before)
            .map(|(id, e)| if *id == "d" { *e } else { e + 1 })
            .collect()
    }

    #[tokio::test]
    async fn version_4_indexes_are_rebuilt_with_stemmed_terms() {
        let Some((store, mut raw, _guard, reference)) = at_version_4("reindex").await else {
            return;
        };
        // Before: version 4 does not find "adoption" for "adopting".
        assert_eq!(
            keys(&mut raw, &format!("{}:mem:t:adoption", store.keys.root()))
                .await
                .len(),
            1
        );
        let before = epochs(&store, &mut raw).await;
        let migrated = open(store.prefix()).await;
        assert_eq!(epochs(&store, &mut raw).await, once(&before));
        assert_migrated(&migrated, &reference, &mut raw).await;
        // Writes index stemmed terms as on any new store.
        let more = [Message::user("adopters"), Message::user("runs")];
        for s in [&*migrated as &dyn AgentMemory, &reference] {
            s.append(&sid("d"), &more).await.unwrap();
        }
        assert_migrated(&migrated, &reference, &mut raw).await;
    }

    #[tokio::test]
    async fn concurrent_openers_rebuild_once() {
        let Some((store, mut raw, _guard, reference)) = at_version_4("reindex_race").await else {
            return;
        };
        let before = epochs(&store, &mut raw).await;
        let (a, b) = tokio::join!(open(store.prefix()), open(store.prefix()));
        assert_eq!(epochs(&store, &mut raw).await, once(&before));
        assert_migrated(&a, &reference, &mut raw).await;
        assert_migrated(&b, &reference, &mut raw).await;
    }

    /// A migration whose process dies after any step (its lock then expires) is finished by
    /// the next opener, with every posting once.
    #[tokio::test]
    async fn a_rebuild_cut_short_anywhere_is_finished_by_the_next_opener() {
        let Some((store, mut raw, _guard, reference)) = at_version_4("reindex_crash").await else {
            return;
        };
        let deadline = Duration::from_secs(10);
        let mut crashes = 0;
        // Each round dies one step later than the last (its first steps redo what the last
        // round had not recorded as done).
        for steps in 1.. {
            let limits = Limits {
                crash_after: Some(steps),
                ..Limits::new(deadline)
            };
            match schema::ensure(&store.conn, &store.keys, SCHEMA_VERSION, MIGRATIONS, limits).await
            {
                Ok(version) => {
                    assert_eq!(version, SCHEMA_VERSION);
                    break;
                }
                Err(_) => {
                    crashes += 1;
                    // The dead process's lock expires.
                    let _: () = redis::cmd("DEL")
                        .arg(store.keys.migration_lock())
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                }
            }
        }
        assert!(crashes > 5, "{crashes}");
        assert_migrated(&store, &reference, &mut raw).await;
    }
}
