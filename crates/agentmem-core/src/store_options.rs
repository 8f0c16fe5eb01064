//! [`StoreOptions`]: the options of a store URL that belong to the store as a whole, not to
//! its backend (retention), taken off the URL before the backend parses the rest.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::layer::{Layer, RetainLayer, Retention};
use crate::store::{AgentMemory, RetentionPolicy};

/// The names of the store-level options, as a URL spells them.
const KEEP: &str = "keep";
const RETAIN: &str = "retain";
const RETAIN_MEMORIES: &str = "retain_memories";
const KEEP_MEMORIES: &str = "keep_memories";
const KEEP_PER: &str = "keep_per";
const RETAIN_EVERY: &str = "retain_every";
const KEY_FILE: &str = "key_file";
const KEY: &str = "key";
const EMBEDDER: &str = "embedder";
const EMBED: &str = "embed";
const MODEL_DIR: &str = "model_dir";
const EMBED_URL: &str = "embed_url";
const EMBED_MODEL: &str = "embed_model";
const EMBED_KEY_ENV: &str = "embed_key_env";
const OPTIONS: [&str; 14] = [
    KEEP,
    RETAIN,
    RETAIN_MEMORIES,
    KEEP_MEMORIES,
    KEEP_PER,
    RETAIN_EVERY,
    KEY_FILE,
    KEY,
    EMBEDDER,
    EMBED,
    MODEL_DIR,
    EMBED_URL,
    EMBED_MODEL,
    EMBED_KEY_ENV,
];

/// The embedding model a store URL names for semantic search (`embedder=local` or
/// `embedder=http`); what builds it is the program's recall support (the facade's features
/// `embed-local` and `embed-http`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmbedderChoice {
    /// The local model (all-MiniLM-L6-v2) from `model_dir=PATH`, else `AGENTMEM_MODEL_DIR`,
    /// else the default folder the install command fills.
    Local {
        /// `model_dir=PATH`, when given.
        model_dir: Option<PathBuf>,
    },
    /// An OpenAI-compatible server: `embed_url=URL` (its base, before `/v1/embeddings`),
    /// `embed_model=NAME`, the API key in the environment variable `embed_key_env=VAR`
    /// (`OPENAI_API_KEY` by default).
    Http {
        /// The server's base URL.
        url: String,
        /// The model name sent with each request.
        model: String,
        /// The environment variable holding the API key.
        key_env: String,
    },
}

/// What a store URL asks of semantic search: the embedder, and whether messages are embedded
/// as well as memory items (`embed=messages`; `embed=memories`, the default, embeds items only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingOptions {
    /// The embedder.
    pub embedder: EmbedderChoice,
    /// Whether messages are embedded too.
    pub messages: bool,
}

/// Where a store URL says the key of an encrypted store is: `key_file=PATH` (a file that only
/// its owner may read, holding the key in base64) or `key=env` (`AGENTMEM_ENCRYPTION_KEY`).
/// What opens the store with it is the program's encryption (the facade's feature
/// `encryption`; see [`Registry::with_encryption`](crate::backend::Registry::with_encryption)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyLocation {
    /// The key file at this path.
    File(PathBuf),
    /// The environment variable `AGENTMEM_ENCRYPTION_KEY`.
    Env,
}

/// What a store URL asks of the store as a whole, whatever its backend: its
/// [`Retention`] (`keep=N`, `retain=DURATION`, `retain_memories=DURATION`, `keep_memories=N`,
/// `keep_per=owner` or `keep_per=agent`, `retain_every=DURATION`) and its encryption key ([`KeyLocation`]: `key_file=PATH`,
/// `key=env`). [`Registry::open`](crate::backend::Registry::open) takes these options off the
/// URL, opens the store with the rest and wraps it ([`apply`](Self::apply), then the
/// registry's encryption).
///
/// ```
/// use agentmem_core::StoreOptions;
/// let (url, options) = StoreOptions::split("sqlite://agent.db?keep=20&retain=30d&mode=rwc")?;
/// assert_eq!(url, "sqlite://agent.db?mode=rwc");
/// let retention = options.retention().expect("retention asked for");
/// assert_eq!(retention.policy().max_sessions, Some(20));
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreOptions {
    retention: Option<Retention>,
    key: Option<KeyLocation>,
    embedding: Option<EmbeddingOptions>,
}

impl StoreOptions {
    /// Splits `url` into the URL its backend parses (the store-level options removed, every
    /// other character as given) and the store-level options.
    ///
    /// The query is what follows the first `?` (up to a `#`), as the `url` crate and every
    /// backend read it. `InvalidInput`, naming the option (never the URL), for an option given
    /// twice, a value that does not parse, or a combination that means nothing (`keep_per`
    /// without a count, `keep_per=agent` with `keep`, `retain_every` alone, `keep=0`).
    pub fn split(url: &str) -> Result<(String, StoreOptions)> {
        let Some(start) = url.find('?') else {
            return Ok((url.to_string(), StoreOptions::default()));
        };
        let end = url[start..].find('#').map_or(url.len(), |i| start + i);
        let mut found: [Option<&str>; OPTIONS.len()] = [None; OPTIONS.len()];
        let mut kept = Vec::new();
        for pair in url[start + 1..end].split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let Some(slot) = OPTIONS.iter().position(|o| name.eq_ignore_ascii_case(o)) else {
                kept.push(pair);
                continue;
            };
            if found[slot].replace(value).is_some() {
                return Err(Error::invalid_input(format!(
                    "store URL option `{}` is given more than once",
                    OPTIONS[slot]
                )));
            }
        }
        let options = StoreOptions::parse(&found)?;
        let mut rest = url[..start].to_string();
        if !kept.is_empty() {
            rest.push('?');
            rest.push_str(&kept.join("&"));
        }
        rest.push_str(&url[end..]);
        Ok((rest, options))
    }

    fn parse(found: &[Option<&str>; OPTIONS.len()]) -> Result<StoreOptions> {
        let [keep, retain, retain_memories, keep_memories, keep_per, every, key_file, key, embedder, embed, model_dir, embed_url, embed_model, embed_key_env] =
            *found;
        let embedding = parse_embedding(
            embedder,
            embed,
            model_dir,
            embed_url,
            embed_model,
            embed_key_env,
        )?;
        let key = match (key_file, key) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid_input(format!(
                    "store URL options `{KEY_FILE}` and `{KEY}` both name a key; give one"
                )))
            }
            (Some(path), None) => {
                let path = crate::support::percent_decode(path)
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| {
                        Error::invalid_input(format!(
                            "store URL option `{KEY_FILE}` takes a percent-encoded file path"
                        ))
                    })?;
                Some(KeyLocation::File(PathBuf::from(path)))
            }
            (None, Some(v)) if v.eq_ignore_ascii_case("env") => Some(KeyLocation::Env),
            (None, Some(_)) => {
                return Err(Error::invalid_input(format!(
                    "store URL option `{KEY}` takes `env` (the key in AGENTMEM_ENCRYPTION_KEY); \
                     a key file is `{KEY_FILE}=PATH`"
                )))
            }
            (None, None) => None,
        };
        let duration = |name: &str, value: Option<&str>| {
            value
                .map(|v| {
                    parse_duration(v).map_err(|e| {
                        Error::invalid_input(format!("store URL option `{name}`")).with_source(e)
                    })
                })
                .transpose()
        };
        let count = |name: &str, what: &str, value: Option<&str>| {
            value
                .map(|v| {
                    v.parse::<usize>().map_err(|e| {
                        Error::invalid_input(format!(
                            "store URL option `{name}` takes a number of {what}, not {v:?}"
                        ))
                        .with_source(e)
                    })
                })
                .transpose()
        };
        let policy = RetentionPolicy {
            max_sessions: count(KEEP, "sessions", keep)?,
            max_age: duration(RETAIN, retain)?,
            max_memory_age: duration(RETAIN_MEMORIES, retain_memories)?,
        };
        let max_memories = count(KEEP_MEMORIES, "memory items", keep_memories)?;
        if policy == RetentionPolicy::default() && max_memories.is_none() {
            if keep_per.is_some() || every.is_some() {
                return Err(Error::invalid_input(format!(
                    "store URL options `{KEEP_PER}` and `{RETAIN_EVERY}` need a limit: \
                     `{KEEP}`, `{RETAIN}`, `{RETAIN_MEMORIES}` or `{KEEP_MEMORIES}`"
                )));
            }
            return Ok(StoreOptions {
                retention: None,
                key,
                embedding,
            });
        }
        let mut retention = Retention::with_memory_limit(policy, max_memories)?;
        match keep_per {
            None => {}
            Some(v) if v.eq_ignore_ascii_case("owner") => retention = retention.per_owner()?,
            Some(v) if v.eq_ignore_ascii_case("agent") => retention = retention.per_agent()?,
            Some(v) => {
                return Err(Error::invalid_input(format!(
                    "store URL option `{KEEP_PER}` takes `owner` or `agent`, not {v:?}"
                )))
            }
        }
        if let Some(every) = duration(RETAIN_EVERY, every)? {
            retention = retention.sweep_every(every);
        }
        Ok(StoreOptions {
            retention: Some(retention),
            key,
            embedding,
        })
    }

    /// The retention asked for, if any.
    pub fn retention(&self) -> Option<&Retention> {
        self.retention.as_ref()
    }

    /// Where the URL says the encryption key is, if it asks for encryption.
    pub fn key(&self) -> Option<&KeyLocation> {
        self.key.as_ref()
    }

    /// The embedder the URL names for semantic search, if any.
    pub fn embedding(&self) -> Option<&EmbeddingOptions> {
        self.embedding.as_ref()
    }

    /// Whether the URL asked for nothing at the store level.
    pub fn is_empty(&self) -> bool {
        self.retention.is_none() && self.key.is_none() && self.embedding.is_none()
    }

    /// `store` as these options ask, but for encryption (which is not core's): wearing a
    /// [`RetainLayer`] when retention is asked for.
    pub fn apply(&self, store: Arc<dyn AgentMemory>) -> Arc<dyn AgentMemory> {
        match &self.retention {
            Some(retention) => Arc::new(RetainLayer::new(retention.clone()).layer(store)),
            None => store,
        }
    }
}

/// The embedding options of a URL: `embedder` (`local` or `http`) with its own options;
/// `embed`, `model_dir`, `embed_url`, `embed_model` and `embed_key_env` need an embedder
/// they belong to.
fn parse_embedding(
    embedder: Option<&str>, embed: Option<&str>, model_dir: Option<&str>, embed_url: Option<&str>,
    embed_model: Option<&str>, embed_key_env: Option<&str>,
) -> Result<Option<EmbeddingOptions>> {
    let decoded = |name: &str, value: &str| {
        crate::support::percent_decode(value)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "store URL option `{name}` takes a percent-encoded value"
                ))
            })
    };
    let http_only = [
        (EMBED_URL, embed_url),
        (EMBED_MODEL, embed_model),
        (EMBED_KEY_ENV, embed_key_env),
    ];
    let Some(embedder) = embedder else {
        let given = [(EMBED, embed), (MODEL_DIR, model_dir)]
            .into_iter()
            .chain(http_only);
        if let Some((name, _)) = given.into_iter().find(|(_, v)| v.is_some()) {
            return Err(Error::invalid_input(format!(
                "store URL option `{name}` needs `{EMBEDDER}=local` or `{EMBEDDER}=http`"
            )));
        }
        return Ok(None);
    };
    let messages = match embed {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("messages") => true,
        Some(v) if v.eq_ignore_ascii_case("memories") => false,
        Some(v) => {
            return Err(Error::invalid_input(format!(
                "store URL option `{EMBED}` takes `messages` or `memories`, not {v:?}"
            )))
        }
    };
    let embedder = if embedder.eq_ignore_ascii_case("local") {
        if let Some((name, _)) = http_only.into_iter().find(|(_, v)| v.is_some()) {
            return Err(Error::invalid_input(format!(
                "store URL option `{name}` is for `{EMBEDDER}=http`, not `local`"
            )));
        }
        let model_dir = model_dir
            .map(|d| decoded(MODEL_DIR, d))
            .transpose()?
            .map(PathBuf::from);
        EmbedderChoice::Local { model_dir }
    } else if embedder.eq_ignore_ascii_case("http") {
        if model_dir.is_some() {
            return Err(Error::invalid_input(format!(
                "store URL option `{MODEL_DIR}` is for `{EMBEDDER}=local`, not `http`"
            )));
        }
        let (Some(url), Some(model)) = (embed_url, embed_model) else {
            return Err(Error::invalid_input(format!(
                "`{EMBEDDER}=http` needs `{EMBED_URL}` (the server, percent-encoded) and \
                 `{EMBED_MODEL}`"
            )));
        };
        EmbedderChoice::Http {
            url: decoded(EMBED_URL, url)?,
            model: decoded(EMBED_MODEL, model)?,
            key_env: embed_key_env
                .map(|v| decoded(EMBED_KEY_ENV, v))
                .transpose()?
                .unwrap_or_else(|| "OPENAI_API_KEY".to_owned()),
        }
    } else {
        return Err(Error::invalid_input(format!(
            "store URL option `{EMBEDDER}` takes `local` or `http`, not {embedder:?}"
        )));
    };
    Ok(Some(EmbeddingOptions { embedder, messages }))
}

/// Refuses a URL whose query gives an option twice (`prefix=a&prefix=b` would silently take
/// one of them): `InvalidInput` naming the option, never the URL. Names compare after
/// percent-decoding, ignoring ASCII case; `repeatable` lists the options a backend takes as a
/// list (MongoDB's `readPreferenceTags`, PostgreSQL's `host`). Every backend's URL parser
/// calls it, so the rule holds on every scheme.
///
/// ```
/// use agentmem_core::check_options_unique;
/// assert!(check_options_unique("redis://h/?prefix=a&db=1", &[]).is_ok());
/// let err = check_options_unique("redis://:pw@h/?prefix=a&Prefix=b", &[]).unwrap_err();
/// assert!(err.to_string().contains("`prefix`"));
/// assert!(check_options_unique("postgres://h/db?host=a&host=b", &["host"]).is_ok());
/// ```
pub fn check_options_unique(url: &str, repeatable: &[&str]) -> Result<()> {
    let Some(start) = url.find('?') else {
        return Ok(());
    };
    let end = url[start..].find('#').map_or(url.len(), |i| start + i);
    let mut seen: Vec<String> = Vec::new();
    for (name, _) in url::form_urlencoded::parse(&url.as_bytes()[start + 1..end]) {
        let name = name.to_ascii_lowercase();
        if name.is_empty() || repeatable.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
            continue;
        }
        if seen.contains(&name) {
            let shown: String = name.chars().take(40).collect();
            return Err(Error::invalid_input(format!(
                "URL option `{shown}` is given more than once; give it once"
            )));
        }
        seen.push(name);
    }
    Ok(())
}

/// Parses a duration like `30d`, `12h`, `90m`, `45s`, `2w` or `1d12h` (what `purge
/// --older-than` and the retention URL options take). `InvalidInput` for anything else,
/// a bare number included, and for a sum that overflows.
///
/// ```
/// use std::time::Duration;
/// use agentmem_core::parse_duration;
/// assert_eq!(parse_duration("1d12h")?, Duration::from_secs(36 * 3600));
/// assert!(parse_duration("12").is_err());
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn parse_duration(s: &str) -> Result<Duration> {
    let bad = || {
        Error::invalid_input(format!(
            "invalid duration {s:?}: use a number and a unit (s, m, h, d, w), like 30d or 1d12h"
        ))
    };
    let mut total: u64 = 0;
    let mut number = String::new();
    let mut any = false;
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        number.clear();
        any = true;
    }
    if !any || !number.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn split(url: &str) -> (String, Option<Retention>) {
        let (rest, options) = StoreOptions::split(url).expect(url);
        (rest, options.retention().cloned())
    }

    /// The error `url`'s options are refused with, checked to be `InvalidInput`.
    fn refused(url: &str) -> Error {
        let err = StoreOptions::split(url).expect_err(url);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        err
    }

    #[test]
    fn embedding_options_come_off_and_parse() {
        let (rest, options) = StoreOptions::split(
            "sqlite:///tmp/a.db?embedder=local&embed=messages&model_dir=%2Fm%20d&mode=rwc",
        )
        .expect("parses");
        assert_eq!(rest, "sqlite:///tmp/a.db?mode=rwc");
        let embedding = options.embedding().expect("asked for");
        assert!(embedding.messages);
        assert_eq!(
            embedding.embedder,
            EmbedderChoice::Local {
                model_dir: Some(PathBuf::from("/m d"))
            }
        );
        let (_, options) = StoreOptions::split(
            "file:///x?embedder=http&embed_url=http%3A%2F%2F127.0.0.1%3A8080&embed_model=m",
        )
        .expect("parses");
        let embedding = options.embedding().expect("asked for");
        assert!(!embedding.messages);
        assert_eq!(
            embedding.embedder,
            EmbedderChoice::Http {
                url: "http://127.0.0.1:8080".into(),
                model: "m".into(),
                key_env: "OPENAI_API_KEY".into()
            }
        );
        for bad in [
            "file:///x?embed=messages",
            "file:///x?embedder=cloud",
            "file:///x?embedder=local&embed=all",
            "file:///x?embedder=local&embed_url=http%3A%2F%2Fh",
            "file:///x?embedder=http&embed_model=m",
            "file:///x?embedder=http&embed_url=u&embed_model=m&model_dir=d",
            "file:///x?embedder=local&embedder=http",
        ] {
            refused(bad);
        }
    }

    #[test]
    fn store_options_come_off_and_the_rest_stays_as_given() {
        let (rest, retention) = split("redis://:p%3Fw@h:6379/0?prefix=a&KEEP=3&retain=1d#frag");
        assert_eq!(rest, "redis://:p%3Fw@h:6379/0?prefix=a#frag");
        let retention = retention.expect("asked for");
        assert_eq!(retention.policy().max_sessions, Some(3));
        assert_eq!(
            retention.policy().max_age,
            Some(Duration::from_secs(86_400))
        );
        assert!(!retention.is_per_owner());
        assert_eq!(
            retention.sweep_interval(),
            crate::layer::DEFAULT_SWEEP_EVERY
        );

        let (rest, retention) = split("file:///tmp/x?keep=2&keep_per=owner&retain_every=0s");
        assert_eq!(rest, "file:///tmp/x");
        let retention = retention.expect("asked for");
        assert!(retention.is_per_owner());
        assert_eq!(retention.sweep_interval(), Duration::ZERO);

        let (rest, retention) = split("sqlite://a.db?retain_memories=2w");
        assert_eq!(rest, "sqlite://a.db");
        assert_eq!(
            retention.expect("asked for").policy().max_memory_age,
            Some(Duration::from_secs(14 * 86_400))
        );

        for plain in [
            "postgres://u@h/db?sslmode=require",
            "file:///x",
            "mongodb://h/?a=1&b",
        ] {
            assert_eq!(split(plain), (plain.to_string(), None), "{plain}");
        }
    }

    #[test]
    fn bad_store_options_are_refused_naming_the_option_not_the_url() {
        for (url, option) in [
            ("redis://:secret@h/?keep=1&keep=2", "keep"),
            ("redis://:secret@h/?keep=x", "keep"),
            ("redis://:secret@h/?keep=0", "keep=0"),
            ("redis://:secret@h/?retain=12", "retain"),
            ("redis://:secret@h/?retain_memories=1y", "retain_memories"),
            ("redis://:secret@h/?keep_per=owner", "keep_per"),
            (
                "redis://:secret@h/?retain=1d&keep_per=owner",
                "keep_per=owner needs keep",
            ),
            ("redis://:secret@h/?keep=1&keep_per=agent", "keep_per=agent"),
            (
                "redis://:secret@h/?retain=1d&keep_per=agent",
                "keep_per=agent needs",
            ),
            (
                "redis://:secret@h/?keep_memories=1&keep_per=team",
                "keep_per",
            ),
            ("redis://:secret@h/?keep_memories=0", "keep_memories=0"),
            ("redis://:secret@h/?keep_memories=-1", "keep_memories"),
            (
                "redis://:secret@h/?keep_memories=1&KEEP_MEMORIES=2",
                "keep_memories",
            ),
            ("redis://:secret@h/?retain_every=1m", "retain_every"),
            (
                "redis://:secret@h/?retain=1d&retain_every=soon",
                "retain_every",
            ),
        ] {
            let err = refused(url);
            let text = format!("{err} {err:?}");
            assert!(text.contains(option), "{url}: {text}");
            assert!(!text.contains("secret"), "{url}: {text}");
        }
    }

    #[test]
    fn memory_counts_are_kept_per_store_owner_or_agent() {
        let (rest, retention) = split("file:///x?keep_memories=5&keep_per=AGENT&x=1");
        assert_eq!(rest, "file:///x?x=1");
        let retention = retention.expect("asked for");
        assert_eq!(retention.max_memories(), Some(5));
        assert_eq!(retention.policy(), &RetentionPolicy::default());
        assert!(retention.is_per_agent());
        assert!(!retention.is_per_owner());

        let (_, retention) = split("file:///x?keep_memories=2&keep=3&keep_per=owner");
        let retention = retention.expect("asked for");
        assert_eq!(retention.max_memories(), Some(2));
        assert_eq!(retention.policy().max_sessions, Some(3));
        assert!(retention.is_per_owner());
        assert!(!retention.is_per_agent());

        // A memory count alone is a limit; with `keep_per=owner` it is counted per owner.
        let (_, retention) = split("file:///x?keep_memories=1&keep_per=owner");
        assert!(retention.expect("asked for").is_per_owner());
        let (_, retention) = split("file:///x?keep_memories=7&retain=1d");
        let retention = retention.expect("asked for");
        assert_eq!(retention.max_memories(), Some(7));
        assert!(!retention.is_per_owner() && !retention.is_per_agent());
    }

    #[test]
    fn key_options_name_a_file_or_the_environment() {
        let (rest, options) =
            StoreOptions::split("sqlite://a.db?key_file=%2Fkeys%2Fmy%20key&mode=rwc").unwrap();
        assert_eq!(rest, "sqlite://a.db?mode=rwc");
        assert_eq!(
            options.key(),
            Some(&KeyLocation::File(PathBuf::from("/keys/my key")))
        );
        assert!(options.retention().is_none());
        let (_, options) = StoreOptions::split("file:///x?key=ENV&keep=3").unwrap();
        assert_eq!(options.key(), Some(&KeyLocation::Env));
        assert!(options.retention().is_some());
        for bad in [
            "file:///x?key=env&key_file=/k",
            "file:///x?key=hunter2",
            "file:///x?key_file=",
            "file:///x?key_file=%zz",
        ] {
            let err = refused(bad);
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("45s").unwrap(), Duration::from_secs(45));
        assert_eq!(
            parse_duration("2w").unwrap(),
            Duration::from_secs(1_209_600)
        );
        assert_eq!(
            parse_duration(" 1h30m ").unwrap(),
            Duration::from_secs(5400)
        );
        for bad in ["", "12", "d", "1x", "1d2", "99999999999999999999w", "-1d"] {
            assert_eq!(
                parse_duration(bad).unwrap_err().kind(),
                ErrorKind::InvalidInput,
                "{bad}"
            );
        }
    }
}
