//! MongoDB-specific checkpoint behaviour against `MONGODB_URL`: the stored layout (ids only
//! ever values), the indexes an existing database gains on open, the compare-and-set of
//! pending writes under concurrent callers, and blob collection sparing blobs a put holds.
//! The contract itself is the conformance suite's `Checkpoints` area (`tests/conformance.rs`,
//! and on the second server `tests/text_server.rs`).
mod common;

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery, CheckpointStore,
    Metadata, ThreadId, TypedBytes,
};
use agentmem_mongodb::mongodb::bson::{doc, Bson, Document};
use agentmem_mongodb::MongoStore;
use agentmem_testkit::fixtures::{
    checkpoint_key as key, latest_checkpoint, pending_write as write,
};
use common::{raw, raw_matching};
use serde_json::json;

fn checkpoint(
    at: &CheckpointKey, versions: &[(&str, &str)], meta: serde_json::Value,
) -> Checkpoint {
    let mut c = Checkpoint::new(at.clone(), TypedBytes::new("msgpack", vec![0, 1, 2]));
    c.channel_versions = versions
        .iter()
        .map(|(c, v)| ((*c).to_owned(), (*v).to_owned()))
        .collect();
    c.metadata = match meta {
        serde_json::Value::Object(m) => m,
        _ => Metadata::new(),
    };
    c
}

fn blob(channel: &str, version: &str) -> ChannelBlob {
    ChannelBlob {
        channel: channel.to_owned(),
        version: version.to_owned(),
        value: Some(TypedBytes::new(
            "json",
            format!("{channel}@{version}").into_bytes(),
        )),
    }
}

/// Every key in `d`, recursively.
fn all_keys(d: &Document, out: &mut Vec<String>) {
    for (k, v) in d {
        out.push(k.clone());
        match v {
            Bson::Document(sub) => all_keys(sub, out),
            Bson::Array(items) => items.iter().for_each(|item| {
                if let Bson::Document(sub) = item {
                    all_keys(sub, out);
                }
            }),
            _ => {}
        }
    }
}

/// Thread ids, namespaces, channels, task ids and metadata keys full of `$` and `.` are only
/// ever values: every field name stored is the crate's own, and the metadata is one string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_ids_and_metadata_are_stored_as_values() {
    let Some(store) = common::store().await else {
        return;
    };
    let at = key("$where.thread", "$ns.a", "1ef.$");
    let meta = json!({"$set": {"a.b": 1}, "run_id": "$run"});
    let c = checkpoint(&at, &[("$channel.x", "1.$")], meta);
    store
        .put_checkpoint(&c, &[blob("$channel.x", "1.$")])
        .await
        .unwrap();
    store.put_writes(&at, &[write("$task.y", 0)]).await.unwrap();
    let docs = raw(&store, "checkpoints").await;
    assert_eq!(docs.len(), 1);
    let d = &docs[0];
    assert_eq!(d.get_str("thread").unwrap(), "$where.thread");
    assert_eq!(d.get_str("ns").unwrap(), "$ns.a");
    assert_eq!(d.get_str("run_id").unwrap(), "$run");
    assert!(matches!(d.get("metadata"), Some(Bson::String(_))));
    let blobs = raw(&store, "checkpoint_blobs").await;
    assert_eq!(blobs.len(), 1);
    let mut keys = Vec::new();
    all_keys(d, &mut keys);
    all_keys(&blobs[0], &mut keys);
    assert!(
        keys.iter().all(|k| !k.starts_with('$') && !k.contains('.')),
        "{keys:?}"
    );
    assert_eq!(
        blobs[0].get_i64("pending").unwrap(),
        0,
        "released after the put"
    );
    let got = latest_checkpoint(&*store, &at).await.unwrap();
    assert_eq!(got.checkpoint, c);
    assert_eq!(got.blobs, vec![blob("$channel.x", "1.$")]);
    assert_eq!(got.writes, vec![write("$task.y", 0)]);
}

/// A database whose checkpoint collections and indexes are missing (made before checkpoints
/// existed) gains them when opened, and keeps its schema version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_database_gains_the_checkpoint_indexes() {
    let Some(store) = common::store().await else {
        return;
    };
    let db = store.client().database(store.database_name());
    for name in ["checkpoints", "checkpoint_blobs"] {
        db.collection::<Document>(name).drop().await.unwrap();
    }
    let version = agentmem_core::SessionStore::schema_version(&*store)
        .await
        .unwrap();
    let reopened = MongoStore::from_client(store.client().clone(), store.database_name())
        .await
        .unwrap();
    let checkpoints = db.collection::<Document>("checkpoints");
    let indexes = checkpoints.list_index_names().await.unwrap();
    assert!(
        indexes.contains(&"thread_ns_cid".to_string()),
        "{indexes:?}"
    );
    assert!(indexes.contains(&"run_id".to_string()), "{indexes:?}");
    let blob_indexes = db
        .collection::<Document>("checkpoint_blobs")
        .list_index_names()
        .await
        .unwrap();
    assert!(
        blob_indexes.contains(&"thread_ns_channel_version".to_string()),
        "{blob_indexes:?}"
    );
    assert_eq!(
        agentmem_core::SessionStore::schema_version(&*reopened)
            .await
            .unwrap(),
        version
    );
    // The unique index holds: a second document at one key is refused by the server.
    let at = key("t", "", "c1");
    reopened
        .put_checkpoint(&checkpoint(&at, &[], json!({})), &[])
        .await
        .unwrap();
    let mut twin = raw(&reopened, "checkpoints").await.remove(0);
    twin.remove("_id");
    assert!(checkpoints.insert_one(twin).await.is_err());
}

/// Many callers writing to one checkpoint at once, before it is stored (LangGraph writes from
/// background threads): the first inserts the document of early writes, the others merge
/// into it by the compare-and-set on the write revision, and the checkpoint's put completes
/// it; none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_put_writes_on_one_checkpoint_lose_nothing() {
    let Some(store) = common::store().await else {
        return;
    };
    let at = key("busy writes", "", "c1");
    let calls = (0..8).map(|task| {
        let (store, at) = (&store, &at);
        async move {
            let task = format!("task{task}");
            store
                .put_writes(at, &[write(&task, 0), write(&task, 1)])
                .await
                .unwrap();
        }
    });
    futures_util::future::join_all(calls).await;
    let docs = raw(&store, "checkpoints").await;
    assert_eq!(docs.len(), 1, "one document at the key");
    assert!(
        docs[0].get("stored").is_none(),
        "writes alone: {:?}",
        docs[0]
    );
    assert!(latest_checkpoint(&*store, &at).await.is_none());
    store
        .put_checkpoint(&checkpoint(&at, &[], json!({})), &[])
        .await
        .unwrap();
    let got = latest_checkpoint(&*store, &at).await.unwrap();
    assert_eq!(got.writes.len(), 16, "{:?}", got.writes);
    let d = raw(&store, "checkpoints").await.remove(0);
    assert!(d.get_bool("stored").unwrap());
    assert!(d.get_i64("wrev").unwrap() >= 1);
}

/// Writes made ahead of a checkpoint that never came go with their thread (`delete_thread`,
/// `DeleteAll`) and with a prune keeping the latest checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_writes_go_with_deletes_and_prunes() {
    let Some(store) = common::store().await else {
        return;
    };
    for thread in ["deleted", "pruned"] {
        let at = key(thread, "", "c1");
        store
            .put_checkpoint(&checkpoint(&at, &[], json!({})), &[])
            .await
            .unwrap();
        for (ns, id) in [("", "c0"), ("", "c2"), ("other", "c1")] {
            store
                .put_writes(&key(thread, ns, id), &[write("t", 0)])
                .await
                .unwrap();
        }
    }
    assert!(store
        .delete_thread(&ThreadId::new("deleted").unwrap())
        .await
        .unwrap());
    assert!(
        raw_matching(&store, "checkpoints", doc! {"thread": "deleted"})
            .await
            .is_empty()
    );
    let pruned = store
        .prune_checkpoints(
            &[ThreadId::new("pruned").unwrap()],
            CheckpointPrune::KeepLatest,
        )
        .await
        .unwrap();
    assert_eq!(pruned, 0, "early writes are no checkpoints");
    let left = raw_matching(&store, "checkpoints", doc! {"thread": "pruned"}).await;
    assert_eq!(left.len(), 1, "only the latest checkpoint: {left:?}");
    assert_eq!(left[0].get_str("cid").unwrap(), "c1");
}

/// Blob collection (prune, delete) never deletes a blob a put holds (written, its checkpoint
/// not yet): here a held blob, as a put leaves it between its two steps, outlives pruning and
/// deleting its thread, and goes once released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collecting_blobs_spares_those_a_put_holds() {
    let Some(store) = common::store().await else {
        return;
    };
    let thread = ThreadId::new("held").unwrap();
    for id in ["c1", "c2"] {
        let at = key("held", "", id);
        let c = checkpoint(&at, &[("ch", id)], json!({}));
        store.put_checkpoint(&c, &[blob("ch", id)]).await.unwrap();
    }
    let blobs = store
        .client()
        .database(store.database_name())
        .collection::<Document>("checkpoint_blobs");
    // A put in flight: its blob upserted and held, its checkpoint not written yet.
    blobs
        .insert_one(
            doc! {"thread": "held", "ns": "", "channel": "ch", "version": "c3",
            "type": "json", "value": Bson::Null, "rev": 1_i64, "pending": 1_i64},
        )
        .await
        .unwrap();
    let pruned = store
        .prune_checkpoints(std::slice::from_ref(&thread), CheckpointPrune::KeepLatest)
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    let versions = |docs: Vec<Document>| -> Vec<String> {
        let mut v: Vec<String> = docs
            .iter()
            .map(|d| d.get_str("version").unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let left = raw_matching(&store, "checkpoint_blobs", doc! {"thread": "held"}).await;
    assert_eq!(
        versions(left),
        ["c2", "c3"],
        "c1's blob went, the held one stayed"
    );
    assert!(store.delete_thread(&thread).await.unwrap());
    let left = raw_matching(&store, "checkpoint_blobs", doc! {"thread": "held"}).await;
    assert_eq!(versions(left), ["c3"], "still held");
    // Released (the put failed, say): the next collection takes it.
    blobs
        .update_one(doc! {"version": "c3"}, doc! {"$inc": {"pending": -1_i64}})
        .await
        .unwrap();
    let at = key("held", "", "c9");
    store
        .put_checkpoint(&checkpoint(&at, &[], json!({})), &[])
        .await
        .unwrap();
    assert!(store.delete_thread(&thread).await.unwrap());
    assert!(
        raw_matching(&store, "checkpoint_blobs", doc! {"thread": "held"})
            .await
            .is_empty()
    );
    assert!(store
        .list_checkpoints(&CheckpointQuery::thread(thread))
        .await
        .unwrap()
        .is_empty());
}

/// The metadata filter selects on the server by hash and decides in the client: a float
/// filter value (not pre-selected) still finds `-0.0` for `0.0`, and the limit counts only
/// checkpoints that match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_filters_decide_in_the_client_before_the_limit() {
    let Some(store) = common::store().await else {
        return;
    };
    for (i, score) in [json!(-0.0), json!(1.5), json!(0.0), json!(0)]
        .iter()
        .enumerate()
    {
        let at = key("floats", "", &format!("c{i}"));
        let c = checkpoint(&at, &[], json!({"score": score, "k": "v"}));
        store.put_checkpoint(&c, &[]).await.unwrap();
    }
    let query = |filter: serde_json::Value, limit: Option<usize>| CheckpointQuery {
        metadata: match filter {
            serde_json::Value::Object(m) => m,
            _ => Metadata::new(),
        },
        limit,
        ..CheckpointQuery::default()
    };
    let ids = |tuples: Vec<agentmem_core::CheckpointTuple>| -> Vec<String> {
        tuples
            .iter()
            .map(|t| t.checkpoint.key.id.to_string())
            .collect()
    };
    let zero = store
        .list_checkpoints(&query(json!({"score": 0.0, "k": "v"}), None))
        .await
        .unwrap();
    assert_eq!(ids(zero), ["c2", "c0"], "0.0 and -0.0, not the integer 0");
    let one = store
        .list_checkpoints(&query(json!({"score": 0.0}), Some(1)))
        .await
        .unwrap();
    assert_eq!(ids(one), ["c2"]);
    let int = store
        .list_checkpoints(&query(json!({"score": 0}), Some(5)))
        .await
        .unwrap();
    assert_eq!(ids(int), ["c3"]);
}
