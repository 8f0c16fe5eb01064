//! Secrets are never printed: for generated passwords over the printable set (`#`, `?`, `@`,
//! `/`, `%`, spaces, quotes, backslashes, some non-ASCII), written raw or percent-encoded in
//! the URL of every scheme, no config `Debug`/`Display`, parse or open error (message,
//! `Debug`, sources), registry error, `StoreSpec` and no tracing output contains any part of
//! the password; nor does the conversation summarizer's base URL (`Debug`, call errors).
//!
//! The same generated values are given, raw and encoded, as secret URL options (the names
//! `agentmem_core::redact_url` hides, [`SECRET_OPTIONS`]): in every case `sslpassword=` on
//! PostgreSQL, `tlsCertificateKeyFilePassword=` and `authMechanismProperties=AWS_SESSION_TOKEN:`
//! on MongoDB, and on every scheme one more secret option, each name in turn, in its own
//! spelling or upper case (so each name is tried with about 23 of the 256 values per scheme,
//! each spelling with about 12); and as every secret keyword of a libpq keyword string.
//!
//! A password is random chunks of 0-3 characters between fixed canaries (`Zx0Qv`, `Zx1Qv`,
//! …): alphanumeric, so percent-encoding, `Debug` escaping and quoting keep them whole, and
//! found in no other output; any piece of the password a message shows carries one.
#![cfg(all(feature = "redis", feature = "postgres", feature = "mongodb"))]
use std::fmt::Write as _;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentmem_core::SECRET_OPTIONS;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};

/// Generated passwords per scheme (each tried raw and percent-encoded).
const CASES: u32 = 256;

/// One case in this many opens a URL that parses (a refused connection takes ~0.1 s, with
/// retries); a URL that does not parse is opened in every case (it fails at once).
const OPEN_EVERY: u32 = 16;

/// The canaries a password is built around (see the module docs).
const CANARIES: [&str; 4] = ["Zx0Qv", "Zx1Qv", "Zx2Qv", "Zx3Qv"];

/// Everything every subscriber of this test binary printed (spans with their fields on close).
fn traced() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUFFER: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUFFER.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = SharedWriter(buffer.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buffer
    })
}

#[derive(Clone)]
struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl io::Write for SharedWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A character over printable ASCII (space and every delimiter included) and some non-ASCII.
fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        9 => (0x20u8..=0x7e).prop_map(char::from),
        1 => prop::sample::select(vec!['é', 'ß', '€', '日', '\u{a0}']),
    ]
}

/// A password: chunks of 0-3 random characters before, between and after the canaries.
fn password() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::collection::vec(any_char(), 0..=3), CANARIES.len() + 1).prop_map(
        |chunks| {
            let mut password = String::new();
            for (i, chunk) in chunks.iter().enumerate() {
                password.extend(chunk);
                if let Some(canary) = CANARIES.get(i) {
                    password.push_str(canary);
                }
            }
            password
        },
    )
}

/// Every byte but ASCII letters, digits and `-._~` as `%XX`.
fn encode(text: &str) -> String {
    text.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
        out
    })
}

/// The URLs of `scheme` holding `secret` (raw or encoded) as their password, and as the
/// value of secret options (see the module docs; `case` picks the option every scheme gets),
/// on a port nothing listens on, with short timeouts. The user name is an address, so a
/// parser that ends the authority inside the password connects to a refused local port, not
/// to a name it must look up.
fn urls(scheme: &str, secret: &str, case: u32) -> Vec<String> {
    let user = "127.0.0.1";
    let host = "127.0.0.1:1";
    // A raw `&` ends a query value for every reader: an option's value gets none raw.
    let value = secret.replace('&', "%26");
    let (base, mut urls) = match scheme {
        "postgres" | "postgresql" => (
            format!("{scheme}://{user}@{host}/db?connect_timeout=1"),
            vec![format!(
                "{scheme}://{user}:{secret}@{host}/db?connect_timeout=1"
            )],
        ),
        "redis" | "rediss" => {
            let options = "connect_timeout_ms=100&response_timeout_ms=100";
            (
                format!("{scheme}://{host}/0?{options}"),
                vec![format!("{scheme}://{user}:{secret}@{host}/0?{options}")],
            )
        }
        "redis+cluster" | "rediss+cluster" => {
            let options = "connect_timeout_ms=100&response_timeout_ms=100";
            (
                format!("{scheme}://{host},127.0.0.1:2/?{options}"),
                vec![format!(
                    "{scheme}://{user}:{secret}@{host},127.0.0.1:2/?{options}"
                )],
            )
        }
        "mongodb" => {
            let options = "serverSelectionTimeoutMS=100&connectTimeoutMS=100";
            (
                format!("{scheme}://{host}/db?{options}"),
                vec![format!("{scheme}://{user}:{secret}@{host}/db?{options}")],
            )
        }
        "mongodb+srv" => (
            format!("{scheme}://cluster0.invalid/db?tls=true"),
            vec![format!("{scheme}://{user}:{secret}@cluster0.invalid/db")],
        ),
        _ => unreachable!("{scheme}"),
    };
    match scheme {
        "postgres" | "postgresql" => urls.extend([
            format!("{base}&password={value}"),
            format!("{base}&sslpassword={value}"),
        ]),
        "mongodb" | "mongodb+srv" => urls.extend([
            format!("{base}&tlsCertificateKeyFilePassword={value}"),
            format!(
                "{base}&authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:{value}"
            ),
        ]),
        _ => {}
    }
    let index = case as usize % SECRET_OPTIONS.len();
    let name = SECRET_OPTIONS[index];
    let name = match (case as usize / SECRET_OPTIONS.len()).is_multiple_of(2) {
        true => name.to_string(),
        false => name.to_ascii_uppercase(),
    };
    urls.push(format!("{base}&{name}={value}"));
    urls
}

/// What the configs and `StoreSpec` print for `url`, and every error parsing it; whether the
/// backend's config parsed.
fn config_outputs(scheme: &str, url: &str, out: &mut Vec<String>) -> bool {
    fn shown<T: std::fmt::Debug>(parsed: agentmem::Result<T>, out: &mut Vec<String>) -> bool {
        match parsed {
            Ok(config) => {
                out.push(format!("{config:?}"));
                true
            }
            Err(e) => {
                error_outputs(&e, out);
                false
            }
        }
    }
    let parsed = match scheme {
        "postgres" | "postgresql" => shown(url.parse::<agentmem::postgres::PostgresConfig>(), out),
        "mongodb" | "mongodb+srv" => {
            if let Ok(config) = url.parse::<agentmem::mongodb::MongoConfig>() {
                out.push(config.redacted_url());
            }
            shown(url.parse::<agentmem::mongodb::MongoConfig>(), out)
        }
        _ => {
            if let Ok(config) = url.parse::<agentmem::redis::RedisConfig>() {
                out.push(config.redacted_url());
            }
            shown(url.parse::<agentmem::redis::RedisConfig>(), out)
        }
    };
    match url.parse::<agentmem::agent::StoreSpec>() {
        Ok(spec) => out.extend([spec.to_string(), format!("{spec:?}")]),
        Err(e) => error_outputs(&e, out),
    }
    out.push(agentmem_core::redact_url(url));
    parsed
}

/// An error's message, `Debug` and every source's message.
fn error_outputs(e: &agentmem::Error, out: &mut Vec<String>) {
    out.push(e.to_string());
    out.push(format!("{e:?}"));
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        out.push(inner.to_string());
        out.push(format!("{inner:?}"));
        source = inner.source();
    }
}

/// The error opening `url` through the facade, if it fails within a few seconds.
async fn open_outputs(url: &str, out: &mut Vec<String>) {
    let opened = tokio::time::timeout(Duration::from_secs(5), agentmem::open(url)).await;
    if let Ok(Err(e)) = opened {
        error_outputs(&e, out);
    }
}

/// Fails when any output shows a piece of the password.
fn assert_hidden(url: &str, outputs: &[String]) -> Result<(), TestCaseError> {
    for output in outputs {
        for canary in CANARIES {
            prop_assert!(
                !output.contains(canary),
                "{canary} of the password in {url:?} is shown in {output:?}"
            );
        }
    }
    Ok(())
}

/// A runner of [`CASES`] cases from a fixed seed, so every run checks the same passwords.
fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(0x5ec2e7),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })
}

/// Runs the property for `scheme`: parse and print every URL of every generated password, raw
/// and encoded, and open it (see [`OPEN_EVERY`]).
fn check_scheme(scheme: &'static str) {
    let buffer = traced();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runner = runner();
    let case = std::cell::Cell::new(0u32);
    runner
        .run(&password(), |password| {
            case.set(case.get() + 1);
            for secret in [password.clone(), encode(&password)] {
                for url in urls(scheme, &secret, case.get()) {
                    let mut outputs = Vec::new();
                    let parsed = config_outputs(scheme, &url, &mut outputs);
                    // `mongodb+srv` needs DNS to open.
                    if scheme != "mongodb+srv" && (!parsed || case.get().is_multiple_of(OPEN_EVERY))
                    {
                        runtime.block_on(open_outputs(&url, &mut outputs));
                    }
                    assert_hidden(&url, &outputs)?;
                    // What was traced since the last check, by any test of this binary.
                    let traced = std::mem::take(&mut *buffer.lock().unwrap());
                    let traced = String::from_utf8_lossy(&traced).into_owned();
                    assert_hidden(&url, &[traced])?;
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn postgres_passwords_are_never_printed() {
    check_scheme("postgres");
    check_scheme("postgresql");
}

#[test]
fn redis_passwords_are_never_printed() {
    check_scheme("redis");
    check_scheme("rediss");
}

#[test]
fn redis_cluster_passwords_are_never_printed() {
    check_scheme("redis+cluster");
    check_scheme("rediss+cluster");
}

#[test]
fn mongodb_passwords_are_never_printed() {
    check_scheme("mongodb");
    check_scheme("mongodb+srv");
}

/// libpq keyword strings: the password, and the value of every secret keyword, quoted as libpq
/// quotes it (`\'` and `\\`), or unquoted with every space, quote and backslash escaped.
#[test]
fn keyword_string_passwords_are_never_printed() {
    let mut runner = runner();
    runner
        .run(&password(), |password| {
            let escaped = |quote_spaces: bool| {
                password.chars().fold(String::new(), |mut out, c| {
                    if c == '\'' || c == '\\' || (quote_spaces && c.is_whitespace()) {
                        out.push('\\');
                    }
                    out.push(c);
                    out
                })
            };
            let mut texts = vec![
                format!("host=127.0.0.1 port=1 password='{}' user=u", escaped(false)),
                format!("host=127.0.0.1 password = {} dbname=x", escaped(true)),
            ];
            for name in SECRET_OPTIONS {
                texts.push(format!("{name}='{}'", escaped(false)));
                texts.push(format!(
                    "user=u {} = {} port=1",
                    name.to_ascii_uppercase(),
                    escaped(true)
                ));
            }
            for text in texts {
                assert_hidden(&text, &[agentmem_core::redact_url(&text)])?;
            }
            Ok(())
        })
        .unwrap();
}

/// The summarizer's base URL (`OPENAI_BASE_URL`, a gateway's with credentials in it): neither
/// its `Debug` nor the error of a call (to a refused local port, or refused before sending)
/// shows any piece of a password in it, raw or encoded.
#[cfg(feature = "openai")]
#[test]
fn summarizer_base_url_passwords_are_never_printed() {
    use agentmem::conversation::{OpenAiSummarizer, Summarizer, SummaryRequest};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let case = std::cell::Cell::new(0u32);
    runner()
        .run(&password(), |password| {
            case.set(case.get() + 1);
            for secret in [password.clone(), encode(&password)] {
                for base in [
                    format!("http://127.0.0.1:{secret}@127.0.0.1:1/v1"),
                    format!("https://user:{secret}@127.0.0.1:1/v1"),
                ] {
                    let summarizer = OpenAiSummarizer::new("model")
                        .with_base_url(base.clone())
                        .with_api_key("key")
                        .with_timeout(Duration::from_secs(1));
                    let mut outputs = vec![format!("{summarizer:?}")];
                    if case.get().is_multiple_of(OPEN_EVERY) {
                        let request = SummaryRequest::new(vec![agentmem::Message::user("hi")], 64);
                        if let Err(e) = runtime.block_on(summarizer.summarize(&request)) {
                            error_outputs(&e, &mut outputs);
                        }
                    }
                    assert_hidden(&base, &outputs)?;
                }
            }
            Ok(())
        })
        .unwrap();
}
