//! The `MEMORY.md` text: rendering byte for byte and parsing back (see the module docs of
//! [`super`] for the format).

use agentmem_core::{Error, Message, Result, Role};
use chrono::{DateTime, Local, TimeZone, Utc};

use crate::time::{isoformat_in, parse_iso_time_in};

/// The separator between a block's role and its time: space, em dash (U+2014), space.
const DASH: &str = " \u{2014} ";

/// The header Swarms writes at the top of a new `MEMORY.md`, its time in the local zone
/// ([`render_header_in`] for another zone).
pub fn render_header(conversation: &str, created: DateTime<Utc>) -> String {
    render_header_in(conversation, created, &Local)
}

/// [`render_header`] with the time as the clock in `zone` shows it.
///
/// ```
/// use chrono::TimeZone;
/// let t = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 18, 33, 12).unwrap();
/// assert_eq!(
///     agentmem_formats::swarms::render_header_in("demo", t, &chrono::Utc),
///     "# Agent Memory\n\n**Conversation:** demo\n**Created:** 2026-04-20T18:33:12\n\n---\n\n## Interaction Log\n\n"
/// );
/// ```
pub fn render_header_in<Tz: TimeZone>(
    conversation: &str, created: DateTime<Utc>, zone: &Tz,
) -> String {
    format!(
        "# Agent Memory\n\n**Conversation:** {conversation}\n**Created:** {}\n\n---\n\n## Interaction Log\n\n",
        isoformat_in(created, zone)
    )
}

/// The block Swarms appends for one message, its time in the local zone
/// ([`render_block_in`] for another zone), or `None` when its content is blank (Swarms
/// writes nothing for those).
pub fn render_block(message: &Message) -> Option<String> {
    render_block_in(message, &Local)
}

/// [`render_block`] with the time as the clock in `zone` shows it.
///
/// ```
/// use agentmem_core::Message;
/// use agentmem_formats::swarms::render_block_in;
/// use chrono::{FixedOffset, TimeZone};
/// let t = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, 4).unwrap();
/// let berlin_summer = FixedOffset::east_opt(2 * 3600).unwrap();
/// let block = render_block_in(&Message::assistant("  Use BigQuery.\n").with_timestamp(t), &berlin_summer);
/// assert_eq!(block.as_deref(), Some("### Assistant — 2026-04-20T20:35:04\n\nUse BigQuery.\n\n---\n\n"));
/// assert!(render_block_in(&Message::user(" \n "), &berlin_summer).is_none());
/// ```
pub fn render_block_in<Tz: TimeZone>(message: &Message, zone: &Tz) -> Option<String> {
    let content = message.content.trim();
    if content.is_empty() {
        return None;
    }
    Some(format!(
        "### {}{DASH}{}\n\n{content}\n\n---\n\n",
        message.role.display_name(),
        isoformat_in(message.timestamp, zone)
    ))
}

/// A whole `MEMORY.md`: the header, then the block of every message with non-blank content,
/// times in the local zone ([`render_memory_md_in`] for another zone).
pub fn render_memory_md(
    conversation: &str, created: DateTime<Utc>, messages: &[Message],
) -> String {
    render_memory_md_in(conversation, created, messages, &Local)
}

/// [`render_memory_md`] with times as the clock in `zone` shows them.
pub fn render_memory_md_in<Tz: TimeZone>(
    conversation: &str, created: DateTime<Utc>, messages: &[Message], zone: &Tz,
) -> String {
    let mut text = render_header_in(conversation, created, zone);
    for block in messages.iter().filter_map(|m| render_block_in(m, zone)) {
        text.push_str(&block);
    }
    text
}

/// The file stem of the `n`-th archive (from 0) made within the second of `time`: Swarms'
/// `history_%Y-%m-%d_%H-%M-%S` for the first, then `_2`, `_3`, … (so two compactions in one
/// second do not overwrite each other, which Swarms does). Every backend names archives so
/// ([`agentmem_core::support::free_archive_id`]).
///
/// ```
/// use chrono::TimeZone;
/// let t = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 14, 30, 45).unwrap();
/// assert_eq!(agentmem_formats::swarms::archive_file_stem(t, 0), "history_2026-04-20_14-30-45");
/// assert_eq!(agentmem_formats::swarms::archive_file_stem(t, 1), "history_2026-04-20_14-30-45_2");
/// ```
pub fn archive_file_stem(time: DateTime<Utc>, n: u32) -> String {
    let base = agentmem_core::support::archive_id_base(time);
    if n == 0 {
        base
    } else {
        format!("{base}_{}", u64::from(n) + 1)
    }
}

/// A `MEMORY.md` read back by [`parse_memory_md`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMemory {
    /// The `**Conversation:**` name from the header.
    pub conversation: String,
    /// The `**Created:**` time from the header (a naive time is read in the parse's zone, see
    /// [`parse_iso_time_in`]).
    pub created: DateTime<Utc>,
    /// The message blocks, in file order.
    pub blocks: Vec<ParsedBlock>,
}

/// One message block of a parsed `MEMORY.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedBlock {
    /// The role from the heading (`User` reads as [`Role::User`]; other names are agents).
    pub role: Role,
    /// The time from the heading (a naive time is read in the parse's zone, see
    /// [`parse_iso_time_in`]).
    pub timestamp: DateTime<Utc>,
    /// The content as written (stripped by the writer).
    pub content: String,
    /// The 1-based line number of the block's heading.
    pub line: usize,
}

impl ParsedBlock {
    /// The block as a new message (a fresh id; no tool pairing or metadata, which
    /// `MEMORY.md` does not keep).
    pub fn to_message(&self) -> Message {
        Message::new(self.role.clone(), self.content.clone()).with_timestamp(self.timestamp)
    }
}

fn corrupt_at(line: usize, why: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("MEMORY.md line {line}: {why}"))
}

/// The role and time of a block heading `### {role} — {iso}`, or `None` if `line` is not one.
fn parse_heading<'a, Tz: TimeZone>(line: &'a str, zone: &Tz) -> Option<(&'a str, DateTime<Utc>)> {
    let rest = line.strip_prefix("### ")?;
    // The role may itself contain ` — `, the time never does: split at the last one.
    let (role, time) = rest.rsplit_once(DASH)?;
    Some((role, parse_iso_time_in(time, zone)?))
}

fn expect_line(lines: &[&str], index: usize, expected: &str) -> Result<()> {
    match lines.get(index) {
        Some(line) if *line == expected => Ok(()),
        Some(line) => Err(corrupt_at(
            index + 1,
            format!("expected {expected:?}, found {:?}", shorten(line)),
        )),
        None => Err(corrupt_at(
            index + 1,
            format!("expected {expected:?}, found the end of the file"),
        )),
    }
}

fn shorten(line: &str) -> String {
    const SHOWN: usize = 60;
    if line.chars().count() <= SHOWN {
        line.to_string()
    } else {
        format!("{}…", line.chars().take(SHOWN).collect::<String>())
    }
}

/// Parses a `MEMORY.md` written by Swarms (or by agentmem), for import; naive times are read
/// in the local zone, as Swarms writes them ([`parse_memory_md_in`] for another zone).
///
/// Malformed input, including a file cut off in the middle of a block, is an
/// [`ErrorKind::CorruptData`](agentmem_core::ErrorKind::CorruptData) error naming the line; this never
/// panics. A block ends at the first `\n\n---\n\n` followed by the end of the file or by another
/// block heading; see the [module docs](super) for why that reading can split a message in two.
pub fn parse_memory_md(text: &str) -> Result<ParsedMemory> {
    parse_memory_md_in(text, &Local)
}

/// [`parse_memory_md`], reading naive times as the clock in `zone` (the earlier instant of a
/// repeated local time, see [`parse_iso_time_in`]), so it reads back what
/// [`render_memory_md_in`] wrote in the same zone.
pub fn parse_memory_md_in<Tz: TimeZone>(text: &str, zone: &Tz) -> Result<ParsedMemory> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    // Every line, the last included, ends with a newline; `split` leaves an empty last piece.
    match lines.pop() {
        Some("") => {}
        _ => {
            return Err(corrupt_at(
                lines.len() + 1,
                "the file does not end with a newline (it was cut off)",
            ))
        }
    }
    let n = lines.len();

    expect_line(&lines, 0, "# Agent Memory")?;
    expect_line(&lines, 1, "")?;
    let conversation = lines
        .get(2)
        .and_then(|l| {
            l.strip_prefix("**Conversation:** ")
                .or_else(|| l.strip_prefix("**Conversation:**"))
        })
        .ok_or_else(|| corrupt_at(3, "expected `**Conversation:** <name>`"))?
        .to_string();
    let created = lines
        .get(3)
        .and_then(|l| l.strip_prefix("**Created:**"))
        .and_then(|t| parse_iso_time_in(t, zone))
        .ok_or_else(|| corrupt_at(4, "expected `**Created:** <ISO time>`"))?;
    expect_line(&lines, 4, "")?;
    expect_line(&lines, 5, "---")?;
    expect_line(&lines, 6, "")?;
    expect_line(&lines, 7, "## Interaction Log")?;
    expect_line(&lines, 8, "")?;

    let is_end_of_block = |j: usize| -> bool {
        lines.get(j) == Some(&"")
            && lines.get(j + 1) == Some(&"---")
            && lines.get(j + 2) == Some(&"")
            && (j + 3 == n
                || (lines
                    .get(j + 3)
                    .is_some_and(|l| parse_heading(l, zone).is_some())
                    && lines.get(j + 4) == Some(&"")))
    };

    let mut blocks = Vec::new();
    let mut i = 9;
    while i < n {
        let (role, timestamp) = parse_heading(lines[i], zone).ok_or_else(|| {
            corrupt_at(
                i + 1,
                format!(
                    "expected a block heading `### <role> — <ISO time>`, found {:?}",
                    shorten(lines[i])
                ),
            )
        })?;
        let role = Role::parse(role).map_err(|e| corrupt_at(i + 1, e.message().to_string()))?;
        expect_line(&lines, i + 1, "")?;
        let start = i + 2;
        let end = (start..n).find(|&j| is_end_of_block(j)).ok_or_else(|| {
            corrupt_at(
                i + 1,
                "this block has no closing `---` (the file was cut off)",
            )
        })?;
        blocks.push(ParsedBlock {
            role,
            timestamp,
            content: lines[start..end].join("\n"),
            line: i + 1,
        });
        i = end + 3;
    }
    Ok(ParsedMemory {
        conversation,
        created,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem_core::ErrorKind;
    use chrono::FixedOffset;

    // The byte-exact cases pin the zone to UTC, so they do not depend on the machine's zone;
    // these shadow the local-zone functions of the same names.
    fn render_header(conversation: &str, created: DateTime<Utc>) -> String {
        render_header_in(conversation, created, &Utc)
    }
    fn render_block(message: &Message) -> Option<String> {
        render_block_in(message, &Utc)
    }
    fn render_memory_md(
        conversation: &str, created: DateTime<Utc>, messages: &[Message],
    ) -> String {
        render_memory_md_in(conversation, created, messages, &Utc)
    }
    fn parse_memory_md(text: &str) -> Result<ParsedMemory> {
        parse_memory_md_in(text, &Utc)
    }

    fn t(h: u32, m: u32, s: u32, micros: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 4, 20, h, m, s).unwrap() + chrono::Duration::microseconds(micros)
    }

    #[test]
    fn header_bytes_are_exact() {
        assert_eq!(
            render_header("ResearchAgent_id_1_conversation", t(18, 33, 12, 0)).as_bytes(),
            b"# Agent Memory\n\n**Conversation:** ResearchAgent_id_1_conversation\n**Created:** 2026-04-20T18:33:12\n\n---\n\n## Interaction Log\n\n"
        );
        assert_eq!(
            render_header("c", t(0, 0, 0, 7)).as_bytes(),
            b"# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-04-20T00:00:00.000007\n\n---\n\n## Interaction Log\n\n"
        );
    }

    #[test]
    fn block_bytes_are_exact() {
        let m = Message::user("\n  Research cloud databases.  \n")
            .with_timestamp(t(18, 35, 4, 123_456));
        assert_eq!(
            render_block(&m).unwrap().as_bytes(),
            "### User \u{2014} 2026-04-20T18:35:04.123456\n\nResearch cloud databases.\n\n---\n\n"
                .as_bytes()
        );
        let agent = Message::new(Role::Agent("ResearchAgent".into()), "BigQuery")
            .with_timestamp(t(18, 35, 21, 0));
        assert_eq!(
            render_block(&agent).unwrap().as_bytes(),
            b"### ResearchAgent \xe2\x80\x94 2026-04-20T18:35:21\n\nBigQuery\n\n---\n\n"
        );
        for (role, shown) in [
            (Role::System, "System"),
            (Role::Assistant, "Assistant"),
            (Role::Tool, "Tool"),
        ] {
            let block =
                render_block(&Message::new(role, "x").with_timestamp(t(1, 2, 3, 0))).unwrap();
            assert_eq!(
                block,
                format!("### {shown} — 2026-04-20T01:02:03\n\nx\n\n---\n\n")
            );
        }
        assert_eq!(render_block(&Message::user("")), None);
        assert_eq!(render_block(&Message::user(" \t\n")), None);
    }

    #[test]
    fn whole_file_bytes_are_exact() {
        let msgs = [
            Message::user("Hi").with_timestamp(t(9, 0, 0, 0)),
            Message::assistant("   ").with_timestamp(t(9, 0, 1, 0)),
            Message::assistant("Hello!").with_timestamp(t(9, 0, 2, 500_000)),
        ];
        assert_eq!(
            render_memory_md("demo", t(8, 59, 59, 0), &msgs),
            "# Agent Memory\n\n**Conversation:** demo\n**Created:** 2026-04-20T08:59:59\n\n---\n\n## Interaction Log\n\n\
             ### User — 2026-04-20T09:00:00\n\nHi\n\n---\n\n\
             ### Assistant — 2026-04-20T09:00:02.500000\n\nHello!\n\n---\n\n"
        );
    }

    #[test]
    fn archive_stems() {
        assert_eq!(
            archive_file_stem(t(14, 30, 45, 999_999), 0),
            "history_2026-04-20_14-30-45"
        );
        assert_eq!(
            archive_file_stem(t(14, 30, 45, 0), 1),
            "history_2026-04-20_14-30-45_2"
        );
    }

    #[test]
    fn render_then_parse_round_trips() {
        let msgs = vec![
            Message::system("[Compressed Memory Summary]\nThe following…\n\nsummary")
                .with_timestamp(t(1, 0, 0, 0)),
            Message::user("ünïcødé ✓ 東京\n\nmulti\nline").with_timestamp(t(1, 0, 1, 1)),
            Message::new(Role::Agent("Research — Agent".into()), "a --- b\n---\nc")
                .with_timestamp(t(1, 0, 2, 0)),
            Message::new(Role::Tool, "### not a heading\n\n---").with_timestamp(t(1, 0, 3, 0)),
            Message::assistant("last").with_timestamp(t(1, 0, 4, 0)),
        ];
        let text = render_memory_md("conv name", t(0, 0, 0, 0), &msgs);
        let parsed = parse_memory_md(&text).unwrap();
        assert_eq!(parsed.conversation, "conv name");
        assert_eq!(parsed.created, t(0, 0, 0, 0));
        assert_eq!(parsed.blocks.len(), msgs.len());
        for (b, m) in parsed.blocks.iter().zip(&msgs) {
            assert_eq!(b.role, m.role);
            assert_eq!(b.timestamp, m.timestamp);
            assert_eq!(b.content, m.content);
        }
        assert_eq!(parsed.blocks[1].line, 19);
        // Re-rendering the parsed blocks gives the same bytes.
        let again: Vec<Message> = parsed.blocks.iter().map(ParsedBlock::to_message).collect();
        assert_eq!(
            render_memory_md(&parsed.conversation, parsed.created, &again),
            text
        );
        // A header alone is an empty log.
        assert!(parse_memory_md(&render_header("x", t(0, 0, 0, 0)))
            .unwrap()
            .blocks
            .is_empty());
    }

    /// In a zone east of UTC, headings show the zone's clock, and parsing in that zone gives
    /// back the instants and the bytes.
    #[test]
    fn local_times_render_and_parse_back_in_their_zone() {
        let kolkata = FixedOffset::east_opt(5 * 3600 + 30 * 60).unwrap();
        let msgs = [
            Message::user("late").with_timestamp(t(20, 0, 0, 0)),
            Message::assistant("next day there").with_timestamp(t(23, 59, 59, 123_456)),
        ];
        let text = render_memory_md_in("zoned", t(19, 0, 0, 0), &msgs, &kolkata);
        assert_eq!(
            text,
            "# Agent Memory\n\n**Conversation:** zoned\n**Created:** 2026-04-21T00:30:00\n\n---\n\n## Interaction Log\n\n\
             ### User — 2026-04-21T01:30:00\n\nlate\n\n---\n\n\
             ### Assistant — 2026-04-21T05:29:59.123456\n\nnext day there\n\n---\n\n"
        );
        let parsed = parse_memory_md_in(&text, &kolkata).unwrap();
        assert_eq!(parsed.created, t(19, 0, 0, 0));
        let again: Vec<Message> = parsed.blocks.iter().map(ParsedBlock::to_message).collect();
        for (m, back) in msgs.iter().zip(&again) {
            assert_eq!(m.timestamp, back.timestamp);
        }
        assert_eq!(
            render_memory_md_in("zoned", parsed.created, &again, &kolkata),
            text
        );
        // Read in another zone, the same naive text names other instants.
        let utc = parse_memory_md(&text).unwrap();
        assert_eq!(utc.created, t(19, 0, 0, 0) + chrono::Duration::minutes(330));
    }

    #[test]
    fn documented_ambiguity_splits_a_block() {
        let tricky = "before\n\n---\n\n### User — 2026-04-20T00:00:00\n\nafter";
        let text = render_memory_md(
            "c",
            t(0, 0, 0, 0),
            &[Message::assistant(tricky).with_timestamp(t(0, 0, 1, 0))],
        );
        let parsed = parse_memory_md(&text).unwrap();
        assert_eq!(
            parsed.blocks.len(),
            2,
            "plain MEMORY.md cannot tell this content apart"
        );
        assert_eq!(parsed.blocks[0].content, "before");
    }

    #[test]
    fn parses_swarms_local_times_and_offsets() {
        let text = "# Agent Memory\n\n**Conversation:** a_id_x_conversation\n**Created:** 2026-04-20T18:33:12.5\n\n---\n\n## Interaction Log\n\n\
                    ### User — 2026-04-20T18:35:04+02:00\n\nQ\n\n---\n\n### ResearchAgent — 2026-04-20T18:35:21Z\n\nA\n\n---\n\n";
        let parsed = parse_memory_md(text).unwrap();
        assert_eq!(parsed.created, t(18, 33, 12, 500_000));
        assert_eq!(parsed.blocks[0].timestamp, t(16, 35, 4, 0));
        assert_eq!(parsed.blocks[1].role, Role::Agent("ResearchAgent".into()));
        assert_eq!(parsed.blocks[1].timestamp, t(18, 35, 21, 0));
    }

    #[test]
    fn malformed_inputs_are_corrupt_data_naming_the_line() {
        let good = render_memory_md(
            "c",
            t(0, 0, 0, 0),
            &[
                Message::user("one").with_timestamp(t(0, 0, 1, 0)),
                Message::user("two").with_timestamp(t(0, 0, 2, 0)),
            ],
        );
        // Block 1's heading is line 10, block 2's line 16; the file has 21 lines.
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "line 1"),
            ("hello\n".into(), "line 1"),
            (
                good.replace("**Created:** 2026-04-20T00:00:00", "**Created:** soon"),
                "line 4",
            ),
            (good.replace("## Interaction Log", "## Log"), "line 8"),
            (
                good.replace(
                    "### User — 2026-04-20T00:00:01",
                    "### User - 2026-04-20T00:00:01",
                ),
                "line 10",
            ),
            (
                good.replace("### User — 2026-04-20T00:00:01", "### User — later"),
                "line 10",
            ),
            (
                good.replace(
                    "### User — 2026-04-20T00:00:01\n\n",
                    "### User — 2026-04-20T00:00:01\n",
                ),
                "line 11",
            ),
            (
                good.replace(
                    "### User — 2026-04-20T00:00:01",
                    "### bad\u{7}role — 2026-04-20T00:00:01",
                ),
                "line 10",
            ),
            (good[..good.len() - 3].to_string(), "line 20"),
            (good[..good.len() - 1].to_string(), "line 16"),
            (format!("{good}garbage\n"), "line 16"),
        ];
        for (text, line) in cases {
            let err = parse_memory_md(&text).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptData, "{text:?}");
            assert!(err.to_string().contains(line), "{line}: {err}");
        }
        // Arbitrary prefixes of a good file never panic.
        for cut in 0..good.len() {
            if good.is_char_boundary(cut) {
                let _ = parse_memory_md(&good[..cut]);
            }
        }
    }
}
