//! `MEMORY.md` times in a zone with summer time, through the `_in` functions (the local-zone
//! functions are these with `chrono::Local`; the conversation crate's `workspace_env` test
//! runs them under `TZ`). No dependence on the machine's zone.
use agentmem_core::Message;
use agentmem_formats::swarms::{parse_memory_md_in, render_block_in, render_memory_md_in};
use chrono::{
    DateTime, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc,
};

/// Central European time in 2026 (and only then): UTC+1, UTC+2 from 2026-03-29 01:00 UTC
/// to 2026-10-25 01:00 UTC.
#[derive(Debug, Clone, Copy)]
struct Cet2026;

fn utc(mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, mo, d, h, mi, s).unwrap()
}

fn hours(h: i32) -> FixedOffset {
    FixedOffset::east_opt(h * 3600).unwrap()
}

impl TimeZone for Cet2026 {
    type Offset = FixedOffset;

    fn from_offset(_: &FixedOffset) -> Self {
        Cet2026
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> LocalResult<FixedOffset> {
        self.offset_from_local_datetime(&local.and_hms_opt(12, 0, 0).unwrap())
    }

    /// Every offset under which `local` is shown; a repeated time lists winter time first,
    /// as chrono's `Local` does, so the reader must not rely on the order.
    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> LocalResult<FixedOffset> {
        let fits: Vec<FixedOffset> = [hours(1), hours(2)]
            .into_iter()
            .filter(|&o| self.offset_from_utc_datetime(&(*local - o)) == o)
            .collect();
        match fits[..] {
            [o] => LocalResult::Single(o),
            [winter, summer] => LocalResult::Ambiguous(winter, summer),
            _ => LocalResult::None,
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> FixedOffset {
        self.offset_from_utc_datetime(&utc.and_hms_opt(0, 0, 0).unwrap())
    }

    fn offset_from_utc_datetime(&self, t: &NaiveDateTime) -> FixedOffset {
        let summer = utc(3, 29, 1, 0, 0).naive_utc()..utc(10, 25, 1, 0, 0).naive_utc();
        hours(if summer.contains(t) { 2 } else { 1 })
    }
}

fn heading_time(time: DateTime<Utc>) -> String {
    let block = render_block_in(&Message::user("q").with_timestamp(time), &Cet2026).unwrap();
    let heading = block.lines().next().unwrap();
    heading.rsplit_once(" \u{2014} ").unwrap().1.to_string()
}

fn created(time: &str) -> DateTime<Utc> {
    let md = format!(
        "# Agent Memory\n\n**Conversation:** c\n**Created:** {time}\n\n---\n\n## Interaction Log\n\n"
    );
    parse_memory_md_in(&md, &Cet2026).unwrap().created
}

#[test]
fn headings_show_the_zone_clock_summer_and_winter() {
    assert_eq!(heading_time(utc(4, 20, 18, 33, 12)), "2026-04-20T20:33:12");
    assert_eq!(heading_time(utc(1, 20, 18, 33, 12)), "2026-01-20T19:33:12");
    assert_eq!(created("2026-04-20T20:33:12"), utc(4, 20, 18, 33, 12));
}

#[test]
fn a_repeated_local_time_reads_as_the_earlier_instant() {
    // 2026-10-25: the clocks go back from 03:00 to 02:00, so 02:30 is shown twice.
    let (first, second) = (utc(10, 25, 0, 30, 0), utc(10, 25, 1, 30, 0));
    assert_eq!(heading_time(first), "2026-10-25T02:30:00");
    assert_eq!(heading_time(second), "2026-10-25T02:30:00");
    assert_eq!(created("2026-10-25T02:30:00"), first);
}

#[test]
fn a_skipped_local_time_reads_at_the_offset_before_the_change() {
    // 2026-03-29: the clocks skip from 02:00 to 03:00; 02:30 is read at UTC+1.
    let skipped = created("2026-03-29T02:30:00");
    assert_eq!(skipped, utc(3, 29, 1, 30, 0));
    assert_eq!(heading_time(skipped), "2026-03-29T03:30:00");
}

#[test]
fn a_year_round_trips_but_the_second_pass_through_the_repeated_hour() {
    // Every 37 minutes 11 seconds over the year, with a fraction.
    let mut messages = Vec::new();
    let mut t = utc(1, 1, 0, 0, 0) + chrono::Duration::microseconds(250);
    while t < utc(12, 31, 23, 0, 0) {
        messages.push(Message::user("x").with_timestamp(t));
        t += chrono::Duration::seconds(37 * 60 + 11);
    }
    let text = render_memory_md_in("year", messages[0].timestamp, &messages, &Cet2026);
    let parsed = parse_memory_md_in(&text, &Cet2026).unwrap();
    // The second pass: 01:00 to 02:00 UTC, shown as 02:00 to 03:00 a second time.
    let repeated = utc(10, 25, 1, 0, 0)..utc(10, 25, 2, 0, 0);
    let mut shifted = 0;
    for (m, b) in messages.iter().zip(&parsed.blocks) {
        if repeated.contains(&m.timestamp) {
            assert_eq!(b.timestamp, m.timestamp - chrono::Duration::hours(1));
            shifted += 1;
        } else {
            assert_eq!(b.timestamp, m.timestamp);
        }
    }
    assert!(shifted > 0);
    assert!(parsed.blocks.iter().any(|b| b.timestamp.nanosecond() != 0));
    // The text itself always comes back byte for byte.
    let again: Vec<Message> = parsed.blocks.iter().map(|b| b.to_message()).collect();
    assert_eq!(
        render_memory_md_in("year", parsed.created, &again, &Cet2026),
        text
    );
}
