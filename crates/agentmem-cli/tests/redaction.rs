//! The `agentmem` command never prints a password: `doctor` (text and JSON), a failing open
//! and `migrate`, on a URL of every scheme holding a password with every URL delimiter, raw
//! or percent-encoded; file and SQLite URLs (which hold none) are shown as given.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

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
/// timeouts.
fn url(scheme: &str, secret: &str) -> String {
    let host = "127.0.0.1:1";
    match scheme {
        "postgres" | "postgresql" => {
            format!("{scheme}://u:{secret}@{host}/db?connect_timeout=1")
        }
        "redis" | "rediss" => format!(
            "{scheme}://u:{secret}@{host}/0?connect_timeout_ms=100&response_timeout_ms=100"
        ),
        "redis+cluster" | "rediss+cluster" => format!(
            "{scheme}://u:{secret}@{host},127.0.0.1:2/?connect_timeout_ms=100&response_timeout_ms=100"
        ),
        _ => format!(
            "{scheme}://u:{secret}@{host}/db?serverSelectionTimeoutMS=100&connectTimeoutMS=100"
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
    for scheme in schemes {
        for password in PASSWORDS {
            for secret in [password.to_string(), encode(password)] {
                let url = url(scheme, &secret);
                for args in [
                    &["--store", &url, "doctor"][..],
                    &["--store", &url, "doctor", "--json"],
                    &["--store", &url, "show", "s"],
                    &["migrate", "--from", &url, "--to", &target],
                    &["migrate", "--from", &target, "--to", &url],
                ] {
                    let shown = printed(args);
                    assert!(!shown.is_empty(), "{args:?} printed nothing");
                    for canary in CANARIES {
                        assert!(
                            !shown.contains(canary),
                            "{args:?} shows {canary} of the password: {shown}"
                        );
                    }
                }
            }
        }
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
