//! Strategies shared by the fuzz tests.
#![allow(
    dead_code,
    reason = "shared by several test binaries, each using part of it"
)]

use proptest::prelude::*;

/// The proptest configuration: 256 cases, or `PROPTEST_CASES`.
pub fn config() -> ProptestConfig {
    // PROPTEST_CASES overrides this for long runs (proptest reads it for `default()` only,
    // so it is honoured explicitly here).
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Strings biased towards what breaks parsers: separators, dots, NUL, controls, glob and
/// Markdown characters, non-ASCII, long runs.
pub fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9_ ./\\\\:*?\\[\\]$@+#%&=\\-\u{0}\n\r\t—é日]{0,40}",
        proptest::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        (1usize..300).prop_map(|n| "a".repeat(n)),
    ]
}

/// A structured mutation of a text: cut it, drop a line, duplicate a line, insert a line.
#[derive(Debug, Clone)]
pub enum Mutation {
    Truncate(usize),
    DropLine(usize),
    DuplicateLine(usize),
    InsertLine(usize, String),
    ReplaceByte(usize, u8),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), nasty_string()).prop_map(|(i, s)| Mutation::InsertLine(i, s)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::ReplaceByte(i, b)),
    ]
}

pub fn mutate(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    match m {
        Mutation::Truncate(at) => {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return text[..at].to_string();
        }
        Mutation::DropLine(i) => {
            lines.remove(i % lines.len());
        }
        Mutation::DuplicateLine(i) => {
            let l = lines[i % lines.len()].clone();
            lines.insert(i % lines.len(), l);
        }
        Mutation::InsertLine(i, s) => lines.insert(i % (lines.len() + 1), s.clone()),
        Mutation::ReplaceByte(i, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let n = bytes.len();
                bytes[i % n] = *b;
            }
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    lines.join("\n")
}
