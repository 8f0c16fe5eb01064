//! Checkpoints of a graph run (LangGraph's model) in an agentmem store: each step stored with
//! the channel values that changed, the run listed newest first, a look back at an earlier
//! step, and a fork from it that leaves the original thread as it was. SQLite, no server.
//!
//! ```text
//! cargo run --example checkpoints --features sqlite
//! ```
//!
//! In Python, `agentmem.langgraph.AgentmemSaver` does the same for a compiled graph.

use agentmem::{
    AgentMemoryExt, ChannelBlob, Checkpoint, CheckpointKey, CheckpointQuery, CheckpointStore,
    ThreadId, TypedBytes,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("graphs.db").display());
    let store = agentmem::open(&url).await?;
    let thread: ThreadId = "user:42/trip planner".parse()?;

    // Three steps; the `plan` channel changes at each, `user` only at the first.
    let mut parent = None;
    for (step, plan) in ["draft", "with flights", "booked"].iter().enumerate() {
        let key = CheckpointKey {
            thread: thread.clone(),
            ns: Default::default(),
            id: format!("1ef{step}").parse()?,
        };
        let mut checkpoint = Checkpoint::new(key, TypedBytes::new("json", b"{}".to_vec()));
        checkpoint.parent = parent.replace(checkpoint.key.id.clone());
        checkpoint.channel_versions = [
            ("user".to_owned(), "1".to_owned()),
            ("plan".to_owned(), (step + 1).to_string()),
        ]
        .into();
        checkpoint.metadata = serde_json::json!({"step": step, "source": "loop"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut changed = vec![ChannelBlob {
            channel: "plan".into(),
            version: (step + 1).to_string(),
            value: Some(TypedBytes::new("json", format!("{plan:?}").into_bytes())),
        }];
        if step == 0 {
            changed.push(ChannelBlob {
                channel: "user".into(),
                version: "1".into(),
                value: Some(TypedBytes::new("json", b"\"Ada\"".to_vec())),
            });
        }
        store.put_checkpoint(&checkpoint, &changed).await?;
    }

    let history = store
        .list_checkpoints(&CheckpointQuery::thread(thread.clone()))
        .await?;
    println!(
        "thread {thread:?}: {} checkpoints, newest first",
        history.len()
    );
    for tuple in &history {
        let plan = tuple.blobs.iter().find(|b| b.channel == "plan");
        let plan = plan
            .and_then(|b| b.value.as_ref())
            .map(|v| String::from_utf8_lossy(&v.bytes).into_owned());
        println!(
            "  {} step {} plan {}",
            tuple.checkpoint.key.id,
            tuple.checkpoint.metadata["step"],
            plan.unwrap_or_default()
        );
    }
    let latest = store
        .get_checkpoint(&thread, &Default::default(), None)
        .await?
        .ok_or("no latest checkpoint")?;
    assert_eq!(latest.checkpoint.key.id, "1ef2");
    assert_eq!(
        latest.blobs.len(),
        2,
        "the user value written at step 0 is still read"
    );

    // Time travel: a new thread from step 1, the original untouched.
    let what_if: ThreadId = "user:42/trip planner (what if)".parse()?;
    let copied = store
        .fork_thread(&thread, &what_if, Some(&"1ef1".parse()?))
        .await?;
    println!("forked {copied} checkpoints into {what_if:?}");
    assert_eq!(copied, 2);
    let threads = store.list_threads().await?;
    assert_eq!(threads.len(), 2);
    assert_eq!(
        threads
            .iter()
            .find(|t| t.thread == thread)
            .map(|t| t.checkpoints),
        Some(3)
    );
    println!("ok: {} threads", threads.len());
    Ok(())
}
