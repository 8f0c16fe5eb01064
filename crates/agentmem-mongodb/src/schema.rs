//! Collections, indexes, the schema version document and forward migrations, and the
//! detection of what the server supports (transactions, text indexes), done once on open.

use agentmem_core::{Error, Result};
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::{Client, Database, IndexModel};

use crate::error::{from_driver, server_code, ResultExt, CANNOT_CREATE_INDEX};

/// The schema version this build writes. Stored in `meta` as `{_id: "schema", version}`.
pub const SCHEMA_VERSION: u32 = 1;

/// Collection of bookkeeping documents (the schema version).
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

/// What the server behind a store supports, detected once when the store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerFeatures {
    /// Multi-document transactions (replica sets and sharded clusters): compaction and
    /// `save_session` are atomic, and batch appends are all-or-nothing.
    pub transactions: bool,
    /// Text indexes: search uses `$text` with `textScore` instead of client-side BM25.
    pub text_search: bool,
}

impl ServerFeatures {
    /// Every feature: as a mask for
    /// [`MongoStore::from_client_with`](crate::MongoStore::from_client_with), "use whatever
    /// the server has".
    pub const ALL: ServerFeatures = ServerFeatures {
        transactions: true,
        text_search: true,
    };

    /// The features in both `self` and `allowed`.
    pub(crate) fn only(self, allowed: ServerFeatures) -> ServerFeatures {
        ServerFeatures {
            transactions: self.transactions && allowed.transactions,
            text_search: self.text_search && allowed.text_search,
        }
    }
}

/// Forward migrations: `MIGRATIONS[v]` takes a database at version `v` to `v + 1`.
/// Version 0 is an empty database; 0 → 1 lays out the collections and indexes, which
/// [`ensure_indexes`] (run on every open, idempotently) already does, so it has no data step.
/// A later layout change adds its step here and bumps [`SCHEMA_VERSION`].
const MIGRATIONS: [fn(&Database) -> MigrationFuture<'_>; SCHEMA_VERSION as usize] =
    [|_| Box::pin(async { Ok(()) })];

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
    let text_search = ensure_indexes(db).await?;
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
        },
    ))
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

fn index(keys: Document, name: &str) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(IndexOptions::builder().name(name.to_string()).build())
        .build()
}

fn unique_index(keys: Document, name: &str, sparse: bool) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(
            IndexOptions::builder()
                .name(name.to_string())
                .unique(true)
                .sparse(sparse)
                .build(),
        )
        .build()
}

/// A text index without stemming or stop words (`default_language: "none"`), so `$text`
/// matches whole words as agentmem's search contract says.
fn text_index(field: &str, name: &str) -> IndexModel {
    IndexModel::builder()
        .keys(doc! {field: "text"})
        .options(
            IndexOptions::builder()
                .name(name.to_string())
                .default_language("none".to_string())
                .build(),
        )
        .build()
}

/// Creates every collection's indexes (a no-op when they exist) and returns whether the
/// server accepted the text indexes. Creating indexes also creates the collections, which
/// transactions on older servers cannot do implicitly.
pub(crate) async fn ensure_indexes(db: &Database) -> Result<bool> {
    let create = |coll: &'static str, model: IndexModel| {
        let c = db.collection::<Document>(coll);
        async move { c.create_index(model).await }
    };
    create(
        MESSAGES,
        unique_index(
            doc! {"session": 1, "epoch": 1, "seq": 1},
            "session_epoch_seq",
            false,
        ),
    )
    .await
    .mapped()?;
    create(
        ARCHIVED,
        unique_index(
            doc! {"session": 1, "epoch": 1, "archive": 1, "pos": 1},
            "session_epoch_archive_pos",
            false,
        ),
    )
    .await
    .mapped()?;
    create(SESSIONS, index(doc! {"updated": 1}, "updated"))
        .await
        .mapped()?;
    create(HEADS, index(doc! {"session": 1}, "session"))
        .await
        .mapped()?;
    create(
        MEMORIES,
        unique_index(doc! {"kind_key": 1}, "kind_key", true),
    )
    .await
    .mapped()?;
    // `created` alone: a compound index with `_id` breaks some compatible servers, and
    // items created in the same microsecond are rare enough to sort in memory.
    create(MEMORIES, index(doc! {"created": 1}, "created"))
        .await
        .mapped()?;
    // Text indexes: a server without them (code 67) gets the client-side ranked fallback.
    let mut text = true;
    for (coll, field, name) in [
        (MESSAGES, "content", "content_text"),
        (MEMORIES, "text", "text_text"),
    ] {
        match create(coll, text_index(field, name)).await {
            Ok(_) => {}
            Err(e) if server_code(&e) == Some(CANNOT_CREATE_INDEX) => {
                tracing::debug!(database = db.name(), "no text indexes on this server: {e}");
                text = false;
            }
            Err(e) => return Err(from_driver(e)),
        }
    }
    Ok(text)
}
