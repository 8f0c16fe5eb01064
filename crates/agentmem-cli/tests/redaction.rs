//! The `agentmem` command never prints a password: `doctor` (text and JSON), a failing open
//! and `migrate`, on a URL of every scheme holding a password with every URL delimiter, raw
//! or percent-encoded; file and SQLite URLs (which hold none) are shown as given.
//!
//! Besides six fixed passwords, [`GENERATED`] (24) passwords per scheme, generated from a
//! fixed seed over the printable ASCII set (every URL delimiter, `%` and space included) and
//! some non-ASCII, each raw and percent-encoded, go through `doctor` (text and JSON) and
//! `sessions` against an unreachable server, on all eight server schemes: 768 URLs, 2,304 runs
//! of the binary. A password a parser refuses as ambiguous (a raw `/`, `?` or `#` before the
//! last `@`) is refused without being printed.
mod common;

use common::{agentmem, file_url, ok};

/// Passwords built around canaries (`Zx0Qv`, …) that no other output holds: alphanumeric, so
/// percent-encoding and escaping keep them whole.
const PASSWORDS: [&str; 6] = [
    "Zx0Qv#Zx1Qv?Zx2Qv",
    "Zx0Qv/Zx1Qv@Zx2Qv",
    "?Zx0Qv/Zx1Qv#",
    "Zx0Qv%zzZx1Qv %41Zx2Qv",
    r#"Zx0Qv:&=;'"\Zx1Qv"#,
    "/Zx0Qv€Zx1Qv@",
];

const CANARIES: [&str; 3] = ["Zx0Qv", "Zx1Qv", "Zx2Qv"];

/// Generated passwords per scheme (each tried raw and percent-encoded).
const GENERATED: usize = 24;

/// The characters a generated password draws from half of the time: the URL delimiters, `%`,
/// space and what quoting or escaping treats specially.
const DELIMITERS: &[u8] = b"#?@/% :&=;+,[]'\"\\";

/// A deterministic pseudo-random sequence (xorshift64*), so every run checks the same
/// passwords.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A printable character: half of the time one of [`DELIMITERS`], else any printable ASCII
    /// character, and one time in sixteen a non-ASCII one.
    fn char(&mut self) -> char {
        match self.below(16) {
            0 => ['é', 'ß', '€', '日', '\u{a0}'][self.below(5)],
            1..=8 => char::from(DELIMITERS[self.below(DELIMITERS.len())]),
            _ => char::from(0x20 + self.below(0x7f - 0x20) as u8),
        }
    }
}

/// `count` passwords: chunks of 0-3 generated characters before, between and after the
/// canaries.
fn generated_passwords(seed: u64, count: usize) -> Vec<String> {
    // Spread small seeds over the state (xorshift needs a state other than zero).
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..count)
        .map(|_| {
            let mut password = String::new();
            for i in 0..=CANARIES.len() {
                for _ in 0..rng.below(4) {
                    password.push(rng.char());
                }
                if let Some(canary) = CANARIES.get(i) {
                    password.push_str(canary);
                }
            }
            password
        })
        .collect()
}

/// Every byte but ASCII letters and digits as `%XX`.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b.is_ascii_alphanumeric() {
            true => char::from(b).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}

/// A URL of `scheme` with `secret` as its password, on a port nothing listens on, with short
/// timeouts. The user name is an address, so a parser that ends the authority inside the
/// password connects to a refused local port, not to a name it must look up.
fn url(scheme: &str, secret: &str) -> String {
    let host = "127.0.0.1:1";
    let u = "127.0.0.1";
    match scheme {
        "postgres" | "postgresql" => {
            format!("{scheme}://{u}:{secret}@{host}/db?connect_timeout=1")
        }
        "redis" | "rediss" => format!(
            "{scheme}://{u}:{secret}@{host}/0?connect_timeout_ms=100&response_timeout_ms=100"
        ),
        "redis+cluster" | "rediss+cluster" => format!(
            "{scheme}://{u}:{secret}@{host},127.0.0.1:2/?connect_timeout_ms=100&response_timeout_ms=100"
        ),
        // A name that does not resolve: SRV needs a host name, and no port.
        "mongodb+srv" => format!(
            "{scheme}://{u}:{secret}@cluster0.invalid/db?serverSelectionTimeoutMS=100&connectTimeoutMS=100"
        ),
        _ => format!(
            "{scheme}://{u}:{secret}@{host}/db?serverSelectionTimeoutMS=100&connectTimeoutMS=100"
        ),
    }
}

/// Standard output and error of `agentmem` with `args`, whatever its exit code.
fn printed(args: &[&str]) -> String {
    let out = agentmem().args(args).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn no_command_prints_a_password() {
    check_schemes(&["postgres", "postgresql", "mongodb"]);
}

#[test]
fn no_command_prints_a_redis_password() {
    check_schemes(&["redis", "rediss", "redis+cluster", "rediss+cluster"]);
}

/// Runs `doctor`, `show` and `migrate` on a URL of each of `schemes` for every password.
fn check_schemes(schemes: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let target = file_url(dir.path());
    let passwords = PASSWORDS.map(String::from);
    for_each_url(schemes, &passwords, |url, password| {
        for args in [
            &["--store", url, "doctor"][..],
            &["--store", url, "doctor", "--json"],
            &["--store", url, "show", "s"],
            &["migrate", "--from", url, "--to", &target],
            &["migrate", "--from", &target, "--to", url],
        ] {
            assert_hidden(args, password);
        }
    });
}

/// Calls `check` with a URL of each of `schemes` for each of `passwords`, raw and
/// percent-encoded, and the password.
fn for_each_url(schemes: &[&str], passwords: &[String], mut check: impl FnMut(&str, &str)) {
    for scheme in schemes {
        for password in passwords {
            for secret in [password.clone(), encode(password)] {
                check(&url(scheme, &secret), password);
            }
        }
    }
}

/// Runs `agentmem` with `args`: it prints something, and no canary of `password`.
fn assert_hidden(args: &[&str], password: &str) {
    let shown = printed(args);
    assert!(!shown.is_empty(), "{args:?} printed nothing");
    for canary in CANARIES {
        assert!(
            !shown.contains(canary),
            "{args:?} shows {canary} of the password {password:?}: {shown}"
        );
    }
}

#[test]
fn file_and_sqlite_urls_are_shown_as_given() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("file://{}", dir.path().join("store").display()),
        format!("sqlite://{}", dir.path().join("x.db").display()),
        format!("file://{}", dir.path().join("with space:colon").display()),
    ] {
        let report = ok(agentmem().args(["--store", &url, "doctor"]));
        let store = report
            .lines()
            .find_map(|line| line.strip_prefix("store:"))
            .unwrap()
            .trim();
        assert_eq!(store, url, "{report}");
    }
}

/// Runs `doctor` (text and JSON) and `sessions` on a URL of each of `schemes` for
/// [`GENERATED`] generated passwords, raw and encoded.
fn check_generated(schemes: &[&str], seed: u64) {
    for_each_url(
        schemes,
        &generated_passwords(seed, GENERATED),
        |url, password| {
            for args in [
                &["--store", url, "doctor"][..],
                &["--store", url, "doctor", "--json"],
                &["--store", url, "sessions"],
            ] {
                assert_hidden(args, password);
            }
        },
    );
}

#[test]
fn generated_passwords_cover_every_delimiter() {
    let all: String = [1, 2, 3, 4]
        .into_iter()
        .flat_map(|seed| generated_passwords(seed, GENERATED))
        .collect();
    for c in ['#', '?', '@', '/', '%', ' ', ':', '&', '\\'] {
        assert!(all.contains(c), "no generated password holds {c:?}");
    }
}

/// Each scheme family with its own seed, so each sees other passwords.
#[test]
fn no_command_prints_a_generated_password() {
    let families: [&[&str]; 4] = [
        &["postgres", "postgresql"],
        &["mongodb", "mongodb+srv"],
        &["redis", "rediss"],
        &["redis+cluster", "rediss+cluster"],
    ];
    for (seed, schemes) in (1..).zip(families) {
        check_generated(schemes, seed);
    }
}
