//! Fuzzing every parser with proptest (bounded cases, so it runs in CI in seconds; see the
//! README for long runs): random bytes and structured mutations of valid input never panic,
//! and every rejection is a typed `agentmem_core::Error` of the expected kind.
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentmem::agent::{AgentConfig, StoreSpec};
use agentmem_core::{AgentName, ArchiveId, ErrorKind, Message, Role, SessionId};
use agentmem_formats::swarms::{archive_file_stem, parse_memory_md, render_memory_md};
use chrono::{TimeZone, Utc};
use proptest::prelude::*;

mod common;

use common::fuzz::{config, mutate, mutation, nasty_string};

/// What a safe name must never contain, whatever the validator says.
fn assert_safe_name(s: &str) {
    assert!(!s.is_empty());
    assert!(
        !s.contains('/') && !s.contains('\\') && !s.contains('\0'),
        "{s:?}"
    );
    assert!(!s.contains(".."), "{s:?}");
    assert!(!s.starts_with('.') && !s.starts_with('$'), "{s:?}");
    assert!(s.len() <= 128, "{s:?}");
    assert!(
        !s.chars().any(|c| c.is_control() || "*?[]:".contains(c)),
        "{s:?}"
    );
}

fn sample_messages(contents: &[String]) -> Vec<Message> {
    let t = Utc.with_ymd_and_hms(2026, 4, 20, 14, 30, 45).unwrap();
    contents
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let role = match i % 3 {
                0 => Role::User,
                1 => Role::Assistant,
                _ => Role::Agent("ResearchAgent".into()),
            };
            Message::new(role, c.clone()).with_timestamp(t + chrono::Duration::seconds(i as i64))
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn memory_md_random_text_is_parsed_or_corrupt(text in nasty_string()) {
        if let Err(e) = parse_memory_md(&text) {
            prop_assert_eq!(e.kind(), ErrorKind::CorruptData, "{}", e);
            prop_assert!(e.message().contains("line"), "the error names the line: {}", e);
        }
    }

    #[test]
    fn memory_md_mutations_are_parsed_or_corrupt(
        contents in proptest::collection::vec("[a-zA-Z0-9 .,!?\n#—-]{0,60}", 0..6),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let messages = sample_messages(&contents);
        let t = Utc.with_ymd_and_hms(2026, 4, 20, 14, 0, 0).unwrap();
        let mut text = render_memory_md("ResearchAgent", t, &messages);
        // The unmutated file always parses, with the header intact.
        let parsed = parse_memory_md(&text).expect("a rendered MEMORY.md parses");
        prop_assert_eq!(parsed.conversation.as_str(), "ResearchAgent");
        for m in &mutations {
            text = mutate(&text, m);
        }
        if let Err(e) = parse_memory_md(&text) {
            prop_assert_eq!(e.kind(), ErrorKind::CorruptData, "{}", e);
        }
    }

    #[test]
    fn names_are_valid_and_safe_or_invalid_input(s in nasty_string()) {
        let results = [
            SessionId::from_str(&s).map(|v| v.into_string()),
            AgentName::from_str(&s).map(|v| v.into_string()),
            ArchiveId::from_str(&s).map(|v| v.as_str().to_string()),
        ];
        for r in results {
            match r {
                Ok(v) => {
                    prop_assert_eq!(&v, &s);
                    assert_safe_name(&v);
                }
                Err(e) => {
                    prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}", e);
                    prop_assert!(e.to_string().len() < 400, "the message must not echo a long name");
                }
            }
        }
        // Serde goes through the same validation.
        let json = serde_json::to_string(&s).unwrap();
        prop_assert_eq!(serde_json::from_str::<SessionId>(&json).is_ok(), SessionId::new(s.clone()).is_ok());
    }

    #[test]
    fn roles_parse_round_trip_or_invalid_input(s in nasty_string()) {
        match Role::parse(&s) {
            Ok(role) => prop_assert_eq!(Role::parse(role.as_str()).unwrap(), role),
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}", e),
        }
    }

    #[test]
    fn archive_file_stems_are_valid_archive_ids(secs in 0i64..32_503_680_000, n in any::<u32>()) {
        let t = Utc.timestamp_opt(secs, 0).unwrap();
        let stem = archive_file_stem(t, n);
        let id = ArchiveId::new(stem.clone()).expect("every stem is a valid archive id");
        assert_safe_name(id.as_str());
        prop_assert!(stem.starts_with("history_"));
    }

    #[test]
    fn backend_urls_parse_or_fail_typed(
        scheme in prop_oneof![
            Just("file://"), Just("file:///"), Just("sqlite://"), Just("sqlite:"),
            Just("redis://"), Just("rediss://"), Just("postgres://"), Just("postgresql://"),
            Just("mongodb://"), Just("mongodb+srv://"), Just(""), Just("http://"),
        ],
        tail in nasty_string(),
    ) {
        let url = format!("{scheme}{tail}");
        let typed = |r: Result<(), agentmem_core::Error>| -> Result<(), TestCaseError> {
            if let Err(e) = r {
                prop_assert!(
                    matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported),
                    "{url:?}: {e}"
                );
            }
            Ok(())
        };
        typed(agentmem::file::FileConfig::from_str(&url).map(drop))?;
        typed(agentmem::sqlite::SqliteConfig::from_str(&url).map(drop))?;
        typed(agentmem::redis::RedisConfig::from_str(&url).map(drop))?;
        typed(agentmem::postgres::PostgresConfig::from_str(&url).map(drop))?;
        typed(agentmem::mongodb::MongoConfig::from_str(&url).map(drop))?;
        typed(agentmem::Backend::from_url(&url).map(drop))?;
        typed(StoreSpec::from_str(&url).map(drop))?;
    }

    #[test]
    fn backend_url_options_parse_or_fail_typed(
        base in prop_oneof![
            Just("file:///tmp/agentmem-fuzz-never-created"),
            Just("sqlite:///tmp/agentmem-fuzz-never-created.db"),
            Just("redis://127.0.0.1:6379/0"),
            Just("postgres://u@127.0.0.1:5432/db"),
            Just("mongodb://127.0.0.1:27017/db"),
        ],
        key in prop_oneof![
            Just("durability".to_string()), Just("synchronous".to_string()),
            Just("busy_timeout_ms".to_string()), Just("pool_size".to_string()),
            Just("create".to_string()), Just("prefix".to_string()), Just("schema".to_string()),
            Just("pool_timeout".to_string()), Just("connect_timeout_ms".to_string()),
            "[a-z_]{1,12}",
        ],
        value in nasty_string(),
    ) {
        let url = format!("{base}?{key}={value}");
        let results: [Result<(), agentmem_core::Error>; 5] = [
            agentmem::file::FileConfig::from_str(&url).map(drop),
            agentmem::sqlite::SqliteConfig::from_str(&url).map(drop),
            agentmem::redis::RedisConfig::from_str(&url).map(drop),
            agentmem::postgres::PostgresConfig::from_str(&url).map(drop),
            agentmem::mongodb::MongoConfig::from_str(&url).map(drop),
        ];
        for r in results {
            if let Err(e) = r {
                prop_assert!(
                    matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported),
                    "{url:?}: {e}"
                );
            }
        }
    }

    #[test]
    fn presets_parse_or_invalid_input(s in prop_oneof![
        nasty_string(),
        Just("chat".to_string()), Just("CHAT".to_string()), Just("learn".to_string()),
        "(file|sqlite|redis|postgres|mongodb|history|session|chat|learn|true|false)[a-z:/]{0,3}",
    ]) {
        if let Err(e) = AgentConfig::from_str(&s) {
            prop_assert!(
                matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported),
                "{s:?}: {e}"
            );
        }
    }
}

/// `agentmem::open` on URLs that no backend's parser accepts: a typed error, no panic, and
/// (since every parser refused) nothing opened or created. Run on a runtime of its own,
/// outside proptest's macro, so one runtime serves every case.
#[test]
fn open_on_garbage_urls_is_a_typed_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let tried = AtomicUsize::new(0);
    let strategy = (
        prop_oneof![
            Just("file://"),
            Just("sqlite://"),
            Just("redis://"),
            Just("postgres://"),
            Just("mongodb://"),
            Just("mongodb+srv://"),
            Just("bogus://"),
            Just(""),
        ],
        nasty_string(),
    );
    runner
        .run(&strategy, |(scheme, tail)| {
            let url = format!("{scheme}{tail}");
            let refused = agentmem::file::FileConfig::from_str(&url).is_err()
                && agentmem::sqlite::SqliteConfig::from_str(&url).is_err()
                && agentmem::redis::RedisConfig::from_str(&url).is_err()
                && agentmem::postgres::PostgresConfig::from_str(&url).is_err()
                && agentmem::mongodb::MongoConfig::from_str(&url).is_err();
            if !refused {
                // A URL some parser accepts would open (or create) a real store: not garbage.
                return Ok(());
            }
            tried.fetch_add(1, Ordering::Relaxed);
            let err = rt
                .block_on(agentmem::open(&url))
                .expect_err("no parser accepts this URL");
            prop_assert!(
                matches!(err.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported),
                "{url:?}: {err}"
            );
            Ok(())
        })
        .unwrap();
    let tried = tried.load(Ordering::Relaxed);
    println!("fuzz: agentmem::open refused {tried} garbage URLs with a typed error");
    assert!(tried > 0, "the strategy must produce garbage URLs");
}

/// Garbage appended to a `session.jsonl` (a torn or foreign tail): opening and loading gives
/// a typed `CorruptData` error naming the file, or a repair reported by `FileStore::repairs`
/// with every earlier message intact. Never a panic, never a silent change.
#[test]
fn garbage_after_a_session_log_is_repaired_or_corrupt() {
    use agentmem::file::{Durability, FileConfig, FileStore};
    use agentmem_core::SessionStore;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cases = config().cases.min(128); // each case opens a store on disk
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases, ..config() });
    let (repaired, corrupt) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let id: SessionId = "fuzzed".parse().unwrap();
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 1..200),
        // Plausible tails: a JSON line cut short, a whole foreign line, stray newlines.
        "\\{\"id\":\"[a-z]{0,8}(\",\"role\":\"user\")?".prop_map(String::into_bytes),
        "(\\{\\}|\\[\\]|null|1|\"x\"|\\[\\{\\}\\])\n".prop_map(String::into_bytes),
        Just(b"\n\n".to_vec()),
        Just(vec![0xff, 0xfe, b'\n']),
    ];
    runner
        .run(&strategy, |garbage| {
            let dir = tempfile::tempdir().unwrap();
            let config = FileConfig::new(dir.path()).with_durability(Durability::Buffered);
            let originals: Vec<Message> = (0..3)
                .map(|i| agentmem_reliability::tagged::message("orig", i))
                .collect();
            rt.block_on(async {
                let store = FileStore::connect_with(config.clone()).await.unwrap();
                store.append(&id, &originals[..2]).await.unwrap();
                store.append(&id, &originals[2..]).await.unwrap();
            });
            let log = dir.path().join("agents/fuzzed/session.jsonl");
            let before = std::fs::read(&log).expect("the session log exists");
            let mut bytes = before.clone();
            bytes.extend_from_slice(&garbage);
            std::fs::write(&log, &bytes).unwrap();

            let (result, repairs) = rt.block_on(async {
                let store = FileStore::connect_with(config).await.unwrap();
                let r = store.load(&id, None).await;
                (r, store.repairs())
            });
            match result {
                Ok(session) => {
                    let session = session.expect("the session exists");
                    // The earlier messages are all there, first and intact.
                    prop_assert!(session.messages.len() >= originals.len());
                    prop_assert_eq!(&session.messages[..originals.len()], &originals[..]);
                    if session.messages.len() == originals.len() {
                        // The garbage is gone from the log: that must have been reported.
                        let after = std::fs::read(&log).unwrap();
                        if after != bytes {
                            prop_assert!(!repairs.is_empty(), "a silent repair of {garbage:?}");
                            repaired.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Err(e) => {
                    prop_assert_eq!(e.kind(), ErrorKind::CorruptData, "{}", e);
                    prop_assert!(
                        e.to_string().contains("session.jsonl"),
                        "names the file: {}",
                        e
                    );
                    // Nothing was dropped from a log we refused to read.
                    prop_assert_eq!(std::fs::read(&log).unwrap(), bytes.clone());
                    corrupt.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
        .unwrap();
    let (repaired, corrupt) = (repaired.into_inner(), corrupt.into_inner());
    println!(
        "fuzz: session.jsonl tails: {cases} cases, {repaired} repaired and reported, {corrupt} refused as corrupt data, 0 panics"
    );
}
