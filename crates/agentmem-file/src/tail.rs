//! Reading the last messages of `session.jsonl` backwards from its end, for
//! `load(session, Some(n))`: only the last lines that hold the window are read and parsed,
//! instead of the whole log.
//!
//! Why this is safe for this log format (see `log.rs`): line 1 is the header and every further
//! line is self-contained (one message, or one batch of messages appended together). No line
//! changes the meaning of an earlier one: compaction and `save_session` replace the whole file
//! (a new inode, which makes the next `sync` read it whole), so the last `n` messages are the
//! messages of the last lines, whatever came before.
//!
//! The caller reads only the part of the log that its `sync` has already checked (up to
//! `OpenSession::log_len`, which always ends a line): a torn tail has been found, reported and
//! truncated by then, exactly as for a whole load. A line in the window that does not parse
//! is `CorruptData` naming the file and line, as the whole-log reader reports it. Whatever does
//! not add up (no newline at the end, the header reached before `n` messages) makes the reader
//! give up with `None`, and the caller takes the whole-log path.
//!
//! One difference remains: lines before the window are not parsed again. They were all parsed
//! when this process read them (whole on first access, appended bytes since), so only an edit
//! in place that keeps the file's length and identity goes unnoticed by a limited load; the
//! next whole load still reports it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use agentmem_core::{Error, Message, Result};

use crate::fsutil::{corrupt_line, io_error};
use crate::log::parse_entry;

/// Bytes read per step from the end of the log. A line longer than this is read in steps that
/// double, so a very long line costs a linear number of copies.
pub(crate) const BLOCK: usize = 64 * 1024;

/// The last `limit` messages among the first `end` bytes of the log `file` (at `path`), in
/// order, before any orphaned tool results are trimmed; `lines` is the number of whole lines in
/// those bytes, the header included (for error messages).
///
/// `None` when the bytes do not hold `limit` messages after the header or do not end with a
/// newline: the caller then reads the log whole.
pub(crate) fn last_messages(
    file: &File, path: &Path, end: u64, lines: u64, limit: usize,
) -> Result<Option<Vec<Message>>> {
    last_messages_in_blocks(file, path, end, lines, limit, BLOCK)
}

/// [`last_messages`] with the step size as a parameter (small steps in tests).
pub(crate) fn last_messages_in_blocks(
    file: &File, path: &Path, end: u64, lines: u64, limit: usize, block: usize,
) -> Result<Option<Vec<Message>>> {
    if limit == 0 {
        return Ok(Some(Vec::new()));
    }
    let block = block.max(1);
    // `buf` holds the bytes [pos, pos + buf.len()) of the file: everything before the lines
    // already parsed that has been read. Its last byte is the newline that ends the next line
    // to parse; `buf[clean..buf.len() - 1]` is known to hold no newline.
    let mut pos = end;
    let mut buf: Vec<u8> = Vec::new();
    let mut clean = 0usize;
    // The number of the line that ends `buf`.
    let mut line = lines;
    let mut batches: Vec<Vec<Message>> = Vec::new();
    let mut found = 0usize;
    while found < limit {
        let start_of_line = match buf.len() {
            0 => None,
            len => buf[..clean.min(len - 1)]
                .iter()
                .rposition(|&b| b == b'\n')
                .map(|nl| nl + 1),
        };
        match start_of_line {
            Some(start) => {
                let text = &buf[start..buf.len() - 1];
                let batch = parse_entry(text).map_err(|why| corrupt_line(path, line, why))?;
                found += batch.len();
                batches.push(batch);
                buf.truncate(start);
                clean = start - 1;
                line = line.saturating_sub(1);
            }
            // What is left is line 1, the header: fewer messages than asked for.
            None if pos == 0 => return Ok(None),
            None => {
                let keep = buf.len();
                let step = block.max(keep);
                let from = pos.saturating_sub(step as u64);
                let read = usize::try_from(pos - from).map_err(|_| {
                    Error::backend(format!("{} is too large to read", path.display()))
                })?;
                let mut next = vec![0u8; read + keep];
                file.read_exact_at(&mut next[..read], from)
                    .map_err(|e| io_error(path, "cannot read", e))?;
                next[read..].copy_from_slice(&buf);
                if keep == 0 && next.last() != Some(&b'\n') {
                    // Not the end of a whole line: not the state the caller promised.
                    return Ok(None);
                }
                buf = next;
                clean = read;
                pos = from;
            }
        }
    }
    let mut window = Vec::with_capacity(found);
    for batch in batches.into_iter().rev() {
        window.extend(batch);
    }
    window.drain(..found - limit);
    Ok(Some(window))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use agentmem_core::history::{tail, trim_orphans};
    use agentmem_core::{ErrorKind, SessionId};

    use super::*;
    use crate::log::{encode_append, encode_log, SessionHeader};

    /// A log file made of a header and the given appends (each one line), and all its
    /// messages in order.
    fn log_file(appends: &[Vec<Message>]) -> (tempfile::NamedTempFile, Vec<Message>, u64) {
        let id = SessionId::new("tail").unwrap();
        let header = SessionHeader::new(&id, agentmem_core::now());
        let mut bytes = encode_log(&header, &[]).unwrap();
        let mut all = Vec::new();
        for batch in appends {
            bytes.extend(encode_append(batch).unwrap());
            all.extend(batch.iter().cloned());
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        (file, all, 1 + appends.len() as u64)
    }

    /// `n` appends of one message each: `m0`, `m1`, …
    fn single_appends(n: usize) -> Vec<Vec<Message>> {
        (0..n)
            .map(|i| vec![Message::user(format!("m{i}"))])
            .collect()
    }

    /// Checks the backwards reader against `history::tail` of the whole log for every limit
    /// and several block sizes.
    fn check_all(appends: &[Vec<Message>]) {
        let (file, all, lines) = log_file(appends);
        let len = file.as_file().metadata().unwrap().len();
        for block in [1, 2, 3, 7, 16, 61, 256, 4096, BLOCK] {
            for limit in 0..=all.len() + 2 {
                let got =
                    last_messages_in_blocks(file.as_file(), file.path(), len, lines, limit, block)
                        .unwrap();
                let what = format!("limit {limit} block {block}");
                if limit == 0 {
                    assert_eq!(got, Some(Vec::new()), "{what}");
                } else if limit < all.len() {
                    // The caller's case: a window that cuts the session.
                    let window = got.unwrap_or_else(|| panic!("{what}"));
                    assert_eq!(window.len(), limit, "{what}");
                    assert_eq!(trim_orphans(window, false), tail(&all, limit), "{what}");
                } else if limit == all.len() {
                    // All the messages are found before the header is reached.
                    assert_eq!(got.as_deref(), Some(&all[..]), "{what}");
                } else {
                    // More than the session holds: the reader reaches the header and gives up.
                    assert!(got.is_none(), "{what}");
                }
            }
        }
    }

    #[test]
    fn single_messages_and_batches() {
        let appends: Vec<Vec<Message>> = (0..12)
            .map(|i| {
                (0..(i % 4) + 1)
                    .map(|j| Message::user(format!("line {i} message {j}")))
                    .collect()
            })
            .collect();
        check_all(&appends);
    }

    #[test]
    fn tool_calls_at_the_window_edge() {
        let appends = vec![
            vec![Message::user("weather?")],
            vec![Message::tool_call("c1", "weather", "{}")],
            vec![Message::tool_result("c1", "weather", "sunny")],
            vec![
                Message::tool_call("c2", "time", "{}"),
                Message::tool_result("c2", "time", "noon"),
                Message::tool_result("c2", "time", "still noon"),
            ],
            vec![Message::tool_result("c2", "time", "late")],
            vec![Message::assistant("done")],
        ];
        check_all(&appends);
    }

    #[test]
    fn multibyte_text_and_long_lines() {
        let long = "é漢🙂 ".repeat(3_000);
        let appends = vec![
            vec![Message::user("ünïcödé 漢字 🙂🙂")],
            vec![Message::assistant(long.clone())],
            vec![
                Message::user("x"),
                Message::assistant(format!("{long}\nend")),
            ],
            vec![Message::user("🙂")],
        ];
        check_all(&appends);
        let (file, all, lines) = log_file(&appends);
        let len = file.as_file().metadata().unwrap().len();
        assert!(len as usize > 2 * 4096);
        let got = last_messages(file.as_file(), file.path(), len, lines, 3).unwrap();
        assert_eq!(got.unwrap(), all[all.len() - 3..]);
    }

    #[test]
    fn empty_session_and_header_only() {
        check_all(&[]);
        let (file, _, lines) = log_file(&[]);
        let len = file.as_file().metadata().unwrap().len();
        assert!(last_messages(file.as_file(), file.path(), len, lines, 1)
            .unwrap()
            .is_none());
        assert_eq!(
            last_messages(file.as_file(), file.path(), len, lines, 0).unwrap(),
            Some(Vec::new())
        );
    }

    #[test]
    fn a_bad_line_in_the_window_is_corrupt_data_with_its_number() {
        let (file, _, lines) = log_file(&single_appends(5));
        let mut bytes = std::fs::read(file.path()).unwrap();
        // Damage line 5 (the fourth message), keeping the length.
        let starts: Vec<usize> = std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, &b)| b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        bytes[starts[4]] = b'#';
        std::fs::write(file.path(), &bytes).unwrap();
        let f = File::open(file.path()).unwrap();
        let len = bytes.len() as u64;
        for block in [3, BLOCK] {
            // The last message alone does not reach the bad line.
            let ok = last_messages_in_blocks(&f, file.path(), len, lines, 1, block).unwrap();
            assert_eq!(ok.unwrap()[0].content, "m4");
            let e = last_messages_in_blocks(&f, file.path(), len, lines, 2, block).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::CorruptData);
            assert!(e.to_string().contains("line 5"), "{e}");
        }
    }

    #[test]
    fn an_end_inside_a_line_gives_up() {
        let (file, _, lines) = log_file(&single_appends(3));
        let len = file.as_file().metadata().unwrap().len();
        for block in [2, BLOCK] {
            let got =
                last_messages_in_blocks(file.as_file(), file.path(), len - 1, lines, 1, block)
                    .unwrap();
            assert!(got.is_none());
        }
        // Past the end of the file: an I/O error, not a panic.
        assert!(last_messages(file.as_file(), file.path(), len + 10, lines, 1).is_err());
    }
}
