//! The session lifecycle commands (`fork`, `rewind`, `tag`, `sessions --owner/--tag`,
//! `expire`) and `--encryption-key-file`, driven through the built binary on a file store and
//! a SQLite store.
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{agentmem, column, fails, file_url, fixture, json, ok, rows};
use serde_json::Value;

/// A store of each kind under `dir`: its name, URL and the files it writes (every file under
/// the returned folder).
fn stores(dir: &Path) -> Vec<(&'static str, String, PathBuf)> {
    let files = dir.join("files");
    let sqlite = dir.join("sqlite");
    std::fs::create_dir_all(&sqlite).unwrap();
    vec![
        ("file", file_url(&files), files),
        (
            "sqlite",
            format!("sqlite://{}", sqlite.join("agents.db").display()),
            sqlite,
        ),
    ]
}

/// The binary on the store at `url`.
fn at(url: &str) -> Command {
    let mut cmd = agentmem();
    cmd.arg("--store").arg(url);
    cmd
}

/// The binary on the store at `url`, with the encryption key in the file `key`.
fn at_with_key(url: &str, key: &Path) -> Command {
    let mut cmd = at(url);
    cmd.arg("--encryption-key-file").arg(key);
    cmd
}

/// Appends `n` user messages `m 0` … to `session`; their ids, in order.
fn append_numbered(url: &str, session: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let text = format!("m {i}");
            let out = json(at(url).args(["append", session, "--role", "user", &text]));
            out["message"]["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The ids and contents of a session's messages, as `show --json` prints them.
fn messages(url: &str, session: &str) -> (Vec<String>, Vec<String>) {
    messages_with(at(url), session)
}

fn listed(url: &str, args: &[&str]) -> Vec<String> {
    let out = json(at(url).arg("sessions").args(args));
    column(&out, "id").into_iter().map(String::from).collect()
}

#[test]
fn fork_at_a_message_copies_up_to_it_and_leaves_the_source() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url, _) in stores(dir.path()) {
        let ids = append_numbered(&url, "main", 5);
        ok(at(&url).args(["tag", "main", "--owner", "ada"]));
        let out = ok(at(&url).args(["fork", "main", "what-if", "--at", &ids[2]]));
        assert!(
            out.contains("forked main into what-if") && out.contains("3 messages"),
            "{name}: {out}"
        );
        let (forked_ids, forked) = messages(&url, "what-if");
        assert_eq!(forked_ids, ids[..3], "{name}: the same messages, in order");
        assert_eq!(forked, ["m 0", "m 1", "m 2"], "{name}");
        let (source_ids, _) = messages(&url, "main");
        assert_eq!(source_ids, ids, "{name}: the source is unchanged");
        assert_eq!(
            listed(&url, &["--owner", "ada"]),
            ["main", "what-if"],
            "{name}: the fork carries the labels"
        );

        let whole = json(at(&url).args(["fork", "main", "copy"]));
        assert_eq!(whole["message_count"], 5, "{name}");
        let err = fails(at(&url).args(["fork", "main", "copy"]), 6);
        assert!(err.contains("exists"), "{name}: {err}");
        let err = fails(at(&url).args(["fork", "nothing", "fresh"]), 3);
        assert!(err.contains("nothing"), "{name}: {err}");
        fails(
            at(&url).args(["fork", "main", "fresh", "--at", "no-such"]),
            3,
        );
        fails(at(&url).args(["show", "fresh"]), 3);
    }
}

#[test]
fn rewind_removes_the_tail_and_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url, _) in stores(dir.path()) {
        let ids = append_numbered(&url, "chat", 5);
        let out = ok(at(&url).args(["rewind", "chat", "--last", "2"]));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{name}: a header and the 2 removed: {out}");
        assert!(lines[0].contains("removed 2 messages"), "{name}: {out}");
        assert!(lines[1].ends_with("] user: m 3"), "{name}: {out}");
        assert!(lines[2].ends_with("] user: m 4"), "{name}: {out}");
        assert_eq!(messages(&url, "chat").0, ids[..3], "{name}: 3 of 5 left");

        let removed = json(at(&url).args(["rewind", "chat", "--to", &ids[0]]));
        assert_eq!(removed["session"], "chat");
        assert_eq!(column(&removed["removed"], "content"), ["m 1", "m 2"]);
        assert_eq!(messages(&url, "chat").1, ["m 0"], "{name}: --to keeps it");
        fails(at(&url).args(["rewind", "chat", "--to", "no-such"]), 3);
        fails(at(&url).args(["rewind", "missing", "--last", "1"]), 3);
        let err = fails(at(&url).args(["rewind", "chat"]), 2);
        assert!(err.contains("--last") && err.contains("--to"), "{err}");
    }
}

#[test]
fn sessions_lists_by_owner_and_tag() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url, _) in stores(dir.path()) {
        for session in ["a", "b", "c", "d"] {
            append_numbered(&url, session, 1);
        }
        let tagged = json(at(&url).args([
            "tag",
            "a",
            "--owner",
            "ada",
            "--tag",
            "project=kyoto",
            "--title",
            "Trip to Kyoto",
        ]));
        assert_eq!(tagged["labels"]["owner"], "ada", "{name}");
        assert_eq!(tagged["labels"]["tags"]["project"], "kyoto", "{name}");
        ok(at(&url).args(["tag", "b", "--tag", "project=kyoto", "--tag", "k=v"]));
        ok(at(&url).args(["tag", "c", "--owner", "ada"]));

        assert_eq!(listed(&url, &["--owner", "ada"]), ["a", "c"], "{name}");
        assert_eq!(
            listed(&url, &["--tag", "project=kyoto"]),
            ["a", "b"],
            "{name}"
        );
        let both = ["--owner", "ada", "--tag", "project=kyoto"];
        assert_eq!(listed(&url, &both), ["a"], "{name}");
        assert_eq!(listed(&url, &[]), ["a", "b", "c", "d"], "{name}");
        assert!(listed(&url, &["--owner", "nobody"]).is_empty(), "{name}");

        let table = ok(at(&url).args(["sessions", "--owner", "ada"]));
        let lines: Vec<&str> = table.lines().collect();
        let holds = |line: &str, parts: &[&str]| parts.iter().all(|part| line.contains(part));
        let header = lines[0];
        assert!(
            header.starts_with("SESSION  MESSAGES  UPDATED")
                && holds(header, &["OWNER", "TAGS", "TITLE"]),
            "{name}: {table}"
        );
        let row = lines[1];
        assert!(
            row.starts_with("a ")
                && holds(row, &["ada", "project=kyoto"])
                && row.ends_with("Trip to Kyoto"),
            "{name}: {table}"
        );
        assert_eq!(lines.len(), 3, "{name}: {table}");

        let err = fails(at(&url).args(["sessions", "--tag", "project"]), 2);
        assert!(err.contains("KEY=VALUE"), "{err}");
        fails(at(&url).args(["tag", "missing", "--owner", "ada"]), 3);
        fails(at(&url).args(["tag", "a"]), 2);
    }
}

/// `sessions` follows the cursor of `find_sessions` to the last page (one page is 1000).
#[test]
fn sessions_lists_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("many.jsonl");
    let mut lines = vec![r#"{"agentmem_export":1}"#.to_string()];
    for i in 0..1005 {
        lines.push(format!(
            r#"{{"type":"session","id":"s{i:04}","metadata":{{}},"messages":1,"archives":0}}"#
        ));
        lines.push(format!(
            r#"{{"type":"message","id":"m{i}","role":"user","content":"hi","timestamp":"2026-04-20T14:31:00Z"}}"#
        ));
    }
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let url = format!("sqlite://{}", dir.path().join("many.db").display());
    ok(at(&url)
        .arg("import")
        .arg(&input)
        .args(["--format", "jsonl"]));
    let all = listed(&url, &[]);
    assert_eq!(all.len(), 1005);
    assert_eq!(all[1004], "s1004");
}

#[test]
fn an_expired_session_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let stores = stores(dir.path());
    for (name, url, _) in &stores {
        append_numbered(url, "brief", 2);
        append_numbered(url, "kept", 1);
        let out = ok(at(url).args(["expire", "brief", "--in", "1s"]));
        assert!(out.contains("brief expires at"), "{name}: {out}");
        let expiring = json(at(url).args(["expire", "kept", "--in", "7d"]));
        assert!(expiring["expires_at"].is_string(), "{name}: {expiring}");
        for bad in ["5x", "10", "1.5h", "-1s", ""] {
            let err = fails(at(url).args(["expire", "kept", &format!("--in={bad}")]), 2);
            assert!(err.contains("invalid duration"), "{name} {bad:?}: {err}");
        }
        fails(at(url).args(["expire", "missing", "--in", "2h"]), 3);
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    for (name, url, _) in &stores {
        let err = fails(at(url).args(["show", "brief"]), 3);
        assert!(err.contains("does not exist"), "{name}: {err}");
        assert_eq!(listed(url, &[]), ["kept"], "{name}");
        assert!(!ok(at(url).arg("sessions")).contains("brief"), "{name}");
    }
}

/// Every file under `root` whose bytes contain `needle`.
fn files_containing(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                seen += 1;
                let bytes = std::fs::read(&path).unwrap();
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(path);
                }
            }
        }
    }
    assert!(seen > 0, "no file under {}", root.display());
    found
}

/// Writes a private key file `name` in `dir`, its bytes derived from `byte`, and returns its path.
fn write_key(dir: &Path, name: &str, byte: u8) -> PathBuf {
    use std::fmt::Write as _;
    let path = dir.join(name);
    // 32 bytes in base64, without a dependency: a fixed pattern is as good a key for a test.
    let bytes: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(byte))
        .collect();
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                let index = ((n >> (18 - 6 * i)) & 63) as usize;
                text.push(char::from(ALPHABET[index]));
            } else {
                text.push('=');
            }
        }
    }
    let mut line = String::new();
    writeln!(line, "{text}").unwrap();
    std::fs::write(&path, line).unwrap();
    // Key files are private, as the CLI demands.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

#[test]
fn an_encryption_key_keeps_text_out_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", 1);
    let other = write_key(dir.path(), "other", 2);
    let secret = "canaryLockerCodeZebra4711";
    for (name, url, files) in stores(dir.path()) {
        let with = |path: &Path| at_with_key(&url, path);
        ok(with(&key).args(["append", "vault", "--role", "user", secret]));
        ok(with(&key).args(["append", "vault", "--role", "assistant", "noted"]));
        ok(with(&key).args(["tag", "vault", "--owner", "ada"]));
        ok(with(&key).args(["fork", "vault", "vault-copy"]));
        assert_eq!(
            files_containing(&files, secret),
            Vec::<PathBuf>::new(),
            "{name}: the text is in no file of the store"
        );

        let (_, read) = messages_with(with(&key), "vault");
        assert_eq!(read, [secret, "noted"], "{name}: the key reads it back");
        let (_, copy) = messages_with(with(&key), "vault-copy");
        assert_eq!(copy, [secret, "noted"], "{name}: the fork is readable");
        let shown = ok(agentmem()
            .env(
                "AGENTMEM_ENCRYPTION_KEY",
                std::fs::read_to_string(&key).unwrap().trim(),
            )
            .arg("--store")
            .arg(&url)
            .args(["show", "vault"]));
        assert!(
            shown.contains(secret),
            "{name}: the key from the environment: {shown}"
        );

        let err = fails(with(&other).args(["show", "vault"]), 2);
        assert!(err.contains("wrong encryption key"), "{name}: {err}");
        let err = fails(at(&url).args(["show", "vault"]), 2);
        assert!(err.contains("no encryption key"), "{name}: {err}");
        let err = fails(at(&url).args(["rewind", "vault", "--last", "1"]), 2);
        assert!(err.contains("no encryption key"), "{name}: {err}");
        let err = fails(
            at(&url).args(["append", "vault", "--role", "user", "plain"]),
            2,
        );
        assert!(err.contains("no encryption key"), "{name}: {err}");
        assert_eq!(
            listed(&url, &["--owner", "ada"]),
            ["vault", "vault-copy"],
            "{name}: labels are lookup keys, in the clear"
        );

        let removed = json(with(&key).args(["rewind", "vault", "--last", "1"]));
        assert_eq!(column(&removed["removed"], "content"), ["noted"], "{name}");

        let rekeyed = ok(with(&key).arg("rekey").arg("--new-key-file").arg(&other));
        assert!(
            rekeyed.contains("re-encrypted 2 sessions"),
            "{name}: {rekeyed}"
        );
        let (_, read) = messages_with(with(&other), "vault");
        assert_eq!(read, [secret], "{name}: the new key reads it");
        fails(with(&key).args(["show", "vault"]), 2);
        let err = fails(at(&url).args(["rekey", "--new-key-file"]).arg(&key), 2);
        assert!(err.contains("current key"), "{err}");
    }
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "not a key").unwrap();
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let err = fails(
        agentmem()
            .arg("--encryption-key-file")
            .arg(&bad)
            .args(["sessions"]),
        2,
    );
    assert!(err.contains("encryption key file"), "{err}");
    assert!(err.contains("base64"), "{err}");

    // A key file others may read is refused like an ssh key, for the current and a new key.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let (_, url, _) = stores(dir.path()).into_iter().next().unwrap();
    let opened = fails(at_with_key(&url, &key).arg("sessions"), 2);
    assert!(
        opened.contains(&format!("chmod 600 {}", key.display())),
        "{opened}"
    );
    let rekey = fails(
        at_with_key(&url, &other)
            .arg("rekey")
            .arg("--new-key-file")
            .arg(&key),
        2,
    );
    assert!(rekey.contains("chmod 600"), "{rekey}");
}

/// An encrypted store is marked as such: without a key, `append` (to a new session too),
/// `import` and a `migrate` into it are refused before anything is written, naming how to
/// give the key, and the store is left as it was.
#[test]
fn writes_without_a_key_into_an_encrypted_store_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", 1);
    let plain = file_url(&dir.path().join("plain"));
    ok(at(&plain).args(["append", "from-plain", "--role", "user", "hello"]));
    for (name, url, _) in stores(dir.path()) {
        ok(at_with_key(&url, &key).args(["append", "vault", "--role", "user", "secret"]));
        let refused = |mut cmd: Command, what: &str| {
            let err = fails(&mut cmd, 2);
            assert!(
                err.contains("encrypted") && err.contains("AGENTMEM_ENCRYPTION_KEY"),
                "{name}: {what}: {err}"
            );
        };
        let mut append = at(&url);
        append.args(["append", "new-session", "--role", "user", "plain"]);
        refused(append, "append to a new session");
        let mut import = at(&url);
        import
            .arg("import")
            .arg(fixture("export.jsonl"))
            .args(["--format", "jsonl"]);
        refused(import, "import");
        let mut migrate = agentmem();
        migrate.args(["migrate", "--from", &plain, "--to", &url]);
        refused(migrate, "migrate into it");
        assert_eq!(listed(&url, &[]), ["vault"], "{name}: nothing was written");
        let (_, read) = messages_with(at_with_key(&url, &key), "vault");
        assert_eq!(read, ["secret"], "{name}: the key still reads it");
    }
}

/// A store URL naming its key (`key_file=PATH`) encrypts as `--encryption-key-file` does, on
/// each kind of store: no text in its files, read back through the same URL or with the flag;
/// without a key it is refused; the URL's key and the flag together, or `rekey` on such a URL,
/// are refused as ambiguous.
#[test]
fn a_key_in_the_store_url_encrypts_like_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", 3);
    let secret = "canaryUrlKeyOtter9157";
    for (name, url, files) in stores(dir.path()) {
        let joint = if url.contains('?') { '&' } else { '?' };
        let keyed = format!("{url}{joint}key_file={}", key.display());
        ok(at(&keyed).args(["append", "vault", "--role", "user", secret]));
        assert_eq!(
            files_containing(&files, secret),
            Vec::<PathBuf>::new(),
            "{name}: the text is in no file of the store"
        );
        let (_, read) = messages(&keyed, "vault");
        assert_eq!(read, [secret], "{name}: the URL's key reads it");
        let (_, read) = messages_with(at_with_key(&url, &key), "vault");
        assert_eq!(read, [secret], "{name}: the same key by flag reads it");
        let err = fails(at(&url).args(["show", "vault"]), 2);
        assert!(err.contains("encrypted"), "{name}: {err}");
        let err = fails(at_with_key(&keyed, &key).args(["show", "vault"]), 2);
        assert!(err.contains("give one"), "{name}: {err}");
        let err = fails(at(&keyed).arg("rekey").arg("--new-key-file").arg(&key), 2);
        assert!(err.contains("rekey"), "{name}: {err}");
    }
}

/// `url` with the query option `option` added.
fn with_option(url: &str, option: &str) -> String {
    let joint = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joint}{option}")
}

/// Migrate and export from an encrypted store write ciphertext with the destination's key,
/// and plaintext only when asked (`--decrypt`): into a destination without a key a migration
/// (a dry run too) is refused naming the flags, and writes nothing; with `--to-key-file` or
/// the destination URL's `key_file` no file of the destination holds the text, a reader
/// without that key is refused and one with it reads; `export` is refused without
/// `--decrypt`.
#[test]
fn migrate_and_export_from_an_encrypted_store_write_plaintext_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", 5);
    let to_key = write_key(dir.path(), "to-key", 6);
    let secret = "canaryMigrateHeron4417";
    let source = with_option(
        &file_url(&dir.path().join("source")),
        &format!("key_file={}", key.display()),
    );
    ok(at(&source).args(["append", "vault", "--role", "user", secret]));
    for (name, url, files) in stores(&dir.path().join("dest")) {
        for dry_run in [false, true] {
            let mut migrate = agentmem();
            migrate.args(["migrate", "--from", &source, "--to", &url]);
            if dry_run {
                migrate.arg("--dry-run");
            }
            let err = fails(&mut migrate, 2);
            assert!(
                err.contains("--decrypt") && err.contains("--to-key-file"),
                "{name}: {err}"
            );
        }
        assert_eq!(
            listed(&url, &[]),
            Vec::<String>::new(),
            "{name}: nothing written"
        );

        let mut migrate = agentmem();
        migrate.args(["migrate", "--from", &source, "--to", &url, "--to-key-file"]);
        ok(migrate.arg(&to_key));
        assert_eq!(
            files_containing(&files, secret),
            Vec::<PathBuf>::new(),
            "{name}: ciphertext in the destination"
        );
        let err = fails(at(&url).args(["show", "vault"]), 2);
        assert!(err.contains("encrypted"), "{name}: {err}");
        let err = fails(at_with_key(&url, &key).args(["show", "vault"]), 2);
        assert!(err.contains("wrong encryption key"), "{name}: {err}");
        let (_, read) = messages_with(at_with_key(&url, &to_key), "vault");
        assert_eq!(read, [secret], "{name}: the destination's key reads it");
    }

    // The destination URL's key does the same.
    let keyed_dir = dir.path().join("keyed-dest");
    let keyed = with_option(
        &file_url(&keyed_dir),
        &format!("key_file={}", to_key.display()),
    );
    ok(agentmem().args(["migrate", "--from", &source, "--to", &keyed]));
    assert_eq!(files_containing(&keyed_dir, secret), Vec::<PathBuf>::new());
    assert_eq!(messages(&keyed, "vault").1, [secret]);
    let mut both = agentmem();
    both.args([
        "migrate",
        "--from",
        &source,
        "--to",
        &keyed,
        "--to-key-file",
    ]);
    let err = fails(both.arg(&to_key), 2);
    assert!(err.contains("give one"), "{err}");

    // Plaintext when asked.
    let plain_dir = dir.path().join("plain-dest");
    let plain = file_url(&plain_dir);
    ok(agentmem().args(["migrate", "--from", &source, "--to", &plain, "--decrypt"]));
    assert!(
        !files_containing(&plain_dir, secret).is_empty(),
        "plaintext, as asked"
    );
    assert_eq!(messages(&plain, "vault").1, [secret]);

    // An export is plaintext: refused without --decrypt, the text with it.
    let err = fails(
        at(&source).args(["export", "--all", "--format", "jsonl"]),
        2,
    );
    assert!(
        err.contains("--decrypt") && err.contains("encrypted"),
        "{err}"
    );
    let out = ok(at(&source).args(["export", "vault", "--format", "jsonl", "--decrypt"]));
    assert!(out.contains(secret), "{out}");
}

/// The ids and contents of a session's messages, as `cmd show --json` prints them.
fn messages_with(mut cmd: Command, session: &str) -> (Vec<String>, Vec<String>) {
    let shown: Value = json(cmd.args(["show", session]));
    let field = |name: &str| -> Vec<String> {
        rows(&shown["messages"])
            .iter()
            .map(|m| m[name].as_str().unwrap().to_string())
            .collect()
    };
    (field("id"), field("content"))
}
