//! Disk full: a store on a small tmpfs (mounted by the test, as root) is filled up.
//! Appends then fail cleanly with `Unavailable`, nothing half-written remains, every earlier
//! message is intact and readable, and after space is freed the store works again.
//!
//! Mounting needs root (or CAP_SYS_ADMIN); where it is refused, these tests, and only these,
//! skip with a loud message.
mod common;

use agentmem_core::{AgentMemory, ErrorKind, Message, SessionId, SessionStore};
use agentmem_reliability::{audit, tagged};
use common::{loud_skip, Mount};

/// Fills the store at `url` (on a tmpfs at `mount_dir`) and checks it.
async fn fill_up(kind: &str, size: &str, url_for: impl Fn(&std::path::Path) -> String) {
    let dir = tempfile::tempdir().unwrap();
    let fs = dir.path().join("fs");
    std::fs::create_dir(&fs).unwrap();
    let _mount = match Mount::tmpfs(&fs, size) {
        Ok(m) => m,
        Err(why) => {
            loud_skip(&format!("{kind} disk full"), &why);
            return;
        }
    };
    let url = url_for(&fs);
    let id: SessionId = "full".parse().unwrap();
    let store = agentmem::open(&url).await.unwrap();
    // Ballast, so that space can be given back later.
    let ballast = fs.join("ballast");
    std::fs::write(&ballast, vec![7u8; 128 * 1024]).unwrap();

    let mut acked: Vec<String> = Vec::new();
    let mut failure = None;
    for seq in 0..10_000 {
        // Batches of two: a half-written batch would show as one message without the other.
        let batch = [
            tagged::message("d", 2 * seq),
            tagged::message("d", 2 * seq + 1),
        ];
        match store.append(&id, &batch).await {
            Ok(()) => acked.extend(batch.iter().map(|m| m.id.to_string())),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let err = failure.expect("the disk filled up");
    assert_eq!(
        err.kind(),
        ErrorKind::Unavailable,
        "{kind}: disk full: {err}"
    );
    // More attempts fail the same way, and leave nothing behind either.
    for seq in 20_000..20_005 {
        let r = store.append(&id, &[tagged::message("d", seq)]).await;
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::Unavailable, "{kind}: {e}");
        } else {
            acked.push(tagged::message_id("d", seq).to_string());
        }
    }
    let compact = store.compact(&id, &[Message::system("summary")]).await;
    let compacted = compact.is_ok();
    if let Err(e) = &compact {
        assert!(
            matches!(e.kind(), ErrorKind::Unavailable),
            "{kind}: compaction on a full disk: {e}"
        );
    }
    // Everything acknowledged is there and intact, read while the disk is still full, by the
    // same store and by a new one.
    let check = |store: std::sync::Arc<dyn AgentMemory>, when: &'static str| {
        let id = id.clone();
        let acked = acked.clone();
        async move {
            let (all, _, _) = common::transcript(store.as_ref(), &id).await;
            let report = audit(&all, &acked).unwrap_or_else(|e| panic!("{when}: {e}"));
            assert!(
                report.unacknowledged.is_empty(),
                "{when}: half-written: {:?}",
                report.unacknowledged
            );
            report.checked
        }
    };
    check(store.clone(), "same store, disk full").await;
    drop(store);
    let reopened = agentmem::open(&url).await.unwrap();
    let checked = check(reopened.clone(), "new store, disk full").await;

    // Free space: the store works again and keeps everything.
    std::fs::remove_file(&ballast).unwrap();
    let after = tagged::message("d", 30_000);
    reopened
        .append(&id, std::slice::from_ref(&after))
        .await
        .unwrap();
    acked.push(after.id.to_string());
    let (all, _, _) = common::transcript(reopened.as_ref(), &id).await;
    audit(&all, &acked).unwrap();
    println!(
        "disk full: {kind} on a {size} tmpfs: first refusal after {} acknowledged messages ({err}); compaction while full {}; {checked} messages checked intact while full, lost = 0, half-written = 0; appends resume after freeing space",
        acked.len() - 1,
        if compacted { "succeeded" } else { "refused cleanly" },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_appends_on_a_full_disk_fail_cleanly_and_keep_earlier_data() {
    fill_up("file", "512k", |fs| {
        format!("file://{}?durability=fsync", fs.join("home").display())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_appends_on_a_full_disk_fail_cleanly_and_keep_earlier_data() {
    fill_up("sqlite", "1m", |fs| {
        format!(
            "sqlite://{}?synchronous=full",
            fs.join("memory.db").display()
        )
    })
    .await;
}
