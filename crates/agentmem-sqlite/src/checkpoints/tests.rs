//! Unit tests of the checkpoint statements: the indexes they use, and what they leave in the
//! tables.

use agentmem_core::{
    ChannelBlob, Checkpoint, CheckpointKey, CheckpointPrune, CheckpointQuery, PendingWrite,
    ThreadId, TypedBytes,
};
use rusqlite::Connection;

use super::{maintain, read, write};
use crate::testing::{assert_looks_up, migrated, query_plan, rows_in};

fn key(thread: &str, ns: &str, id: &str) -> CheckpointKey {
    CheckpointKey {
        thread: thread.parse().unwrap(),
        ns: ns.parse().unwrap(),
        id: id.parse().unwrap(),
    }
}

/// A checkpoint at `key` reading `channels` at version `version`, written by `run`.
fn checkpoint(key: CheckpointKey, channels: &[(&str, &str)], run: &str) -> Checkpoint {
    let mut c = Checkpoint::new(key, TypedBytes::new("json", b"{}".to_vec()));
    for (channel, version) in channels {
        c.channel_versions
            .insert((*channel).to_string(), (*version).to_string());
    }
    c.metadata.insert("run_id".into(), run.into());
    c
}

fn blob(channel: &str, version: &str) -> ChannelBlob {
    ChannelBlob {
        channel: channel.into(),
        version: version.into(),
        value: Some(TypedBytes::new("bytes", version.as_bytes().to_vec())),
    }
}

fn write_at(task: &str, idx: i64) -> PendingWrite {
    PendingWrite {
        task_id: task.into(),
        idx,
        channel: "c".into(),
        value: TypedBytes::new("json", b"1".to_vec()),
        task_path: String::new(),
    }
}

#[test]
fn listings_walk_an_index_in_order_without_sorting() {
    let conn = migrated();
    for (condition, index) in [
        ("1", "agentmem_checkpoints_newest"),
        ("c.ns = ?1", "agentmem_checkpoints_newest"),
        ("c.checkpoint_id < ?1", "agentmem_checkpoints_newest"),
        ("c.thread = ?1", "agentmem_checkpoints_thread_newest"),
        (
            "c.thread = ?1 AND c.checkpoint_id < ?2",
            "agentmem_checkpoints_thread_newest",
        ),
        (
            "c.thread = ?1 AND c.ns = ?2",
            "sqlite_autoindex_agentmem_checkpoints_1",
        ),
        (
            "c.thread = ?1 AND c.ns = ?2 AND c.checkpoint_id < ?3",
            "sqlite_autoindex_agentmem_checkpoints_1",
        ),
    ] {
        let plan = query_plan(&conn, &read::listing_sql(condition));
        assert!(plan.contains(index), "{condition}: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{condition}: {plan}");
    }
    let plan = query_plan(&conn, &read::listing_sql("c.run_id = ?1"));
    assert!(plan.contains("agentmem_checkpoints_run"), "{plan}");
    let plan = query_plan(&conn, "DELETE FROM agentmem_checkpoints WHERE run_id = ?1");
    assert!(plan.contains("agentmem_checkpoints_run"), "{plan}");
}

#[test]
fn writes_are_found_by_their_primary_key() {
    let conn = migrated();
    let writes_key = "sqlite_autoindex_agentmem_checkpoint_writes_1";
    for sql in [read::WRITES, maintain::COPY_WRITES, maintain::PRUNE_WRITES] {
        assert_looks_up(&conn, sql, writes_key);
    }
}

#[test]
fn replacing_a_checkpoint_keeps_its_writes() {
    let mut conn = migrated();
    let at = key("t", "", "1");
    write::put(&mut conn, &checkpoint(at.clone(), &[], "r"), &[]).unwrap();
    write::put_writes(&mut conn, &at, &[write_at("a", 0), write_at("a", -1)]).unwrap();
    let mut again = checkpoint(at.clone(), &[], "r2");
    again.body = TypedBytes::new("msgpack", vec![0, 1, 2]);
    write::put(&mut conn, &again, &[]).unwrap();
    let got = read::get(&mut conn, &at.thread, &at.ns, None)
        .unwrap()
        .unwrap();
    assert_eq!(got.checkpoint, again);
    assert_eq!(got.writes.len(), 2);
    assert_eq!(rows_in(&conn, "agentmem_checkpoints"), 1);
}

#[test]
fn deletes_leave_no_writes_or_unread_blobs_behind() {
    let mut conn = migrated();
    for (id, run) in [("1", "old"), ("2", "new")] {
        let at = key("t", "ns", id);
        let c = checkpoint(at.clone(), &[("x", id), ("y", "shared")], run);
        write::put(&mut conn, &c, &[blob("x", id), blob("y", "shared")]).unwrap();
        write::put_writes(&mut conn, &at, &[write_at("a", 0)]).unwrap();
    }
    assert_eq!(
        maintain::delete_runs(&mut conn, &["old".into()]).unwrap(),
        1
    );
    assert_eq!(rows_in(&conn, "agentmem_checkpoint_writes"), 1);
    // Version 1 of `x` was read by the deleted checkpoint only; `shared` is still read.
    let versions: Vec<String> = crate::testing::rows(
        &conn,
        "SELECT version FROM agentmem_checkpoint_blobs ORDER BY channel, version",
        [],
        |r| r.get(0),
    );
    assert_eq!(versions, ["2", "shared"]);
    let thread: ThreadId = "t".parse().unwrap();
    assert!(maintain::delete_thread(&mut conn, &thread).unwrap());
    assert!(!maintain::delete_thread(&mut conn, &thread).unwrap());
    for table in [
        "agentmem_checkpoints",
        "agentmem_checkpoint_blobs",
        "agentmem_checkpoint_writes",
    ] {
        assert_eq!(rows_in(&conn, table), 0, "{table}");
    }
}

#[test]
fn keep_latest_keeps_the_newest_of_each_namespace_with_what_it_reads() {
    let mut conn = migrated();
    for ns in ["", "child"] {
        for id in ["1", "2", "3"] {
            let at = key("t", ns, id);
            let c = checkpoint(at.clone(), &[("x", id)], "r");
            write::put(&mut conn, &c, &[blob("x", id)]).unwrap();
            write::put_writes(&mut conn, &at, &[write_at(id, 0)]).unwrap();
        }
    }
    let threads = ["t".parse().unwrap(), "other".parse().unwrap()];
    let pruned = maintain::prune(&mut conn, &threads, CheckpointPrune::KeepLatest).unwrap();
    assert_eq!(pruned, 4);
    let kept = read::list(&mut conn, &CheckpointQuery::default()).unwrap();
    let ids: Vec<(&str, &str)> = kept
        .iter()
        .map(|t| (t.checkpoint.key.ns.as_str(), t.checkpoint.key.id.as_str()))
        .collect();
    assert_eq!(ids, [("", "3"), ("child", "3")]);
    assert!(kept.iter().all(|t| t.blobs == [blob("x", "3")]));
    assert!(kept.iter().all(|t| t.writes == [write_at("3", 0)]));
    assert_eq!(rows_in(&conn, "agentmem_checkpoint_blobs"), 2);
    assert_eq!(rows_in(&conn, "agentmem_checkpoint_writes"), 2);
}

/// The keys of every stored write, in key order.
fn write_keys(conn: &Connection) -> Vec<(String, String, String)> {
    crate::testing::rows(
        conn,
        "SELECT thread, ns, checkpoint_id FROM agentmem_checkpoint_writes
         ORDER BY thread, ns, checkpoint_id",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

fn keyed(thread: &str, ns: &str, id: &str) -> (String, String, String) {
    (thread.into(), ns.into(), id.into())
}

#[test]
fn writes_made_before_their_checkpoint_show_once_it_is_stored() {
    let mut conn = migrated();
    let at = key("t", "ns", "1");
    write::put_writes(&mut conn, &at, &[write_at("a", 0), write_at("a", -1)]).unwrap();
    write::put_writes(&mut conn, &at, &[write_at("a", 0)]).unwrap();
    write::put_writes(&mut conn, &at, &[]).unwrap();
    assert!(read::get(&mut conn, &at.thread, &at.ns, None)
        .unwrap()
        .is_none());
    assert!(read::list(&mut conn, &CheckpointQuery::default())
        .unwrap()
        .is_empty());
    assert!(read::threads(&mut conn).unwrap().is_empty());
    write::put(&mut conn, &checkpoint(at.clone(), &[], "r"), &[]).unwrap();
    let got = read::get(&mut conn, &at.thread, &at.ns, None)
        .unwrap()
        .unwrap();
    assert_eq!(got.writes, [write_at("a", -1), write_at("a", 0)]);
    assert_eq!(read::threads(&mut conn).unwrap().len(), 1);
}

#[test]
fn deletes_copies_and_prunes_take_exactly_the_writes_they_should() {
    let mut conn = migrated();
    for (id, run) in [("1", "old"), ("2", "new")] {
        let at = key("t", "", id);
        write::put(&mut conn, &checkpoint(at.clone(), &[], run), &[]).unwrap();
        write::put_writes(&mut conn, &at, &[write_at("a", 0)]).unwrap();
    }
    // Writes ahead of a checkpoint not stored: older and newer ids, a namespace and a thread
    // with no checkpoint.
    for (thread, ns, id) in [
        ("t", "", "0"),
        ("t", "", "9"),
        ("t", "lone", "1"),
        ("w", "", "1"),
    ] {
        write::put_writes(&mut conn, &key(thread, ns, id), &[write_at("a", 0)]).unwrap();
    }
    let all = |conn: &Connection| write_keys(conn).len();
    assert_eq!(all(&conn), 6);

    // A run's delete takes its checkpoints' writes, no other.
    assert_eq!(
        maintain::delete_runs(&mut conn, &["old".into()]).unwrap(),
        1
    );
    assert!(!write_keys(&conn).contains(&keyed("t", "", "1")));
    assert_eq!(all(&conn), 5);

    // A copy takes the writes of the checkpoints it copies, and the target keeps none of its
    // own.
    let (t, u, w): (ThreadId, ThreadId, ThreadId) = (
        "t".parse().unwrap(),
        "u".parse().unwrap(),
        "w".parse().unwrap(),
    );
    write::put_writes(&mut conn, &key("u", "", "5"), &[write_at("u", 0)]).unwrap();
    assert_eq!(maintain::copy_thread(&mut conn, &t, &u).unwrap(), 1);
    let of = |conn: &Connection, thread: &str| -> Vec<(String, String, String)> {
        write_keys(conn)
            .into_iter()
            .filter(|k| k.0 == thread)
            .collect()
    };
    assert_eq!(of(&conn, "u"), [keyed("u", "", "2")]);
    // Copying from a thread with writes only is copying from nothing.
    let err = maintain::copy_thread(&mut conn, &w, &"x".parse().unwrap())
        .unwrap_err()
        .into_error("m");
    assert_eq!(err.kind(), agentmem_core::ErrorKind::NotFound, "{err}");

    // Keeping the latest keeps its writes only.
    assert_eq!(
        maintain::prune(
            &mut conn,
            std::slice::from_ref(&t),
            CheckpointPrune::KeepLatest
        )
        .unwrap(),
        0
    );
    assert_eq!(of(&conn, "t"), [keyed("t", "", "2")]);

    // A thread with writes only holds no checkpoint, but its writes go with it.
    assert!(!maintain::delete_thread(&mut conn, &w).unwrap());
    assert!(of(&conn, "w").is_empty());
    write::put_writes(&mut conn, &key("t", "", "7"), &[write_at("a", 0)]).unwrap();
    assert_eq!(
        maintain::prune(&mut conn, &[t, u], CheckpointPrune::DeleteAll).unwrap(),
        2
    );
    assert_eq!(all(&conn), 0);
}

#[test]
fn an_unreadable_stored_key_is_corrupt() {
    let mut conn = migrated();
    let at = key("t", "", "1");
    write::put(&mut conn, &checkpoint(at.clone(), &[], "r"), &[]).unwrap();
    conn.execute(
        "UPDATE agentmem_checkpoints SET checkpoint_id = ?1",
        ["a\u{1}b"],
    )
    .unwrap();
    let err = read::list(&mut conn, &CheckpointQuery::default())
        .unwrap_err()
        .into_error("m");
    assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData, "{err}");
    conn.execute(
        "UPDATE agentmem_checkpoints SET checkpoint_id = '1', metadata = '[1]'",
        [],
    )
    .unwrap();
    let err = read::get(&mut conn, &at.thread, &at.ns, None)
        .unwrap_err()
        .into_error("m");
    assert_eq!(err.kind(), agentmem_core::ErrorKind::CorruptData, "{err}");
}
