//! Opening a store from a URL, among the backends compiled in.

use std::sync::Arc;

use agentmem_agent::Backend;
use agentmem_core::backend::Registry;
use agentmem_core::{redact_url, AgentMemory, Error, Result};

/// A [`Registry`] holding every backend compiled into this build (cargo features `file`,
/// `sqlite`, `redis`, `postgres`, `mongodb`) and, with feature `encryption`, the encryption a
/// store URL asks for with `key_file=PATH` or `key=env`, and for every other store the
/// [`NoKeyLayer`](agentmem_crypt::NoKeyLayer), which refuses to read or write an encrypted
/// store without its key: what [`open`] dispatches through, and what
/// [`Agent::from_config`](crate::agent::Agent::from_config) takes.
///
/// ```
/// use agentmem::Backend;
/// let registry = agentmem::registry();
/// assert_eq!(registry.contains(Backend::File.as_str()), cfg!(feature = "file"));
/// assert_eq!(registry.contains("postgres"), cfg!(feature = "postgres"));
/// ```
pub fn registry() -> Registry {
    let registry = Registry::new();
    #[cfg(feature = "file")]
    let registry = registry.with::<agentmem_file::FileConfig>();
    #[cfg(feature = "sqlite")]
    let registry = registry.with::<agentmem_sqlite::SqliteConfig>();
    #[cfg(feature = "redis")]
    let registry = registry.with::<agentmem_redis::RedisConfig>();
    #[cfg(feature = "postgres")]
    let registry = registry.with::<agentmem_postgres::PostgresConfig>();
    #[cfg(feature = "mongodb")]
    let registry = registry.with::<agentmem_mongodb::MongoConfig>();
    #[cfg(feature = "encryption")]
    let registry = registry.with_encryption(agentmem_core::backend::Encryption::new(
        encryption,
        refuse_without_key,
    ));
    registry
}

/// Wraps a store opened without a key in [`NoKeyLayer`](agentmem_crypt::NoKeyLayer).
#[cfg(feature = "encryption")]
fn refuse_without_key(store: Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory> {
    use agentmem_core::layer::Layer as _;
    Arc::new(agentmem_crypt::NoKeyLayer.layer(store))
}

/// Reads the key a store URL names (`key_file=PATH`, `key=env`) and wraps the store in
/// [`EncryptLayer`](agentmem_crypt::EncryptLayer) with it.
#[cfg(feature = "encryption")]
fn encryption(source: &agentmem_core::KeyLocation) -> Result<agentmem_core::backend::StoreWrapper> {
    use agentmem_core::layer::Layer as _;
    use agentmem_core::KeyLocation;
    use agentmem_crypt::{EncryptLayer, MasterKey};
    let key = match source {
        KeyLocation::File(path) => MasterKey::from_file(path)?,
        KeyLocation::Env => MasterKey::from_env()?,
        _ => {
            return Err(Error::unsupported(
                "this build does not know where that encryption key is",
            ))
        }
    };
    let layer = EncryptLayer::new(&key);
    Ok(Box::new(move |store: Arc<dyn AgentMemory>| {
        Arc::new(layer.layer(store)) as Arc<dyn AgentMemory>
    }))
}

/// Opens the store a URL names, among the backends compiled into this build (see
/// [`registry`]).
///
/// With feature `encryption` the store's encryption decides: a URL naming its key
/// (`key_file=PATH`, `key=env`) opens the store encrypted with it, and a store opened
/// without a key wears [`NoKeyLayer`](agentmem_crypt::NoKeyLayer), so an encrypted store is
/// refused (reads and writes, `InvalidInput`) instead of shown as envelopes or written in
/// plaintext. [`open_with_key`] takes a key from elsewhere; [`open_unguarded`] is the store
/// as it is.
///
/// `InvalidInput` for a URL without a scheme or with one no backend accepts; a known backend
/// that is not compiled in is an [`Unsupported`](agentmem_core::ErrorKind::Unsupported) error
/// naming the cargo feature to enable.
///
/// ```no_run
/// # async fn demo() -> agentmem::Result<()> {
/// let store = agentmem::open("file:///tmp/agentmem-demo").await?;
/// println!("{} backend, schema v{}", store.backend(), store.schema_version().await?);
/// # Ok(()) }
/// ```
pub async fn open(url: &str) -> Result<Arc<dyn AgentMemory>> {
    let registry = registry();
    if registry.backend_for(url).is_none() {
        return Err(not_compiled_in(Backend::from_url(url)?, url));
    }
    registry.open(url).await
}

/// Opens the store a URL names as [`open`] does, but without the layer that refuses an
/// encrypted store when the URL names no key: the store as it is (a URL naming its key still
/// opens it encrypted). For a rekey (`agentmem::crypt::rekey` brings its own keys) and for
/// tests that layer encryption themselves; a program reading or writing records uses
/// [`open`], since on an encrypted store this one shows envelopes and writes plaintext.
pub async fn open_unguarded(url: &str) -> Result<Arc<dyn AgentMemory>> {
    let registry = registry();
    if registry.backend_for(url).is_none() {
        return Err(not_compiled_in(Backend::from_url(url)?, url));
    }
    registry.open_unguarded(url).await
}

/// Whether the store URL names its own encryption key (`key_file=PATH`, `key=env`): then
/// [`open`] encrypts with it, and a key from elsewhere has no part in it.
pub fn url_names_key(url: &str) -> Result<bool> {
    let (_, options) = agentmem_core::StoreOptions::split(url)
        .map_err(|e| Error::new(e.kind(), format!("store {}", redact_url(url))).with_source(e))?;
    Ok(options.key().is_some())
}

/// Opens a store as the `agentmem` command and the Python package do: a URL naming its own
/// key is opened with that key; otherwise the store wears
/// [`EncryptLayer`](agentmem_crypt::EncryptLayer) with `key`, or, without one,
/// [`NoKeyLayer`](agentmem_crypt::NoKeyLayer) (as [`open`] gives it), which refuses an
/// encrypted store instead of writing plaintext into it. Either layer alone, never one
/// inside the other. `InvalidInput` when the URL names a key and `key` is another.
///
/// ```no_run
/// # async fn demo() -> agentmem::Result<()> {
/// let key = agentmem::crypt::MasterKey::from_env()?;
/// let store = agentmem::open_with_key("sqlite:///tmp/agent.db", Some(&key)).await?;
/// # Ok(()) }
/// ```
#[cfg(feature = "encryption")]
pub async fn open_with_key(
    url: &str, key: Option<&agentmem_crypt::MasterKey>,
) -> Result<Arc<dyn AgentMemory>> {
    use agentmem_core::AgentMemoryExt as _;
    if url_names_key(url)? {
        if key.is_some() {
            return Err(Error::invalid_input(format!(
                "store {} names its encryption key (key_file or key) and another key was \
                 given: give one",
                redact_url(url)
            )));
        }
        return open(url).await;
    }
    match key {
        // Unguarded: the no-key layer inside the encryption layer would refuse every record.
        Some(key) => Ok(Arc::new(
            open_unguarded(url)
                .await?
                .with_layer(agentmem_crypt::EncryptLayer::new(key)),
        )),
        None => open(url).await,
    }
}

/// The key in the file at `path`, the error naming the file.
#[cfg(feature = "encryption")]
pub fn key_from_file(path: &std::path::Path) -> Result<agentmem_crypt::MasterKey> {
    agentmem_crypt::MasterKey::from_file(path).map_err(|e| {
        Error::new(e.kind(), format!("encryption key file {}", path.display())).with_source(e)
    })
}

/// The key a program is given outside its store URL: the file at `key_file` when one is
/// named, else `AGENTMEM_ENCRYPTION_KEY` when set and not empty, else none. Read anew on
/// each call, so a key set after start is seen.
#[cfg(feature = "encryption")]
pub fn configured_key(
    key_file: Option<&std::path::Path>,
) -> Result<Option<agentmem_crypt::MasterKey>> {
    use agentmem_crypt::{MasterKey, KEY_ENV};
    if let Some(path) = key_file {
        return key_from_file(path).map(Some);
    }
    match std::env::var_os(KEY_ENV) {
        Some(value) if !value.is_empty() => MasterKey::from_env()
            .map(Some)
            .map_err(|e| Error::new(e.kind(), format!("${KEY_ENV}")).with_source(e)),
        _ => Ok(None),
    }
}

/// Opens a store as the `agentmem` command and the Python package do: a URL naming its own
/// key (`key_file=`, `key=env`) with that key, else with the key [`configured_key`] finds
/// (`key_file`, else `AGENTMEM_ENCRYPTION_KEY`), else guarded by
/// [`NoKeyLayer`](agentmem_crypt::NoKeyLayer) (see [`open_with_key`]). `InvalidInput` when
/// the URL names a key and `key_file` another: which one would be meant?
///
/// ```no_run
/// # async fn demo() -> agentmem::Result<()> {
/// let key_file = std::path::Path::new("/etc/agentmem/key");
/// let store = agentmem::open_with_key_file("sqlite:///tmp/agent.db", Some(key_file)).await?;
/// # Ok(()) }
/// ```
#[cfg(feature = "encryption")]
pub async fn open_with_key_file(
    url: &str, key_file: Option<&std::path::Path>,
) -> Result<Arc<dyn AgentMemory>> {
    if url_names_key(url)? {
        if key_file.is_some() {
            return Err(Error::invalid_input(format!(
                "store {} names its encryption key (key_file or key) and a key file names \
                 another: give one",
                redact_url(url)
            )));
        }
        return open(url).await;
    }
    open_with_key(url, configured_key(key_file)?.as_ref()).await
}

/// The error for a URL whose backend this build lacks, naming the feature to enable.
fn not_compiled_in(backend: Backend, url: &str) -> Error {
    Error::unsupported(format!(
        "the {backend} backend is not compiled in; enable the agentmem feature \"{}\" to open {}",
        backend.feature(),
        redact_url(url)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;

    #[test]
    fn missing_feature_is_named_and_password_redacted() {
        let err = not_compiled_in(Backend::Postgres, "postgres://u:hunter2@h/db");
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let text = err.to_string();
        assert!(text.contains("feature \"postgres\""), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    /// The backends this build's cargo features compile in.
    const COMPILED_IN: &[Backend] = &[
        #[cfg(feature = "file")]
        Backend::File,
        #[cfg(feature = "sqlite")]
        Backend::Sqlite,
        #[cfg(feature = "redis")]
        Backend::Redis,
        #[cfg(feature = "postgres")]
        Backend::Postgres,
        #[cfg(feature = "mongodb")]
        Backend::MongoDb,
    ];

    /// The registry and `Backend` list the same schemes for every backend, so `open`'s
    /// dispatch and `Backend::from_url` cannot drift apart.
    #[test]
    fn registered_schemes_are_the_backends_schemes() {
        let registry = registry();
        for info in registry.backends() {
            let backend: Backend = info
                .name
                .parse()
                .expect("a registered backend is a Backend");
            assert_eq!(info.schemes, backend.schemes(), "{info}");
            assert!(registry.contains(backend.as_str()), "{info}");
        }
        for backend in Backend::ALL {
            let compiled_in = COMPILED_IN.contains(&backend);
            assert_eq!(
                registry.contains(backend.as_str()),
                compiled_in,
                "{backend}"
            );
            for scheme in backend.schemes() {
                let url = format!("{scheme}://host/x");
                let registered = registry.backend_for(&url);
                assert_eq!(registered, compiled_in.then_some(backend.as_str()), "{url}");
            }
        }
    }

    #[tokio::test]
    async fn open_rejects_unknown_schemes_and_names_missing_features() {
        for url in ["mysql://h/db", "no-scheme-here", ""] {
            let err = open(url).await.expect_err(url);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
        }
        let registry = registry();
        for backend in Backend::ALL {
            if registry.contains(backend.as_str()) {
                continue;
            }
            // File URLs carry no credentials; the others must not show theirs.
            let credentials = if backend == Backend::File {
                ""
            } else {
                "u:hunter2@"
            };
            let url = format!("{}://{credentials}host/x", backend.schemes()[0]);
            let err = open(&url).await.expect_err(&url);
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{url}");
            let text = err.to_string();
            assert!(
                text.contains(&format!("feature \"{}\"", backend.feature())),
                "{text}"
            );
            assert!(!text.contains("hunter2"), "{text}");
        }
    }

    /// A repeated URL option would silently take one of its values: every backend compiled
    /// in refuses it before connecting, naming the option and not the password.
    #[tokio::test]
    async fn every_backend_refuses_a_repeated_option() {
        let registry = registry();
        for (backend, url, option) in [
            (
                Backend::File,
                "file:///tmp/x?durability=buffered&durability=full",
                "durability",
            ),
            (
                Backend::Sqlite,
                "sqlite:///tmp/x.db?mode=rwc&mode=ro",
                "mode",
            ),
            (
                Backend::Redis,
                "redis://:hunter2@127.0.0.1:1/?prefix=a&prefix=b",
                "prefix",
            ),
            (
                Backend::Redis,
                "redis+cluster://:hunter2@127.0.0.1:1/?prefix=a&PREFIX=b",
                "prefix",
            ),
            (
                Backend::Postgres,
                "postgres://u:hunter2@127.0.0.1:1/db?schema=a&schema=b",
                "schema",
            ),
            (
                Backend::Postgres,
                "postgres://u:hunter2@127.0.0.1:1/db?application_name=a&application_name=b",
                "application_name",
            ),
            (
                Backend::MongoDb,
                "mongodb://u:hunter2@127.0.0.1:1/db?appName=a&appname=b",
                "appname",
            ),
            (Backend::File, "file:///tmp/x?keep=1&keep=2", "keep"),
        ] {
            if !registry.contains(backend.as_str()) {
                continue;
            }
            let err = open(url).await.expect_err(url);
            let text = format!("{err} {err:?}");
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {text}");
            assert!(text.contains(option), "{url}: {text}");
            assert!(!text.contains("hunter2"), "{url}: {text}");
        }
    }

    /// The store refuses by itself (finding M1): once encrypted, `open` and `open_with_key`
    /// without a key refuse to read or write it, with the key it works (one layer, not the
    /// no-key layer inside the key's), and `open_unguarded` shows it as it is.
    #[cfg(all(feature = "encryption", feature = "file"))]
    #[tokio::test]
    async fn an_encrypted_store_refuses_every_opener_without_its_key() {
        use agentmem_core::{AgentMemoryExt as _, Message, SessionId};
        use agentmem_crypt::MasterKey;
        let dir = tempfile::tempdir().expect("temporary folder");
        let url = format!("file://{}", dir.path().display());
        let key = MasterKey::generate().expect("a key");
        let id: SessionId = "vault".parse().expect("an id");
        let keyed = open_with_key(&url, Some(&key)).await.expect("open");
        keyed
            .append_one(&id, Message::user("4711"))
            .await
            .expect("the key writes");
        assert_eq!(keyed.messages(&id).await.expect("read")[0].content, "4711");
        let fresh: SessionId = "fresh".parse().expect("an id");
        for (name, store) in [
            ("open", open(&url).await.expect("open")),
            (
                "open_with_key",
                open_with_key(&url, None).await.expect("open"),
            ),
        ] {
            let err = store
                .append_one(&fresh, Message::user("plain"))
                .await
                .expect_err(name);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{name}: {err}");
            assert!(err.to_string().contains("encrypted"), "{name}: {err}");
            let err = store.messages(&id).await.expect_err(name);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{name}: {err}");
        }
        let raw = open_unguarded(&url).await.expect("open");
        let stored = raw.messages(&id).await.expect("the envelopes");
        assert_ne!(stored[0].content, "4711", "ciphertext at rest");
        let keyed_url = format!("{url}?key=env");
        let err = open_with_key(&keyed_url, Some(&key))
            .await
            .expect_err("two keys");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
}
