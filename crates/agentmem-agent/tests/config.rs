//! `AgentConfig` and presets through the public API.

use agentmem_agent::Backend;
use agentmem_agent::{AgentConfig, StoreSpec};
use agentmem_core::ErrorKind;

#[test]
fn everything_is_off_by_default() {
    let config = AgentConfig::default();
    assert!(!config.is_enabled());
    assert_eq!(config.backend, None);
    assert_eq!(config.auto_save, None);
    assert!(!config.history && !config.auto_memory && !config.learn);
    assert_eq!(config.history_limit, 10);
    assert_eq!(config.session_id, None);
    assert_eq!(AgentConfig::new(), config);
}

#[test]
fn presets_match_the_seed_table() {
    let parse = |s: &str| s.parse::<AgentConfig>().expect(s);
    for (name, backend) in [
        ("file", Backend::File),
        ("sqlite", Backend::Sqlite),
        ("redis", Backend::Redis),
        ("postgres", Backend::Postgres),
        ("mongodb", Backend::MongoDb),
    ] {
        let config = parse(name);
        assert_eq!(config.backend, Some(StoreSpec::Kind(backend)), "{name}");
        assert!(
            !config.history && !config.learn && !config.auto_memory,
            "{name}"
        );
    }
    for (name, limit) in [("history", 10), ("session", 10), ("chat", 20)] {
        let config = parse(name);
        assert!(config.history, "{name}");
        assert_eq!(config.history_limit, limit, "{name}");
        assert_eq!(config.backend, None, "{name}: the default store");
        assert!(config.is_enabled());
    }
    let learn = parse("learn");
    assert!(learn.learn && !learn.history);
    assert_eq!(parse("true"), AgentConfig::enabled());
    assert!(parse("true").is_enabled());
    assert_eq!(parse("false"), AgentConfig::default());
    assert_eq!(
        parse(" Chat "),
        parse("chat"),
        "case and spaces do not matter"
    );
    assert_eq!(parse("history"), AgentConfig::default().with_history(true));
}

#[test]
fn an_unknown_preset_lists_the_valid_ones() {
    let err = "histroy"
        .parse::<AgentConfig>()
        .expect_err("unknown preset");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let message = err.to_string();
    for preset in AgentConfig::PRESETS {
        assert!(message.contains(preset), "{message} should list {preset}");
    }
    assert!(message.contains("histroy"));
}

#[test]
fn urls_parse_as_stores_and_passwords_never_print() {
    let config: AgentConfig = "redis://:s3cret@localhost:6379/".parse().expect("url");
    assert!(config.is_enabled());
    let debug = format!("{config:?}");
    assert!(!debug.contains("s3cret"), "{debug}");
    let spec = config.backend.expect("backend");
    assert!(!spec.to_string().contains("s3cret"));
    assert_eq!(spec.url().expect("url"), "redis://:s3cret@localhost:6379/");
    let err = "ftp://x"
        .parse::<AgentConfig>()
        .expect_err("unknown scheme");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[test]
fn builders_set_each_field_and_validate_names() {
    let config = AgentConfig::default()
        .with_url("file:///tmp/agentmem-x")
        .with_auto_save("my_chat")
        .with_history(true)
        .with_history_limit(5)
        .with_session_id("user_123")
        .with_auto_memory(true)
        .with_learn(true)
        .with_workspace_dir("/tmp");
    assert_eq!(config.auto_save.as_deref(), Some("my_chat"));
    assert_eq!(config.history_limit, 5);
    assert_eq!(config.session_id.as_deref(), Some("user_123"));
    assert!(config.validate().is_ok());
    let bad = AgentConfig::default().with_auto_save("../escape");
    assert_eq!(
        bad.validate().expect_err("unsafe").kind(),
        ErrorKind::InvalidInput
    );
    let bad = AgentConfig::default().with_session_id("a/b");
    assert_eq!(
        bad.validate().expect_err("unsafe").kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn default_store_locations() {
    assert_eq!(
        StoreSpec::Kind(Backend::File).url().expect("url"),
        "file://"
    );
    assert_eq!(
        "file".parse::<StoreSpec>().expect("kind"),
        StoreSpec::Kind(Backend::File)
    );
    assert!(matches!(
        "sqlite:///tmp/x.db".parse::<StoreSpec>(),
        Ok(StoreSpec::Url(_))
    ));
}
