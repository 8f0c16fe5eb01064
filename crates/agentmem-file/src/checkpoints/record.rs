//! The lines of a thread's `checkpoints.jsonl`: a header naming the thread, then one record a
//! write. Each write is one line, so a crash that tears the line takes the whole write with it
//! (a checkpoint never without its blobs, a batch of pending writes never in part).

use agentmem_core::checkpoint::ThreadCheckpoints;
use agentmem_core::{ChannelBlob, Checkpoint, CheckpointKey, PendingWrite, Result, ThreadId};
use serde::{Deserialize, Serialize};

use crate::log::{push_line, HeadedLog, HeadedRecord};

/// A thread log: the header this build writes (the newest version it reads), and what its
/// messages call it.
pub(crate) const THREAD_KIND: HeadedLog = HeadedLog {
    kind: "checkpoint",
    name: "checkpoint thread log",
    format: "agentmem.checkpoints",
    version: 1,
};

/// One line of a thread log, as read.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Record {
    /// The first line: the format and the exact thread id.
    Header {
        format: String,
        version: u32,
        thread: ThreadId,
    },
    /// `put_checkpoint`: the checkpoint and its blobs.
    Put {
        checkpoint: Box<Checkpoint>,
        #[serde(default)]
        blobs: Vec<ChannelBlob>,
    },
    /// `put_writes`: pending writes made after checkpoint `at`.
    Writes {
        at: CheckpointKey,
        writes: Vec<PendingWrite>,
    },
    /// The whole thread as it is: what a rewrite (prune, deleted runs, copy, repair) writes
    /// after the header. It replaces everything before it. Its shape is core's
    /// `ThreadCheckpoints` as serde writes it: by namespace, the checkpoints by id, the
    /// pending writes by checkpoint id (apart: some may have no checkpoint yet) and the blobs.
    State { state: Box<ThreadCheckpoints> },
}

/// One line of a thread log, as written (borrowing what it writes).
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum RecordRef<'a> {
    /// See [`Record::Header`].
    Header {
        format: &'a str,
        version: u32,
        thread: &'a ThreadId,
    },
    /// See [`Record::Put`].
    Put {
        checkpoint: &'a Checkpoint,
        blobs: &'a [ChannelBlob],
    },
    /// See [`Record::Writes`].
    Writes {
        at: &'a CheckpointKey,
        writes: &'a [PendingWrite],
    },
    /// See [`Record::State`].
    State { state: &'a ThreadCheckpoints },
}

impl RecordRef<'_> {
    /// The record as one line, newline included.
    pub(crate) fn line(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        push_line(&mut out, self)?;
        Ok(out)
    }
}

/// A whole log: the header of `thread`, then `state` (nothing more when it holds nothing:
/// pending writes without their checkpoint are something).
pub(crate) fn encode_log(thread: &ThreadId, state: &ThreadCheckpoints) -> Result<Vec<u8>> {
    let mut out = header_line(thread)?;
    if !state.holds_nothing() {
        push_line(&mut out, &RecordRef::State { state })?;
    }
    Ok(out)
}

/// The header line of `thread`'s log.
pub(crate) fn header_line(thread: &ThreadId) -> Result<Vec<u8>> {
    RecordRef::Header {
        format: THREAD_KIND.format,
        version: THREAD_KIND.version,
        thread,
    }
    .line()
}

impl HeadedRecord for Record {
    fn header(&self) -> Option<(&str, u32)> {
        match self {
            Record::Header {
                format, version, ..
            } => Some((format, *version)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::TypedBytes;
    use std::path::Path;

    fn parse_record(line: u64, bytes: &[u8]) -> std::result::Result<Record, String> {
        THREAD_KIND.parse(line, bytes)
    }

    fn key() -> CheckpointKey {
        CheckpointKey {
            thread: "a/b: c".parse().expect("thread"),
            ns: "node:1|x".parse().expect("ns"),
            id: "0001".parse().expect("id"),
        }
    }

    #[test]
    fn records_round_trip_as_one_line_each() {
        let mut checkpoint = Checkpoint::new(key(), TypedBytes::new("msgpack", vec![0, 10, 255]));
        checkpoint.metadata.insert("s".into(), "a\u{0}\nb".into());
        let blobs = vec![ChannelBlob {
            channel: "messages".into(),
            version: "1".into(),
            value: None,
        }];
        let line = RecordRef::Put {
            checkpoint: &checkpoint,
            blobs: &blobs,
        }
        .line()
        .expect("encode");
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        match parse_record(2, &line[..line.len() - 1]).expect("parse") {
            Record::Put {
                checkpoint: read,
                blobs: read_blobs,
            } => assert_eq!((*read, read_blobs), (checkpoint, blobs)),
            other => panic!("not a put: {other:?}"),
        }
    }

    #[test]
    fn headers_only_on_line_one() {
        let header = header_line(&key().thread).expect("header");
        let header = &header[..header.len() - 1];
        assert!(matches!(
            parse_record(1, header),
            Ok(Record::Header { thread, .. }) if thread == key().thread
        ));
        assert!(parse_record(2, header).is_err());
        let writes = RecordRef::Writes {
            at: &key(),
            writes: &[],
        }
        .line()
        .expect("encode");
        assert!(parse_record(1, &writes[..writes.len() - 1]).is_err());
        let newer = br#"{"op":"header","format":"agentmem.checkpoints","version":99,"thread":"t"}"#;
        assert!(parse_record(1, newer).is_err());
        let e = THREAD_KIND
            .refuse_newer(newer, Path::new("x"))
            .expect_err("newer");
        assert_eq!(e.kind(), agentmem_core::ErrorKind::Unsupported);
    }
}
