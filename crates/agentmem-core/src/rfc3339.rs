//! Message times written as chrono writes them (`DateTime<Utc>`'s serde form: RFC 3339, UTC as
//! `Z`, fractional seconds in 0, 3, 6 or 9 digits), by hand.
//!
//! Every stored message serialises its time once. chrono's `Serialize` goes through `fmt`
//! (`collect_str`, then `write!` for the fraction), which was 8 % of a buffered file append; this
//! fills a small buffer directly. Years outside 0-9999 (signed in RFC 3339) take chrono's path.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::Serializer;

/// `#[serde(serialize_with)]` for a `DateTime<Utc>`: the same string chrono's `Serialize`
/// gives.
pub(crate) fn serialize<S: Serializer>(
    time: &DateTime<Utc>, serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut buf = [0u8; 32];
    match write(time, &mut buf) {
        Some(text) => serializer.serialize_str(text),
        None => serde::Serialize::serialize(time, serializer),
    }
}

/// `time` in `buf`; `None` for a year outside 0-9999.
fn write<'b>(time: &DateTime<Utc>, buf: &'b mut [u8; 32]) -> Option<&'b str> {
    let naive = time.naive_utc();
    let year = naive.year();
    if !(0..=9999).contains(&year) {
        return None;
    }
    let mut sec = naive.second();
    let mut nano = naive.nanosecond();
    if nano >= 1_000_000_000 {
        // A leap second: chrono writes it as second 60.
        sec += 1;
        nano -= 1_000_000_000;
    }
    buf[..19].copy_from_slice(b"0000-00-00T00:00:00");
    put_digits(buf, 0, year as u32, 4);
    put_digits(buf, 5, naive.month(), 2);
    put_digits(buf, 8, naive.day(), 2);
    put_digits(buf, 11, naive.hour(), 2);
    put_digits(buf, 14, naive.minute(), 2);
    put_digits(buf, 17, sec, 2);
    let mut end = 19;
    let (fraction, digits) = if nano == 0 {
        (0, 0)
    } else if nano.is_multiple_of(1_000_000) {
        (nano / 1_000_000, 3)
    } else if nano.is_multiple_of(1_000) {
        (nano / 1_000, 6)
    } else {
        (nano, 9)
    };
    if digits > 0 {
        buf[end] = b'.';
        put_digits(buf, end + 1, fraction, digits);
        end += 1 + digits;
    }
    buf[end] = b'Z';
    std::str::from_utf8(&buf[..end + 1]).ok()
}

/// `value` as `digits` decimal digits (zero-padded) at `buf[at..]`.
fn put_digits(buf: &mut [u8; 32], at: usize, mut value: u32, digits: usize) {
    for slot in buf[at..at + digits].iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone};

    use super::*;

    fn ours(t: DateTime<Utc>) -> String {
        serialize(&t, serde_json::value::Serializer)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    fn chronos(t: DateTime<Utc>) -> String {
        serde_json::to_value(t)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn matches_chrono_across_years_and_precisions() {
        let mut t = Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap();
        let end = Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap();
        // Not a whole number of seconds, days or years, so every field varies.
        let step = chrono::Duration::microseconds(8_381_234_567_891);
        let mut n = 0u32;
        while t < end {
            // Whole seconds, milliseconds, microseconds and nanoseconds in turn.
            let nanos = [0, 123_000_000, 123_456_000, 123_456_789][(n % 4) as usize];
            let at = t.with_nanosecond(nanos).unwrap();
            assert_eq!(ours(at), chronos(at));
            t += step;
            n += 1;
        }
        assert!(n > 30_000, "{n}");
    }

    #[test]
    fn leap_seconds_and_other_years_match_chrono() {
        let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap()
            .and_utc();
        assert_eq!(ours(leap), chronos(leap));
        assert_eq!(ours(leap), "2016-12-31T23:59:60.500Z");
        for year in [-1, 10_000, 262_000] {
            let t = Utc.with_ymd_and_hms(year, 6, 1, 12, 0, 0).unwrap();
            assert_eq!(ours(t), chronos(t));
        }
        let t = Utc.with_ymd_and_hms(2026, 12, 3, 23, 59, 7).unwrap();
        assert_eq!(ours(t), "2026-12-03T23:59:07Z");
    }
}
