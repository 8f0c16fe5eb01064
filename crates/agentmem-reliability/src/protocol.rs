//! The line protocol of the `agentmem-stress` helper on its standard output.
//!
//! The helper writes one line per event and flushes after each, so that a parent which
//! kills it with SIGKILL has read every acknowledgement the store gave before the kill:
//!
//! - `ready` once the store is open,
//! - `ack <message id>` for each message of an acknowledged append (after `append` returned),
//! - `compacted <archive id> <summary id or ->` after an acknowledged compaction,
//! - `done` when it finished its work.

/// One event reported by the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The store is open.
    Ready,
    /// An append holding this message was acknowledged.
    Ack(String),
    /// A compaction was acknowledged: the archive made and the replacement summary's id.
    Compacted {
        /// The new archive's id.
        archive: String,
        /// The id of the summary that replaced the messages, if any.
        summary: Option<String>,
    },
    /// The helper finished.
    Done,
}

impl Event {
    /// The event as one line (without the newline).
    pub fn to_line(&self) -> String {
        match self {
            Event::Ready => "ready".into(),
            Event::Ack(id) => format!("ack {id}"),
            Event::Compacted { archive, summary } => {
                format!("compacted {archive} {}", summary.as_deref().unwrap_or("-"))
            }
            Event::Done => "done".into(),
        }
    }

    /// Parses a line; `None` for a line that is not a whole event (a line cut by the kill).
    pub fn parse(line: &str) -> Option<Event> {
        let mut words = line.split(' ');
        match (words.next()?, words.next(), words.next(), words.next()) {
            ("ready", None, None, None) => Some(Event::Ready),
            ("done", None, None, None) => Some(Event::Done),
            ("ack", Some(id), None, None) if !id.is_empty() => Some(Event::Ack(id.into())),
            ("compacted", Some(archive), Some(summary), None) if !archive.is_empty() => {
                Some(Event::Compacted {
                    archive: archive.into(),
                    summary: (summary != "-").then(|| summary.to_string()),
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_cut_lines_are_refused() {
        for e in [
            Event::Ready,
            Event::Done,
            Event::Ack("w-000001".into()),
            Event::Compacted {
                archive: "history_x".into(),
                summary: Some("s-1".into()),
            },
            Event::Compacted {
                archive: "history_x".into(),
                summary: None,
            },
        ] {
            assert_eq!(Event::parse(&e.to_line()), Some(e));
        }
        assert_eq!(Event::parse("ack"), None);
        assert_eq!(Event::parse("compacted history_x"), None);
        assert_eq!(Event::parse("rea"), None);
    }
}
