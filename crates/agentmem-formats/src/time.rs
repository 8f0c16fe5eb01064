//! Times as the Python frameworks write them.
//!
//! Swarms writes `datetime.isoformat()` of a naive local time (`2026-04-20T18:35:04.123456`,
//! the fraction only when it is not zero); PraisonAI writes the same shape in UTC with a
//! `+00:00` offset. agentmem writes UTC in the same shape.

use chrono::{DateTime, NaiveDateTime, Timelike, Utc};

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
    let naive = time.naive_utc();
    // A leap second shows as nanoseconds >= 1e9; Python has no leap seconds, so fold it.
    let micros = (naive.nanosecond() % 1_000_000_000) / 1_000;
    let base = naive.format("%Y-%m-%dT%H:%M:%S");
    if micros == 0 {
        base.to_string()
    } else {
        format!("{base}.{micros:06}")
    }
}

/// Parses an ISO time as Swarms, PraisonAI or agentmem writes it: `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction (1-9 digits), and an optional offset (`Z`, `+HH:MM`). A time with an
/// offset is converted to UTC; a naive time (what Swarms writes, in the writer's unknown local
/// zone) is taken as UTC, which is what agentmem writes. `None` when `text` is not such a time.
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
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    for pattern in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, pattern) {
            return Some(t.and_utc());
        }
    }
    None
}
