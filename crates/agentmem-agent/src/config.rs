//! [`AgentConfig`] and its presets.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::backend::Backend;
use agentmem_core::layer::Retention;
use agentmem_core::{redact_url as redact, Error, KeyLocation, MemoryScope, Result, SessionId};

/// Where an agent's memory is stored: a backend's default location, or a store URL (opened
/// through a [`Registry`](agentmem_core::backend::Registry)).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreSpec {
    /// The backend's default location (see [`StoreSpec::url`]).
    Kind(Backend),
    /// An explicit store URL (`file:///…`, `sqlite:///…`, `redis://…`, …).
    Url(String),
}

impl StoreSpec {
    /// The URL to open:
    ///
    /// | spec | URL |
    /// |---|---|
    /// | `file` | `file://` (the file backend's default root: `$AGENTMEM_HOME`, else `~/.agentmem`) |
    /// | `sqlite` | `sqlite://<agentmem home>/agentmem.db` |
    /// | `redis` | `$REDIS_URL`, else `redis://127.0.0.1:6379/` |
    /// | `postgres` | `$DATABASE_URL`, else `postgres://localhost/agentmem` |
    /// | `mongodb` | `$MONGODB_URL`, else `mongodb://127.0.0.1:27017/agentmem` |
    /// | a URL | itself |
    pub fn url(&self) -> Result<String> {
        let from_env = |var: &str, default: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        Ok(match self {
            StoreSpec::Url(url) => url.clone(),
            StoreSpec::Kind(Backend::File) => "file://".to_string(),
            StoreSpec::Kind(Backend::Sqlite) => {
                let path = crate::home::agentmem_home()?.join("agentmem.db");
                format!("sqlite://{}", path.display())
            }
            StoreSpec::Kind(Backend::Redis) => from_env("REDIS_URL", "redis://127.0.0.1:6379/"),
            StoreSpec::Kind(Backend::Postgres) => {
                from_env("DATABASE_URL", "postgres://localhost/agentmem")
            }
            StoreSpec::Kind(Backend::MongoDb) => {
                from_env("MONGODB_URL", "mongodb://127.0.0.1:27017/agentmem")
            }
        })
    }
}

impl fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::Kind(backend) => write!(f, "Kind({backend})"),
            // Connection strings may hold passwords: never print them.
            StoreSpec::Url(url) => write!(f, "Url({:?})", redact(url)),
        }
    }
}

impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::Kind(backend) => write!(f, "{backend}"),
            StoreSpec::Url(url) => f.write_str(&redact(url)),
        }
    }
}

impl FromStr for StoreSpec {
    type Err = Error;

    /// A backend name (`file`, `sqlite`, `redis`, `postgres`, `mongodb`) or a store URL.
    fn from_str(s: &str) -> Result<Self> {
        if s.contains(':') {
            Backend::from_url(s)?;
            Ok(StoreSpec::Url(s.to_string()))
        } else {
            Ok(StoreSpec::Kind(s.parse()?))
        }
    }
}

/// The default number of past messages injected with history on (the `history` preset's).
pub const DEFAULT_HISTORY_LIMIT: usize = 10;

/// The memory configuration of one [`Agent`](crate::Agent). Every feature is off by default,
/// and a config with nothing on costs nothing: [`Agent::from_config`](crate::Agent::from_config)
/// then opens no store, creates no file and makes no connection.
///
/// Built with `with_*` methods or parsed from a preset (see [`AgentConfig::PRESETS`]):
///
/// ```
/// use agentmem_agent::AgentConfig;
/// let chat: AgentConfig = "chat".parse().unwrap();
/// assert!(chat.history && chat.history_limit == 20);
/// let custom = AgentConfig::default().with_history(true).with_auto_memory(true);
/// assert!(custom.is_enabled() && !AgentConfig::default().is_enabled());
/// let err = "chats".parse::<AgentConfig>().unwrap_err();
/// assert!(err.to_string().contains("file, sqlite, redis, postgres, mongodb, history, session, chat, learn"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentConfig {
    /// Where memory is stored; `None` means the default store (the file backend under the
    /// agentmem home) once any feature needs one.
    pub backend: Option<StoreSpec>,
    /// Auto-save: after each turn, the whole conversation is saved under this session name
    /// (appending what is new).
    pub auto_save: Option<String>,
    /// History: inject the last [`history_limit`](Self::history_limit) messages of the past session
    /// before each turn, and keep each turn in that session for the next run.
    pub history: bool,
    /// How many past messages history injects (default 10).
    pub history_limit: usize,
    /// The history session; `None` means workspace-scoped (`history_<hash>`). An explicit
    /// id always wins and is not scoped.
    pub session_id: Option<String>,
    /// Auto-memory: extract facts about the user from their messages into long-term memory.
    pub auto_memory: bool,
    /// Learning: capture rules, corrections and repeated requests as insights.
    pub learn: bool,
    /// Inject the store's [`get_context_in`](agentmem_core::ContextStore::get_context_in)
    /// answer for the agent's memory scope instead of the agent's memory block (facts,
    /// insights, notes): the items visible from the scope matching the query, one `- text`
    /// line each, as the store lists them. Like the block, it never shows another agent's
    /// items, so a store's own override of `get_context`, which sees no scope, is not used.
    /// Off by default.
    pub store_context: bool,
    /// The folder whose workspace scopes the history session; `None` means the current
    /// directory when the agent is built.
    pub workspace_dir: Option<PathBuf>,
    /// Whether workspace-scoped history is global (one history per agent name, whatever the
    /// workspace). `None` reads `AGENTMEM_GLOBAL_SESSIONS` when the agent is built; `Some`
    /// decides regardless of the environment.
    pub global_sessions: Option<bool>,
    /// The scope of the agent's memory items (what it stores, and what its memory block
    /// reads: see [`MemoryScope::sees`]). `None` means the agent's own: its name, the workspace
    /// its history is scoped by (none with an explicit `session_id`) and the `owner`. Set
    /// [`MemoryScope::global`] to share items deliberately between every agent and project.
    pub memory_scope: Option<MemoryScope>,
    /// The end user the agent's memory belongs to (the owner part of its memory scope); `None`
    /// shares it between users.
    pub owner: Option<String>,
    /// How long short-term memory items ([`MemoryKind::ShortTerm`](agentmem_core::MemoryKind))
    /// live after they are stored; `None` keeps them until deleted. Default: one day.
    pub short_term_ttl: Option<Duration>,
    /// How long the sessions the agent writes (history, auto-save) live after its last turn
    /// that saved a message: each such turn sets their expiry this far ahead
    /// ([`SessionPatch::expire_in`](agentmem_core::SessionPatch::expire_in)). `None` (the
    /// default) keeps them until deleted.
    pub session_ttl: Option<Duration>,
    /// How long the other memory items the agent stores (facts, insights, long-term notes)
    /// live; `None` (the default) keeps them until deleted. Short-term items keep
    /// [`short_term_ttl`](Self::short_term_ttl).
    pub memory_ttl: Option<Duration>,
    /// What the store keeps, enforced as the agent (or anything sharing the store handle)
    /// writes: the store wears a [`RetainLayer`](agentmem_core::layer::RetainLayer). `None`
    /// (the default) leaves the store as it is opened, which may enforce retention of its own
    /// (the `keep` and `retain` options of a store URL). Needs a full store.
    pub retention: Option<Retention>,
    /// Where the store's encryption key is: [`KeyLocation::File`] (a file only its owner may
    /// read, holding the key in base64) or [`KeyLocation::Env`] (`AGENTMEM_ENCRYPTION_KEY`).
    /// With it, [`Agent::from_config`](crate::Agent::from_config) opens the store encrypted,
    /// whatever [`backend`](Self::backend) names (a default location too), as a store URL's
    /// `key_file=PATH` or `key=env` does; a URL naming a key as well is refused. Without it
    /// (the default), the store is opened with the URL's key if it names one, else without a
    /// key, and an encrypted store is then refused. Needs a registry with encryption (the
    /// facade's `agentmem::registry()` with its feature `encryption`).
    pub encryption_key: Option<KeyLocation>,
}

/// How long short-term memory items live by default: one day.
pub const DEFAULT_SHORT_TERM_TTL: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            backend: None,
            auto_save: None,
            history: false,
            history_limit: DEFAULT_HISTORY_LIMIT,
            session_id: None,
            auto_memory: false,
            learn: false,
            store_context: false,
            workspace_dir: None,
            global_sessions: None,
            memory_scope: None,
            owner: None,
            short_term_ttl: Some(DEFAULT_SHORT_TERM_TTL),
            session_ttl: None,
            memory_ttl: None,
            retention: None,
            encryption_key: None,
        }
    }
}

impl AgentConfig {
    /// The preset names [`FromStr`] accepts (besides `true`, `false` and store URLs).
    pub const PRESETS: [&'static str; 9] = [
        "file", "sqlite", "redis", "postgres", "mongodb", "history", "session", "chat", "learn",
    ];

    /// A config with everything off (the same as [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The default memory (the `true` preset): the default store, for
    /// [`store_memory`](crate::Agent::store_memory) and context injection, nothing automatic.
    pub fn enabled() -> Self {
        Self::default().with_backend(StoreSpec::Kind(Backend::File))
    }

    /// The configuration a preset name stands for, as the seed's preset table gives it:
    ///
    /// | preset | config |
    /// |---|---|
    /// | `file`, `sqlite`, `redis`, `postgres`, `mongodb` | that backend at its default location |
    /// | `history` | history on, limit 10 |
    /// | `session` | history on, limit 10 (each turn is kept in the history session) |
    /// | `chat` | history on, limit 20 |
    /// | `learn` | learning on |
    /// | `true` | [`AgentConfig::enabled`] |
    /// | `false` | everything off |
    ///
    /// Names match case-insensitively. Anything containing `:` is read as a store URL.
    /// An unknown name is an `InvalidInput` error listing the valid ones.
    pub fn preset(name: &str) -> Result<Self> {
        let name = name.trim();
        if name.contains(':') {
            return Ok(Self::default().with_backend(name.parse()?));
        }
        let lower = name.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "true" => Self::enabled(),
            "false" => Self::default(),
            "history" | "session" => Self::default()
                .with_history(true)
                .with_history_limit(DEFAULT_HISTORY_LIMIT),
            "chat" => Self::default().with_history(true).with_history_limit(20),
            "learn" => Self::default().with_learn(true),
            other => match other.parse::<Backend>() {
                Ok(backend) => Self::default().with_backend(StoreSpec::Kind(backend)),
                Err(_) => {
                    return Err(Error::invalid_input(format!(
                        "unknown agent memory preset {name:?}; valid presets are {}, true, false, or a store URL",
                        Self::PRESETS.join(", ")
                    )))
                }
            },
        })
    }

    /// Sets where memory is stored.
    pub fn with_backend(mut self, backend: StoreSpec) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Sets the store URL.
    pub fn with_url(self, url: impl Into<String>) -> Self {
        self.with_backend(StoreSpec::Url(url.into()))
    }

    agentmem_core::setters! {
        /// Saves every turn under session `name` (auto-save).
        pub fn with_auto_save(name: impl Into<String>) { self.auto_save = Some(name.into()) }

        /// Turns history injection on or off.
        pub fn with_history(on: bool) { self.history = on }

        /// Sets how many past messages history injects.
        pub fn with_history_limit(limit: usize) { self.history_limit = limit }

        /// Sets an explicit history session id (not workspace-scoped).
        pub fn with_session_id(id: impl Into<String>) { self.session_id = Some(id.into()) }

        /// Turns auto-memory on or off.
        pub fn with_auto_memory(on: bool) { self.auto_memory = on }

        /// Turns learning on or off.
        pub fn with_learn(on: bool) { self.learn = on }

        /// Injects the store's `get_context_in` answer for the agent's scope instead of the
        /// agent's memory block (see [`store_context`](Self::store_context)).
        pub fn with_store_context(on: bool) { self.store_context = on }

        /// Scopes the history session by the workspace of `dir` instead of the current directory.
        pub fn with_workspace_dir(dir: impl Into<PathBuf>) { self.workspace_dir = Some(dir.into()) }

        /// Makes workspace-scoped history global (`true`) or scoped (`false`) whatever
        /// `AGENTMEM_GLOBAL_SESSIONS` says.
        ///
        /// ```
        /// use agentmem_agent::AgentConfig;
        /// let config = AgentConfig::default().with_history(true).with_global_sessions(false);
        /// assert_eq!(config.global_sessions, Some(false));
        /// ```
        pub fn with_global_sessions(global: bool) { self.global_sessions = Some(global) }

        /// Sets the memory scope (see [`memory_scope`](Self::memory_scope)).
        pub fn with_memory_scope(scope: MemoryScope) { self.memory_scope = Some(scope) }

        /// Sets the owner (see [`owner`](Self::owner)).
        pub fn with_owner(owner: impl Into<String>) { self.owner = Some(owner.into()) }

        /// Sets the retention the store enforces as it is written (see
        /// [`retention`](Self::retention)).
        pub fn with_retention(retention: Retention) { self.retention = Some(retention) }

        /// Encrypts the store with the key at `key` (see [`encryption_key`](Self::encryption_key)).
        pub fn with_encryption_key(key: KeyLocation) { self.encryption_key = Some(key) }
    }

    /// Encrypts the store with the key in the file at `path` (see
    /// [`encryption_key`](Self::encryption_key)).
    ///
    /// ```
    /// use agentmem_agent::AgentConfig;
    /// use agentmem_core::KeyLocation;
    /// let config = AgentConfig::default().with_encryption_key_file("/etc/agentmem/key");
    /// assert_eq!(
    ///     config.encryption_key,
    ///     Some(KeyLocation::File("/etc/agentmem/key".into()))
    /// );
    /// ```
    pub fn with_encryption_key_file(self, path: impl Into<PathBuf>) -> Self {
        self.with_encryption_key(KeyLocation::File(path.into()))
    }

    agentmem_core::setters! {
        /// Sets how long short-term items live (see [`short_term_ttl`](Self::short_term_ttl)).
        pub fn with_short_term_ttl(ttl: Option<Duration>) { self.short_term_ttl = ttl }

        /// Sets how long the agent's sessions live after their last saving turn (see
        /// [`session_ttl`](Self::session_ttl)).
        ///
        /// ```
        /// use std::time::Duration;
        /// use agentmem_agent::AgentConfig;
        /// let month = Some(Duration::from_secs(30 * 86_400));
        /// let config = AgentConfig::default().with_session_ttl(month);
        /// assert!(config.session_ttl.is_some());
        /// ```
        pub fn with_session_ttl(ttl: Option<Duration>) { self.session_ttl = ttl }

        /// Sets how long facts, insights and long-term notes live (see
        /// [`memory_ttl`](Self::memory_ttl)).
        pub fn with_memory_ttl(ttl: Option<Duration>) { self.memory_ttl = ttl }
    }

    /// Whether any feature is on, that is whether a store is needed at all.
    pub fn is_enabled(&self) -> bool {
        self.backend.is_some()
            || self.auto_save.is_some()
            || self.history
            || self.session_id.is_some()
            || self.auto_memory
            || self.learn
    }

    /// Checks the session names (they must be valid [`SessionId`]s), the memory scope and
    /// owner (valid names, see [`MemoryScope::validate`]), and the store spec.
    pub fn validate(&self) -> Result<()> {
        if let Some(scope) = &self.memory_scope {
            scope.validate()?;
        }
        if let Some(owner) = &self.owner {
            MemoryScope::global().with_owner(owner.clone()).validate()?;
        }
        if let Some(name) = &self.auto_save {
            SessionId::new(name.clone())?;
        }
        if let Some(id) = &self.session_id {
            SessionId::new(id.clone())?;
        }
        if let Some(StoreSpec::Url(url)) = &self.backend {
            Backend::from_url(url)?;
        }
        Ok(())
    }
}

impl FromStr for AgentConfig {
    type Err = Error;

    /// Parses a preset (see [`AgentConfig::preset`]).
    fn from_str(s: &str) -> Result<Self> {
        Self::preset(s)
    }
}
