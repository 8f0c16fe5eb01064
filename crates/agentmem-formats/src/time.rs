//! Times as the Python frameworks write them.
//!
//! Swarms writes `datetime.isoformat()` of a naive local time (`2026-04-20T18:35:04.123456`,
//! the fraction only when it is not zero); PraisonAI writes the same shape in UTC with a
//! `+00:00` offset. agentmem writes `MEMORY.md` in local time as Swarms does
//! ([`isoformat_in`] with [`chrono::Local`]) and keeps the exact UTC instant in its own files.
//!
//! A naive local time names no instant when the clocks go back (the hour is lived twice) or
//! forward (the hour is skipped). [`parse_iso_time_in`] reads it as Python's `datetime` does
//! with `fold=0`: the earlier of two instants, and a skipped time with the offset in force
//! before the change (so `02:30` on a spring-forward night is `03:30` of the new offset).
//! Rendering then parsing in one zone gives the same instant back except for the later pass
//! through a repeated hour, which reads back one hour earlier.

use chrono::{DateTime, Datelike, LocalResult, NaiveDateTime, Offset, TimeZone, Timelike, Utc};

/// A time as Python's `datetime.isoformat()` prints a naive datetime:
/// `%Y-%m-%dT%H:%M:%S`, plus `.ffffff` only when the microseconds are not zero.
///
/// ```
/// use agentmem_formats::time::isoformat;
/// use chrono::TimeZone;
///
/// let t = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 18, 33, 12).unwrap();
/// assert_eq!(isoformat(t), "2026-04-20T18:33:12");
/// let t = t + chrono::Duration::microseconds(1500);
/// assert_eq!(isoformat(t), "2026-04-20T18:33:12.001500");
/// ```
pub fn isoformat(time: DateTime<Utc>) -> String {
    naive_isoformat(time.naive_utc())
}

/// [`isoformat`] of `time` as the clock in `zone` shows it, without an offset: what Swarms
/// writes in `MEMORY.md` when `zone` is [`chrono::Local`].
///
/// ```
/// use agentmem_formats::time::isoformat_in;
/// use chrono::{FixedOffset, TimeZone};
///
/// let t = chrono::Utc.with_ymd_and_hms(2026, 4, 20, 18, 33, 12).unwrap();
/// let paris_summer = FixedOffset::east_opt(2 * 3600).unwrap();
/// assert_eq!(isoformat_in(t, &paris_summer), "2026-04-20T20:33:12");
/// ```
pub fn isoformat_in<Tz: TimeZone>(time: DateTime<Utc>, zone: &Tz) -> String {
    naive_isoformat(time.with_timezone(zone).naive_local())
}

/// `%Y-%m-%dT%H:%M:%S`, plus `.ffffff` only when the microseconds are not zero.
fn naive_isoformat(naive: NaiveDateTime) -> String {
    // A leap second shows as nanoseconds >= 1e9; Python has no leap seconds, so fold it.
    let micros = (naive.nanosecond() % 1_000_000_000) / 1_000;
    let year = naive.year();
    if !(0..=9999).contains(&year) {
        // Outside four digits `%Y` adds a sign; rare enough for the general formatter.
        let base = naive.format("%Y-%m-%dT%H:%M:%S");
        return if micros == 0 {
            base.to_string()
        } else {
            format!("{base}.{micros:06}")
        };
    }
    // By hand: chrono's strftime parses its pattern on every call, and every appended
    // message renders one time (its `MEMORY.md` block).
    let mut text = String::with_capacity(26);
    push_digits(&mut text, year as u32, 4);
    text.push('-');
    push_digits(&mut text, naive.month(), 2);
    text.push('-');
    push_digits(&mut text, naive.day(), 2);
    text.push('T');
    push_digits(&mut text, naive.hour(), 2);
    text.push(':');
    push_digits(&mut text, naive.minute(), 2);
    text.push(':');
    push_digits(&mut text, naive.second(), 2);
    if micros != 0 {
        text.push('.');
        push_digits(&mut text, micros, 6);
    }
    text
}

/// Appends `n` as exactly `digits` decimal digits (`n` has at most that many).
fn push_digits(text: &mut String, n: u32, digits: u32) {
    for i in (0..digits).rev() {
        let digit = (n / 10u32.pow(i)) % 10;
        text.push(char::from(b'0' + digit as u8));
    }
}

/// Parses an ISO time as Swarms, PraisonAI or agentmem writes it: `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction (1-9 digits), and an optional offset (`Z`, `+HH:MM`). A time with an
/// offset is converted to UTC; a naive time is taken as UTC (use [`parse_iso_time_in`] with
/// [`chrono::Local`] for Swarms' local times). `None` when `text` is not such a time.
///
/// ```
/// use agentmem_formats::time::parse_iso_time;
///
/// let a = parse_iso_time("2026-04-20T18:33:12").unwrap();
/// let b = parse_iso_time("2026-04-20T20:33:12+02:00").unwrap();
/// assert_eq!(a, b);
/// assert!(parse_iso_time("yesterday").is_none());
/// ```
pub fn parse_iso_time(text: &str) -> Option<DateTime<Utc>> {
    parse_iso_time_in(text, &Utc)
}

/// [`parse_iso_time`], reading a naive time as the clock in `zone` (Swarms' `MEMORY.md` with
/// [`chrono::Local`]); a repeated or skipped local time is read as the module docs say.
///
/// ```
/// use agentmem_formats::time::parse_iso_time_in;
/// use chrono::{FixedOffset, TimeZone};
///
/// let paris_summer = FixedOffset::east_opt(2 * 3600).unwrap();
/// let t = parse_iso_time_in("2026-04-20T20:33:12", &paris_summer).unwrap();
/// assert_eq!(t, chrono::Utc.with_ymd_and_hms(2026, 4, 20, 18, 33, 12).unwrap());
/// // A time with an offset names its instant in any zone.
/// assert_eq!(parse_iso_time_in("2026-04-20T18:33:12Z", &paris_summer), Some(t));
/// ```
pub fn parse_iso_time_in<Tz: TimeZone>(text: &str, zone: &Tz) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|pattern| NaiveDateTime::parse_from_str(text, pattern).ok())
        .and_then(|naive| local_instant(naive, zone))
}

/// The instant the clock in `zone` shows as `naive`: the earlier one when it shows it twice,
/// and for a time the clock skips, `naive` at the offset in force before the skip (Python's
/// `fold=0`).
fn local_instant<Tz: TimeZone>(naive: NaiveDateTime, zone: &Tz) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        // The smaller of the two: chrono's `Local` does not always give the earlier first.
        LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
        LocalResult::None => {
            // Real zones change offset at most a few times a year, so a day before the
            // skipped time still has the offset in force before it.
            let before = naive.checked_sub_signed(chrono::Duration::days(1))?;
            let offset = zone.offset_from_utc_datetime(&before).fix();
            naive
                .checked_sub_signed(chrono::Duration::seconds(offset.local_minus_utc().into()))
                .map(|utc| utc.and_utc())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// The hand-made rendering is chrono's `%Y-%m-%dT%H:%M:%S%.6f` (fraction only when not
    /// zero) for times across the four-digit years, and the general formatter beyond them.
    #[test]
    fn isoformat_matches_chrono_everywhere() {
        let chrono_iso = |t: DateTime<Utc>| {
            let naive = t.naive_utc();
            let micros = naive.nanosecond() / 1_000;
            let base = naive.format("%Y-%m-%dT%H:%M:%S").to_string();
            if micros == 0 {
                base
            } else {
                format!("{base}.{micros:06}")
            }
        };
        let mut t = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap();
        let end = Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap();
        // A step that is not a whole number of seconds, days or years, so every field varies.
        let step = chrono::Duration::microseconds(8_381_234_567_891);
        while t < end {
            assert_eq!(isoformat(t), chrono_iso(t));
            t += step;
        }
        assert_eq!(isoformat(end), "9999-12-31T23:59:59");
        let far = Utc.with_ymd_and_hms(12345, 6, 7, 8, 9, 10).unwrap();
        assert_eq!(isoformat(far), chrono_iso(far));
        let early = Utc.with_ymd_and_hms(-44, 3, 15, 12, 0, 0).unwrap();
        assert_eq!(isoformat(early), chrono_iso(early));
    }
}
