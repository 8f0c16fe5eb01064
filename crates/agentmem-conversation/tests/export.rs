//! Export and load: Swarms' JSON shape, YAML, exact round trips, errors naming the file.
mod common;

use agentmem_conversation::export::{messages_from_json, messages_from_yaml, read_messages};
use agentmem_conversation::{Conversation, ExportFormat};
use agentmem_core::{ErrorKind, Message, MessageId, Role};
use chrono::{TimeZone, Utc};
use common::name;

async fn sample() -> Conversation {
    let c = Conversation::builder(name("Exporter"))
        .system_prompt("sys")
        .rules("rules")
        .build()
        .await
        .unwrap();
    c.add(
        Role::User,
        "Unicode ✓ ünïcødé\n---\n### not a heading\n\n  spaced  ",
    )
    .await
    .unwrap();
    c.add_message(Message::tool_call("call_1", "search", "{\"q\":\"x\"}"))
        .await
        .unwrap();
    c.add_message(
        Message::tool_result("call_1", "search", "found: 3 items")
            .with_metadata("score", serde_json::json!({"nested": [1, 2.5, null]})),
    )
    .await
    .unwrap();
    c.add_agent_reply("").await.unwrap();
    c
}

#[tokio::test]
async fn json_and_yaml_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let c = sample().await;
    for file in ["conv.json", "conv.yaml", "conv.YML"] {
        let path = dir.path().join(file);
        c.export(&path).await.unwrap();
        assert_eq!(read_messages(&path).await.unwrap(), c.messages(), "{file}");
        let other = Conversation::builder(name("Loader")).build().await.unwrap();
        assert_eq!(other.load(&path).await.unwrap(), c.messages().len());
        assert_eq!(other.messages(), c.messages(), "{file}");
    }
    assert_eq!(
        messages_from_json(&c.to_json().unwrap()).unwrap(),
        c.messages()
    );
    assert_eq!(
        messages_from_yaml(&c.to_yaml().unwrap()).unwrap(),
        c.messages()
    );
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn exports_are_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.json");
    sample().await.export(&path).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn json_export_has_the_swarms_shape() {
    let c = Conversation::builder(name("Shape")).build().await.unwrap();
    let t = Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, 4).unwrap();
    c.add_message(
        Message::user("Hi")
            .with_id(MessageId::new("m1").expect("valid message id"))
            .with_timestamp(t),
    )
    .await
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&c.to_json().unwrap()).unwrap();
    assert_eq!(
        value,
        serde_json::json!([{
            "role": "user",
            "content": "Hi",
            "timestamp": "2026-04-20T18:35:04.000000Z",
            "message_id": "m1"
        }])
    );
}

#[tokio::test]
async fn a_swarms_export_loads() {
    // What Swarms writes: capitalized roles and agent names, naive local times, optional ids,
    // non-string content, extra fields.
    let text = r#"[
        {"role": "System", "content": "You are helpful.", "timestamp": "2026-04-20T18:33:12.123456"},
        {"role": "User", "content": "Hi", "token_count": 1},
        {"role": "ResearchAgent", "content": {"answer": 42}, "timestamp": "2026-04-20 18:35:21", "message_id": "abc"}
    ]"#;
    let msgs = messages_from_json(text).unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0].role, Role::System);
    // Naive times are the local clock's (no zone repeats or skips this one).
    assert_eq!(
        msgs[0].timestamp,
        chrono::Local
            .with_ymd_and_hms(2026, 4, 20, 18, 33, 12)
            .unwrap()
            .with_timezone(&Utc)
            + chrono::Duration::microseconds(123_456)
    );
    assert_eq!(msgs[1].role, Role::User);
    assert!(!msgs[1].id.is_empty());
    assert_eq!(msgs[2].role, Role::Agent("ResearchAgent".into()));
    assert_eq!(msgs[2].content, "{\"answer\":42}");
    assert_eq!(msgs[2].id, "abc");
}

#[tokio::test]
async fn load_errors_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let c = sample().await;
    let before = c.messages();

    // (file, its text or missing, the error kind, what the message must contain)
    let cases: [(&str, Option<&str>, ErrorKind, &[&str]); 6] = [
        (
            "missing.json",
            None,
            ErrorKind::NotFound,
            &["missing.json: no such file"],
        ),
        (
            "broken.json",
            Some("[{\"role\": \"user\", \"content\": \"cut"),
            ErrorKind::CorruptData,
            &["broken.json", "line 1"],
        ),
        (
            "object.yaml",
            Some("role: user\ncontent: hi\n"),
            ErrorKind::CorruptData,
            &["object.yaml: not a YAML list of messages"],
        ),
        (
            "time.json",
            Some(
                r#"[{"role":"user","content":"a"},{"role":"user","content":"b","timestamp":"yesterday"}]"#,
            ),
            ErrorKind::CorruptData,
            &["time.json: message 2: timestamp \"yesterday\""],
        ),
        (
            "role.json",
            Some(r#"[{"role":"","content":"a"}]"#),
            ErrorKind::CorruptData,
            &["role.json", "invalid role"],
        ),
        (
            "conv.txt",
            Some("[]"),
            ErrorKind::InvalidInput,
            &["conv.txt"],
        ),
    ];
    for (file, text, kind, needles) in cases {
        let path = dir.path().join(file);
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        let err = c.load(&path).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{file}: {err}");
        let message = err.to_string();
        for needle in needles {
            assert!(message.contains(needle), "{file}: {message}");
        }
    }
    assert_eq!(
        ExportFormat::from_path("a.yml".as_ref()).unwrap(),
        ExportFormat::Yaml
    );

    assert_eq!(c.messages(), before, "a failed load changed the history");
}
