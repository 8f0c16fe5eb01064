//! Collections, indexes, the schema version document and forward migrations, and the
//! detection of what the server supports (transactions, text indexes), done once on open.

use agentmem_core::{Error, Result};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::{Client, Database, IndexModel};

use crate::codec::{encoded_size, str_field, terms_budget, terms_within, TERMS};
use crate::error::{
    from_driver, server_code, ResultExt, CANNOT_CREATE_INDEX, INDEX_NOT_FOUND, NAMESPACE_NOT_FOUND,
};

/// The schema version this build writes. Stored in `meta` as `{_id: "schema", version}`.
///
/// - 1: the first layout.
/// - 2: memory items have a scope (`scope`, the stored form, `""` for global) and an expiry
///   time (`expires`); keys are unique per (`scope`, `kind_key`) instead of per `kind_key`.
/// - 3: sessions have labels (`title`, `owner`, `tags: [{k, v}]`, revision `rev`) and an expiry
///   (`expires` in microseconds, `expires_at` as a date for the TTL indexes, also stamped on the
///   session's messages, archived messages and heads); indexes on `owner`, `tags.k`+`tags.v`,
///   `expires` and the TTL indexes. Sessions of version 2 have none of these fields: no labels,
///   never expire.
/// - 4: messages (in `messages`) and memory items have `terms`, the Porter stems of their
///   text, which search matches on; the text indexes cover `terms` instead of `content` and
///   `text`.
pub const SCHEMA_VERSION: u32 = 4;

/// Collection of bookkeeping documents: the schema version (`_id: "schema"`) and the store
/// properties (`_id: "property:<name>"`, `value`).
pub(crate) const META: &str = "meta";
/// One document per session, written by appends: `epoch`, `next`, `created`, `updated`.
pub(crate) const SESSIONS: &str = "sessions";
/// One document per session epoch, written only by `save_session` and compaction: `low`,
/// `metadata` and the archive list. Kept apart from `sessions` so that a transaction holding
/// it never blocks appends.
pub(crate) const HEADS: &str = "heads";
/// One document per current message, keyed by (session, epoch, seq).
pub(crate) const MESSAGES: &str = "messages";
/// One document per archived message, keyed by (session, epoch, archive, pos).
pub(crate) const ARCHIVED: &str = "archived_messages";
/// One document per memory item; `_id` is the item id.
pub(crate) const MEMORIES: &str = "memories";
/// One document per checkpoint, keyed by (thread, ns, cid), holding its pending writes.
pub(crate) const CHECKPOINTS: &str = "checkpoints";
/// One document per checkpoint channel value, keyed by (thread, ns, channel, version).
pub(crate) const CHECKPOINT_BLOBS: &str = "checkpoint_blobs";

/// One document per knowledge-graph entity; `_id` is the digest of its name.
pub(crate) const GRAPH_ENTITIES: &str = "graph_entities";
/// One document per knowledge-graph relation; `_id` is the digest of (from, to, type).
pub(crate) const GRAPH_RELATIONS: &str = "graph_relations";

/// One document per embedding vector, `{_id: BinData(key), data: BinData}`; created by the
/// first put (no index beyond `_id`).
pub(crate) const VECTORS: &str = "vectors";

/// The unique index of schema version 1 on `kind_key` alone, dropped by the move to 2.
const V1_KIND_KEY_INDEX: &str = "kind_key";

/// The text indexes of schema versions 1 to 3 (collection, name), over the raw `content` and
/// `text`: dropped by the move to 4, before the indexes on `terms` are created (a collection
/// has at most one text index).
const V3_TEXT_INDEXES: [(&str, &str); 2] = [(MESSAGES, "content_text"), (MEMORIES, "text_text")];

/// The schema version whose text indexes cover `terms`.
const TERMS_VERSION: u32 = 4;

/// What the server behind a store supports, detected once when the store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerFeatures {
    /// Multi-document transactions (replica sets and sharded clusters): compaction and
    /// `save_session` are atomic, and batch appends are all-or-nothing.
    pub transactions: bool,
    /// Text indexes: search uses `$text` with `textScore` instead of client-side BM25.
    pub text_search: bool,
    /// TTL indexes (`expireAfterSeconds`), which the server keeps and acts on: it deletes
    /// expired sessions by itself (`capabilities().native_expiry`).
    pub ttl: bool,
}

impl ServerFeatures {
    /// Every feature: as a mask for
    /// [`MongoStore::from_client_with`](crate::MongoStore::from_client_with), "use whatever
    /// the server has".
    pub const ALL: ServerFeatures = ServerFeatures {
        transactions: true,
        text_search: true,
        ttl: true,
    };

    /// The features in both `self` and `allowed`.
    pub(crate) fn only(self, allowed: ServerFeatures) -> ServerFeatures {
        ServerFeatures {
            transactions: self.transactions && allowed.transactions,
            text_search: self.text_search && allowed.text_search,
            ttl: self.ttl && allowed.ttl,
        }
    }
}

/// Forward migrations: `MIGRATIONS[v]` takes a database at version `v` to `v + 1`.
/// Version 0 is an empty database; 0 → 1 lays out the collections and indexes, which
/// [`ensure_indexes`] (run on every open, idempotently, before the migrations) already does,
/// so it has no data step. 1 → 2 is [`scope_memories`]. 2 → 3 (session labels and expiry)
/// adds only optional fields, whose absence reads as "no labels, never expires", and indexes,
/// which [`ensure_indexes`] creates: no data step either. 3 → 4 is [`fill_terms`] (its index
/// change is in [`ensure_indexes`], which must drop the old text indexes before it can create
/// the new ones). A later layout change adds its step here and bumps [`SCHEMA_VERSION`].
/// Every step is idempotent: two processes opening the database at once may both run it.
const MIGRATIONS: [fn(&Database) -> MigrationFuture<'_>; SCHEMA_VERSION as usize] = [
    |_| Box::pin(async { Ok(()) }),
    |db| Box::pin(scope_memories(db)),
    |_| Box::pin(async { Ok(()) }),
    |db| Box::pin(fill_terms(db)),
];

type MigrationFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// Opens the store's database: refuses a newer schema, creates collections and indexes,
/// applies forward migrations, records the version, and detects server features.
pub(crate) async fn open(client: &Client, db: &Database) -> Result<(u32, ServerFeatures)> {
    let transactions = supports_transactions(client).await?;
    let stored = stored_version(db).await?;
    if stored > SCHEMA_VERSION {
        return Err(Error::unsupported(format!(
            "database `{}` has agentmem schema version {stored}, newer than this build's {SCHEMA_VERSION}; upgrade agentmem to open it",
            db.name()
        )));
    }
    let (text_search, ttl) = ensure_indexes(db, stored).await?;
    for (from, step) in MIGRATIONS.iter().enumerate().skip(stored as usize) {
        tracing::info!(
            database = db.name(),
            from,
            to = from + 1,
            "migrating agentmem schema"
        );
        step(db).await?;
        // `$max` so that two processes migrating at once never move the version backwards.
        db.collection::<Document>(META)
            .update_one(
                doc! {"_id": "schema"},
                doc! {"$max": {"version": (from + 1) as i32}},
            )
            .upsert(true)
            .await
            .mapped()?;
    }
    Ok((
        SCHEMA_VERSION,
        ServerFeatures {
            transactions,
            text_search,
            ttl,
        },
    ))
}

/// 1 → 2: memory keys become unique per scope. [`ensure_indexes`] has already created the
/// unique index on (`scope`, `kind_key`) (the items of version 1, without `scope`, are
/// unique in it by `kind_key`); this drops the version 1 index on `kind_key` alone, which
/// would keep one key from being used in two scopes, and makes every item without a scope
/// global (`scope: ""`). Items of version 1 have no `expires`, so they never expire. Safe to
/// run twice or concurrently: an index already dropped is skipped, and the update only sets
/// fields still missing.
async fn scope_memories(db: &Database) -> Result<()> {
    let memories = db.collection::<Document>(MEMORIES);
    match memories.drop_index(V1_KIND_KEY_INDEX).await {
        Ok(()) => {}
        Err(e) if server_code(&e) == Some(INDEX_NOT_FOUND) => {}
        Err(e) => return Err(from_driver(e)),
    }
    memories
        .update_many(
            doc! {"scope": {"$exists": false}},
            doc! {"$set": {"scope": ""}},
        )
        .await
        .mapped()?;
    Ok(())
}

/// The most documents [`fill_terms`] reads per query, and updates per command.
const FILL_BATCH: i64 = 500;

/// The most bytes of `terms` one update command of [`fill_terms`] carries (a command is at
/// most 16 MiB; a single larger value goes alone).
const FILL_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// 3 → 4: gives every message (in `messages`) and memory item without `terms` the terms of
/// its text, computed here as the write paths compute them (from the text as stored, so an
/// encrypted store gets the terms of its ciphertext, as its writes do). Archived messages get
/// none: no search reads them.
///
/// Pages through each collection by `_id`, [`FILL_BATCH`] documents a query, and sets the
/// terms with one `update` command per batch, each statement by `_id` and only where `terms`
/// is still missing, so that two processes migrating at once, or a write of this version
/// meanwhile (which carries its own terms), are never overwritten; an item's statement also
/// requires the `updated` it was read with, so that an item rewritten since (by a process of
/// an older version still running) is not given the terms of its old text. A document whose
/// text is not a string is left alone (reading it is corrupt data either way).
async fn fill_terms(db: &Database) -> Result<()> {
    for (coll, field, guard) in [
        (MESSAGES, "content", None),
        (MEMORIES, "text", Some("updated")),
    ] {
        let collection = db.collection::<Document>(coll);
        let mut after: Option<Bson> = None;
        loop {
            let mut filter = doc! {TERMS: {"$exists": false}};
            if let Some(last) = &after {
                filter.insert("_id", doc! {"$gt": last.clone()});
            }
            let mut cursor = collection
                .find(filter)
                .sort(doc! {"_id": 1})
                .limit(FILL_BATCH)
                .await
                .mapped()?;
            let (mut updates, mut bytes, mut read) = (Vec::new(), 0usize, 0i64);
            while let Some(d) = cursor.try_next().await.mapped()? {
                read += 1;
                let Some(id) = d.get("_id").cloned() else {
                    continue;
                };
                after = Some(id.clone());
                let Ok(text) = str_field(&d, field) else {
                    tracing::warn!(database = db.name(), coll, ?id, "no text to index; skipped");
                    continue;
                };
                let terms = terms_within(text, terms_budget(encoded_size("a document", &d)?));
                let mut q = doc! {"_id": id, TERMS: {"$exists": false}};
                if let Some(g) = guard {
                    q.insert(g, d.get(g).cloned().unwrap_or(Bson::Null));
                }
                if bytes > 0 && bytes + terms.len() > FILL_BATCH_BYTES {
                    set_terms(db, coll, std::mem::take(&mut updates)).await?;
                    bytes = 0;
                }
                bytes += terms.len();
                updates.push(doc! {"q": q, "u": {"$set": {TERMS: terms}}});
            }
            if !updates.is_empty() {
                set_terms(db, coll, updates).await?;
            }
            if read < FILL_BATCH {
                break;
            }
        }
    }
    Ok(())
}

/// Runs the update statements `updates` on `coll` in one `update` command, unordered; fails
/// on a failed statement or write concern, which the command reports in its reply (under
/// `ok: 1`) rather than as an error.
async fn set_terms(db: &Database, coll: &str, updates: Vec<Document>) -> Result<()> {
    let reply = db
        .run_command(doc! {"update": coll, "updates": updates, "ordered": false})
        .await
        .mapped()?;
    let failure = match (
        reply.get_document("writeConcernError"),
        reply.get_array("writeErrors"),
    ) {
        (Ok(failure), _) => Some(failure),
        (_, Ok(errors)) => errors.iter().find_map(Bson::as_document),
        _ => None,
    };
    match failure {
        None => Ok(()),
        Some(f) => Err(Error::backend(format!(
            "filling in the search terms of `{coll}` failed: {}",
            f.get_str("errmsg").unwrap_or("a write error")
        ))),
    }
}

/// The schema version recorded in the database, 0 when none is.
pub(crate) async fn stored_version(db: &Database) -> Result<u32> {
    let found = db
        .collection::<Document>(META)
        .find_one(doc! {"_id": "schema"})
        .await
        .mapped()?;
    let Some(d) = found else { return Ok(0) };
    match d.get("version") {
        Some(Bson::Int32(v)) if *v >= 0 => Ok(*v as u32),
        Some(Bson::Int64(v)) if *v >= 0 && *v <= i64::from(u32::MAX) => Ok(*v as u32),
        other => Err(Error::corrupt(format!(
            "the schema version document holds {other:?}, expected a non-negative integer"
        ))),
    }
}

/// Transactions need a replica set or a sharded cluster, and sessions: the server says so in
/// `hello` (`setName` or `msg: "isdbgrid"`, and `logicalSessionTimeoutMinutes`). Standalone
/// servers may accept transaction commands without isolating them, so this asks the topology
/// rather than trying one.
async fn supports_transactions(client: &Client) -> Result<bool> {
    let hello = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .mapped()?;
    let sessions = hello.get("logicalSessionTimeoutMinutes").is_some();
    let replicated = hello.get_str("setName").is_ok() || hello.get_str("msg") == Ok("isdbgrid");
    Ok(sessions && replicated)
}

/// The index `name` over `keys` with `options`.
fn named_index(keys: Document, name: &str, mut options: IndexOptions) -> IndexModel {
    options.name = Some(name.to_string());
    IndexModel::builder().keys(keys).options(options).build()
}

fn index(keys: Document, name: &str) -> IndexModel {
    named_index(keys, name, IndexOptions::default())
}

fn unique_index(keys: Document, name: &str) -> IndexModel {
    named_index(keys, name, IndexOptions::builder().unique(true).build())
}

/// A unique index over the documents that have `field` only (a partial index: a sparse one
/// would still hold every document of a compound index whose other fields are set).
fn unique_where_present(keys: Document, field: &str, name: &str) -> IndexModel {
    let options = IndexOptions::builder()
        .unique(true)
        .partial_filter_expression(doc! {field: {"$exists": true}})
        .build();
    named_index(keys, name, options)
}

fn sparse_index(keys: Document, name: &str) -> IndexModel {
    named_index(keys, name, IndexOptions::builder().sparse(true).build())
}

/// A text index without stemming or stop words (`default_language: "none"`), over `field`
/// (`terms`, already stemmed in the client), so `$text` matches whole terms as agentmem's
/// search contract says.
fn text_index(field: &str, name: &str) -> IndexModel {
    let options = IndexOptions::builder()
        .default_language("none".to_string())
        .build();
    named_index(doc! {field: "text"}, name, options)
}

/// A TTL index on `expires_at` (a date): the server deletes a document once that time has
/// passed (`expireAfterSeconds: 0`), partial to the documents that have one.
fn ttl_index(name: &str) -> IndexModel {
    let options = IndexOptions::builder()
        .expire_after(std::time::Duration::ZERO)
        .build();
    named_index(doc! {"expires_at": 1}, name, options)
}

/// The TTL index name on every session collection.
const TTL_INDEX: &str = "expires_at_ttl";

/// Creates every collection's indexes (a no-op when they exist) and returns whether the
/// server accepted the text indexes and the TTL indexes. Creating indexes also creates the
/// collections, which transactions on older servers cannot do implicitly. A database of a
/// version before [`TERMS_VERSION`] (`stored`) first loses its old text indexes.
pub(crate) async fn ensure_indexes(db: &Database, stored: u32) -> Result<(bool, bool)> {
    let create = |coll: &'static str, model: IndexModel| {
        let c = db.collection::<Document>(coll);
        async move { c.create_index(model).await }
    };
    // The indexes every server must accept.
    let required = [
        (
            MESSAGES,
            unique_index(
                doc! {"session": 1, "epoch": 1, "seq": 1},
                "session_epoch_seq",
            ),
        ),
        (
            ARCHIVED,
            unique_index(
                doc! {"session": 1, "epoch": 1, "archive": 1, "pos": 1},
                "session_epoch_archive_pos",
            ),
        ),
        (SESSIONS, index(doc! {"updated": 1}, "updated")),
        (HEADS, index(doc! {"session": 1}, "session")),
        // Session labels and expiry: lookups by owner and by tag, purge's sweep of expired ones.
        (SESSIONS, index(doc! {"owner": 1}, "owner")),
        (SESSIONS, index(doc! {"tags.k": 1, "tags.v": 1}, "tags")),
        (SESSIONS, sparse_index(doc! {"expires": 1}, "expires")),
        // A key is unique per scope and kind (`kind_key`, present only on keyed items).
        (
            MEMORIES,
            unique_where_present(
                doc! {"scope": 1, "kind_key": 1},
                "kind_key",
                "scope_kind_key",
            ),
        ),
        // Listings and searches select by scope; purges delete expired items.
        (
            MEMORIES,
            index(doc! {"scope": 1, "created": 1}, "scope_created"),
        ),
        (MEMORIES, sparse_index(doc! {"expires": 1}, "expires")),
        // `created` alone: a compound index with `_id` breaks some compatible servers, and
        // items created in the same microsecond are rare enough to sort in memory.
        (MEMORIES, index(doc! {"created": 1}, "created")),
        // Checkpoints (added without a schema version step: new collections only, which
        // builds without checkpoints never read): unique per place and id, found by run for
        // `delete_run_checkpoints`; channel values unique per place, channel and version.
        (
            CHECKPOINTS,
            unique_index(doc! {"thread": 1, "ns": 1, "cid": 1}, "thread_ns_cid"),
        ),
        (CHECKPOINTS, index(doc! {"run_id": 1}, "run_id")),
        (
            CHECKPOINT_BLOBS,
            unique_index(
                doc! {"thread": 1, "ns": 1, "channel": 1, "version": 1},
                "thread_ns_channel_version",
            ),
        ),
        // The knowledge graph (new collections too, without a version step): entities and
        // relations are unique by `_id`; relations are found by the keys of their ends.
        (GRAPH_RELATIONS, index(doc! {"from_id": 1}, "from_id")),
        (GRAPH_RELATIONS, index(doc! {"to_id": 1}, "to_id")),
    ];
    for (coll, model) in required {
        create(coll, model).await.mapped()?;
    }
    // Text indexes: a server without them (code 67) gets the client-side ranked fallback.
    // Those of older versions go first: MongoDB refuses a second text index on a collection.
    if stored < TERMS_VERSION {
        for (coll, name) in V3_TEXT_INDEXES {
            match db.collection::<Document>(coll).drop_index(name).await {
                Ok(()) => {}
                Err(e)
                    if matches!(server_code(&e), Some(INDEX_NOT_FOUND | NAMESPACE_NOT_FOUND)) => {}
                Err(e) => return Err(from_driver(e)),
            }
        }
    }
    let mut text = true;
    for (coll, name) in [(MESSAGES, "terms_text"), (MEMORIES, "terms_text")] {
        match create(coll, text_index(TERMS, name)).await {
            Ok(_) => {}
            Err(e) if server_code(&e) == Some(CANNOT_CREATE_INDEX) => {
                tracing::debug!(database = db.name(), "no text indexes on this server: {e}");
                text = false;
            }
            Err(e) => return Err(from_driver(e)),
        }
    }
    // TTL indexes: every document of an expiring session carries `expires_at`, so the server
    // deletes all of it. A server that refuses them, or accepts them but does not keep the
    // option (so it will not act on it), leaves expiry to reads and purges.
    let mut ttl = true;
    for coll in [SESSIONS, MESSAGES, ARCHIVED, HEADS] {
        match create(coll, ttl_index(TTL_INDEX)).await {
            Ok(_) => ttl = ttl && keeps_ttl(db, coll).await?,
            Err(e) if server_code(&e).is_some() => {
                tracing::debug!(
                    database = db.name(),
                    coll,
                    "no TTL index on this server: {e}"
                );
                ttl = false;
            }
            Err(e) => return Err(from_driver(e)),
        }
    }
    Ok((text, ttl))
}

/// Whether `coll` lists an index on `expires_at` with its `expireAfterSeconds` (by key, not
/// name: some compatible servers name indexes themselves).
async fn keeps_ttl(db: &Database, coll: &str) -> Result<bool> {
    use futures_util::TryStreamExt;
    let indexes: Vec<IndexModel> = db
        .collection::<Document>(coll)
        .list_indexes()
        .await
        .mapped()?
        .try_collect()
        .await
        .mapped()?;
    Ok(indexes.iter().any(|i| {
        i.keys.len() == 1
            && i.keys.contains_key("expires_at")
            && i.options.as_ref().is_some_and(|o| o.expire_after.is_some())
    }))
}
