//! The contract every backend's configuration meets, and the [`Registry`] that opens a store
//! from a URL by its scheme (as sqlx registers its drivers).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::redact::redact_url;
use crate::store::{AgentMemory, Capabilities};
use crate::store_options::{KeyLocation, StoreOptions};
use crate::Layered;

/// A backend's connection settings: parsed from the backend's URLs ([`FromStr`]), adjusted
/// with builder methods, then connected.
///
/// Every backend crate implements it for its config type, so one registration line
/// ([`Registry::with`]) makes a backend reachable by URL.
#[async_trait]
pub trait BackendConfig: FromStr<Err = Error> + fmt::Debug + Send + Sync + Sized + 'static {
    /// The raw store this config connects to.
    type Store: AgentMemory;

    /// The backend: its name (as [`SessionStore::backend`](crate::SessionStore::backend)
    /// reports it), URL schemes, system name and capabilities.
    const INFO: &'static BackendInfo;

    /// Connects to (opening, creating or migrating as needed) the store, wearing the standard
    /// [layers](crate::layer).
    async fn connect(self) -> Result<Layered<Self::Store>>;
}

/// What a backend is, declared once by its crate: its name, URL schemes, OpenTelemetry system
/// name, whether it talks to a server, and what it guarantees. Core names no backend: each
/// backend's store returns its own from [`SessionStore::backend`](crate::SessionStore::backend),
/// and its [`BackendConfig::INFO`] registers it.
///
/// Built in a `const` (every method is `const fn`); it prints as its name and compares equal
/// to it:
///
/// ```
/// use agentmem_core::backend::BackendInfo;
/// use agentmem_core::Capabilities;
/// const KV: BackendInfo = BackendInfo::new("kv")
///     .schemes(&["kv", "kvs"])
///     .db_system("keyvaluedb")
///     .remote()
///     .capabilities(Capabilities::new().durable(true).cross_process(true));
/// assert_eq!(KV.to_string(), "kv");
/// assert!(KV == *"kv");
/// assert!(KV.capabilities.durable && !KV.capabilities.indexed_search);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendInfo {
    /// The short name: `file`, `sqlite`, `in-memory`, … (spans' `backend` field, error labels).
    pub name: &'static str,
    /// The URL schemes it accepts: lowercase, without the `:`.
    pub schemes: &'static [&'static str],
    /// OpenTelemetry's `db.system.name` for its spans: the well-known value where there is one
    /// (`postgresql`, `redis`, …), else a name of its own (the backend's name by default).
    pub db_system: &'static str,
    /// Whether it talks to a server (spans of kind `client`) or works in the process
    /// (`internal`).
    pub remote: bool,
    /// What it guarantees, where that does not depend on how a store was opened (a store may
    /// answer [`SessionStore::capabilities`](crate::SessionStore::capabilities) otherwise).
    pub capabilities: Capabilities,
}

impl BackendInfo {
    /// A backend named `name`: no schemes, `name` as its system name, in-process, no
    /// capabilities yet.
    pub const fn new(name: &'static str) -> Self {
        BackendInfo {
            name,
            schemes: &[],
            db_system: name,
            remote: false,
            capabilities: Capabilities::new(),
        }
    }

    /// Sets the URL schemes (lowercase, without the `:`).
    pub const fn schemes(mut self, schemes: &'static [&'static str]) -> Self {
        self.schemes = schemes;
        self
    }

    /// Sets OpenTelemetry's `db.system.name`.
    pub const fn db_system(mut self, db_system: &'static str) -> Self {
        self.db_system = db_system;
        self
    }

    /// Marks it as talking to a server.
    pub const fn remote(mut self) -> Self {
        self.remote = true;
        self
    }

    /// Sets what it guarantees.
    pub const fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Whether it accepts `scheme` (lowercase).
    pub fn accepts(&self, scheme: &str) -> bool {
        self.schemes.contains(&scheme)
    }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A backend equals its name.
impl PartialEq<str> for BackendInfo {
    fn eq(&self, name: &str) -> bool {
        self.name == name
    }
}

/// A boxed future opening a store.
type Opening<'a> = Pin<Box<dyn Future<Output = Result<Arc<dyn AgentMemory>>> + Send + 'a>>;

#[derive(Clone, Copy)]
struct Entry {
    info: &'static BackendInfo,
    open: for<'a> fn(&'a str) -> Opening<'a>,
}

fn open_with<C: BackendConfig>(url: &str) -> Opening<'_> {
    Box::pin(async move {
        let config: C = url.parse()?;
        let store: Arc<dyn AgentMemory> = Arc::new(config.connect().await?);
        Ok(store)
    })
}

/// What wraps an opened store in encryption, made from the key a store URL names
/// ([`Registry::with_encryption`]).
pub type StoreWrapper = Box<dyn FnOnce(Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory> + Send>;

/// The encryption a [`Registry`] opens stores with (the facade registers `agentmem-crypt`'s
/// with its feature `encryption`): what a store wears when its URL names a key, and what it
/// wears when none is named, so that encryption is a property of the store and not of the
/// caller: a store opened without a key refuses an encrypted store instead of writing
/// plaintext into it.
#[derive(Debug, Clone, Copy)]
pub struct Encryption {
    with_key: fn(&KeyLocation) -> Result<StoreWrapper>,
    without_key: fn(Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory>,
}

impl Encryption {
    /// `with_key` reads the key a store URL names and returns what wraps the store in
    /// encryption with it (called before the store is opened, so a bad key opens and creates
    /// nothing); `without_key` wraps a store opened without a key in the layer that refuses
    /// an encrypted store (`agentmem-crypt`'s `NoKeyLayer`).
    pub const fn new(
        with_key: fn(&KeyLocation) -> Result<StoreWrapper>,
        without_key: fn(Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory>,
    ) -> Self {
        Encryption {
            with_key,
            without_key,
        }
    }
}

/// Whether a store opened without a key wears the encryption's no-key layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guard {
    /// It does: what [`Registry::open`] gives.
    On,
    /// It does not: [`Registry::open_unguarded`].
    Off,
}

/// The backends a program can open by URL, by their schemes.
///
/// ```
/// use agentmem_core::backend::Registry;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::new();
/// assert_eq!(registry.backend_for("sqlite://agent.db"), None);
/// let err = registry.open("sqlite://agent.db").await.unwrap_err();
/// assert_eq!(err.kind(), agentmem_core::ErrorKind::Unsupported);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<Entry>,
    encryption: Option<Encryption>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|e| (e.info.name, e.info.schemes)))
            .finish()
    }
}

/// The scheme of a URL, lowercase; `None` without one.
pub fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

impl Registry {
    /// A registry with no backend.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers the backend whose config is `C`, for the schemes of its
    /// [`INFO`](BackendConfig::INFO). A scheme registered earlier keeps its first backend.
    pub fn with<C: BackendConfig>(mut self) -> Self {
        self.entries.push(Entry {
            info: C::INFO,
            open: open_with::<C>,
        });
        self
    }

    /// Opens the stores whose URL names a key (`key_file=PATH`, `key=env`) through
    /// `encryption`'s layer with that key, and every other store wearing its no-key layer (the
    /// facade registers `agentmem-crypt`'s with its feature `encryption`). Without it, a URL
    /// naming a key is refused (`Unsupported`) and other stores are opened as they are.
    pub fn with_encryption(mut self, encryption: Encryption) -> Self {
        self.encryption = Some(encryption);
        self
    }

    /// The backends registered, in registration order.
    pub fn backends(&self) -> impl Iterator<Item = &'static BackendInfo> + '_ {
        self.entries.iter().map(|e| e.info)
    }

    /// Whether the backend named `name` is registered.
    ///
    /// ```
    /// use agentmem_core::backend::Registry;
    /// assert!(!Registry::new().contains("file"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.info.name == name)
    }

    /// The schemes registered for the backend named `name`; empty when it is not registered.
    pub fn schemes(&self, name: &str) -> &'static [&'static str] {
        self.entries
            .iter()
            .find(|e| e.info.name == name)
            .map_or(&[], |e| e.info.schemes)
    }

    fn entry_for(&self, url: &str) -> Option<&Entry> {
        let scheme = url_scheme(url)?;
        self.entries.iter().find(|e| e.info.accepts(&scheme))
    }

    /// The name of the registered backend that opens `url`, from its scheme (nothing is
    /// opened).
    pub fn backend_for(&self, url: &str) -> Option<&'static str> {
        self.entry_for(url).map(|e| e.info.name)
    }

    /// Opens the store `url` names with the backend registered for its scheme, after taking
    /// the store-level options ([`StoreOptions`]) off it: a store asked for retention wears a
    /// [`RetainLayer`](crate::layer::RetainLayer), and outside it the registered
    /// [`Encryption`]: for a URL naming a key, its layer with that key (the key is read before
    /// the store is opened); otherwise its no-key layer, which refuses to read or write an
    /// encrypted store.
    ///
    /// `InvalidInput` for a URL without a scheme, `Unsupported` for a scheme no registered
    /// backend accepts; otherwise what the backend's config and `connect` return.
    pub async fn open(&self, url: &str) -> Result<Arc<dyn AgentMemory>> {
        self.open_as(url, None, Guard::On).await
    }

    /// Opens the store `url` names as [`open`](Self::open) does, encrypted with the key at
    /// `key` (a configuration's key, such as `AgentConfig`'s, rather than the URL's).
    /// `InvalidInput` when the URL names a key as well; `Unsupported` without a registered
    /// [`Encryption`].
    pub async fn open_with_key(
        &self, url: &str, key: &KeyLocation,
    ) -> Result<Arc<dyn AgentMemory>> {
        self.open_as(url, Some(key), Guard::On).await
    }

    /// Opens the store `url` names as [`open`](Self::open) does, but a store whose URL names
    /// no key is given as it is, without the encryption's no-key layer: what a rekey (which
    /// brings its own keys) and a test that layers encryption itself need. A program that
    /// reads or writes records must not use it: on an encrypted store it shows envelopes, and
    /// a write puts plaintext into it.
    pub async fn open_unguarded(&self, url: &str) -> Result<Arc<dyn AgentMemory>> {
        self.open_as(url, None, Guard::Off).await
    }

    async fn open_as(
        &self, url: &str, key: Option<&KeyLocation>, guard: Guard,
    ) -> Result<Arc<dyn AgentMemory>> {
        let Some(scheme) = url_scheme(url) else {
            return Err(Error::invalid_input(format!(
                "store URL {:?} has no scheme",
                redact_url(url)
            )));
        };
        let Some(entry) = self.entry_for(url) else {
            return Err(Error::unsupported(format!(
                "no backend for URL scheme {scheme:?} is registered (registered: {})",
                self.entries
                    .iter()
                    .flat_map(|e| e.info.schemes.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let (url, options) = StoreOptions::split(url)?;
        let key = match (options.key(), key) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid_input(
                    "the store URL names an encryption key (key_file or key) and another key \
                     was given: give one",
                ))
            }
            (named, given) => named.or(given),
        };
        let wrap: Option<StoreWrapper> = match (key, self.encryption) {
            (Some(key), Some(encryption)) => Some((encryption.with_key)(key)?),
            (Some(_), None) => {
                return Err(Error::unsupported(
                    "the store URL names an encryption key (key_file or key), but this \
                     program opens stores without encryption; with the agentmem crate, \
                     enable its feature \"encryption\"",
                ))
            }
            (None, Some(encryption)) if guard == Guard::On => {
                Some(Box::new(encryption.without_key))
            }
            (None, _) => None,
        };
        let store = options.apply((entry.open)(&url).await?);
        Ok(match wrap {
            Some(wrap) => wrap(store),
            None => store,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, InMemoryStore, SessionStore};

    /// A backend registered by a test: in memory, under the scheme `mem`.
    #[derive(Debug)]
    struct MemConfig;

    impl FromStr for MemConfig {
        type Err = Error;
        fn from_str(_: &str) -> Result<Self> {
            Ok(MemConfig)
        }
    }

    static MEM: BackendInfo = BackendInfo::new("mem").schemes(&["mem", "memory"]);

    #[async_trait]
    impl BackendConfig for MemConfig {
        type Store = InMemoryStore;
        const INFO: &'static BackendInfo = &MEM;
        async fn connect(self) -> Result<Layered<Self::Store>> {
            Ok(InMemoryStore::new())
        }
    }

    #[test]
    fn registered_schemes_open_their_backend_case_insensitively() {
        let registry = Registry::new().with::<MemConfig>();
        assert!(registry.contains("mem"));
        assert_eq!(registry.schemes("mem"), ["mem", "memory"]);
        assert_eq!(registry.backend_for("MEMORY://x"), Some("mem"));
        assert_eq!(registry.backend_for("file:///x"), None);
        let names: Vec<&str> = registry.backends().map(|b| b.name).collect();
        assert_eq!(names, ["mem"]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let store = registry.open("mem://x").await.expect("open");
            assert_eq!(store.backend(), "in-memory");
            let err = registry.open("ftp://h").await.expect_err("unknown");
            assert_eq!(err.kind(), ErrorKind::Unsupported);
            assert!(err.to_string().contains("mem, memory"), "{err}");
            let err = registry.open("no scheme").await.expect_err("no scheme");
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            // A key without encryption registered is refused, not ignored.
            let err = registry.open("mem://x?key=env").await.expect_err("key");
            assert_eq!(err.kind(), ErrorKind::Unsupported);
            assert!(err.to_string().contains("\"encryption\""), "{err}");
        });
    }

    /// A registry with encryption gives every store one of its layers: the key's when the URL
    /// (or the caller) names one, the no-key one otherwise; `open_unguarded` neither, unless
    /// a key is named. Counted by the two wrappers this test registers.
    #[test]
    fn encryption_wraps_every_store_opened_with_or_without_a_key() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static KEYED: AtomicUsize = AtomicUsize::new(0);
        static GUARDED: AtomicUsize = AtomicUsize::new(0);
        fn with_key(_: &KeyLocation) -> Result<StoreWrapper> {
            Ok(Box::new(|store| {
                KEYED.fetch_add(1, Ordering::SeqCst);
                store
            }))
        }
        fn without_key(store: Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory> {
            GUARDED.fetch_add(1, Ordering::SeqCst);
            store
        }
        let registry = Registry::new()
            .with::<MemConfig>()
            .with_encryption(Encryption::new(with_key, without_key));
        let counts = || (KEYED.load(Ordering::SeqCst), GUARDED.load(Ordering::SeqCst));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            registry.open("mem://x").await.expect("open");
            assert_eq!(counts(), (0, 1), "no key: the no-key layer");
            registry.open("mem://x?key=env").await.expect("open");
            assert_eq!(counts(), (1, 1), "the URL's key: its layer alone");
            let env = KeyLocation::Env;
            registry.open_with_key("mem://x", &env).await.expect("open");
            assert_eq!(counts(), (2, 1), "a key given: its layer alone");
            registry.open_unguarded("mem://x").await.expect("open");
            assert_eq!(counts(), (2, 1), "unguarded: as it is");
            registry
                .open_unguarded("mem://x?key=env")
                .await
                .expect("open");
            assert_eq!(
                counts(),
                (3, 1),
                "unguarded still encrypts with a named key"
            );
            let err = registry
                .open_with_key("mem://x?key=env", &env)
                .await
                .expect_err("two keys");
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            assert!(err.to_string().contains("give one"), "{err}");
            assert_eq!(counts(), (3, 1), "refused before anything is opened");
        });
    }
}
