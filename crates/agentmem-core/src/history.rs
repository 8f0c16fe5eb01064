//! History windows that never separate a tool call from its result.

use crate::model::Message;

/// Where the last `limit` messages of `messages` start, moved forward past any tool results
/// whose call would fall outside the window.
///
/// Every backend fetches the last `limit` messages, then drops this many from the front; so a
/// window never begins with an orphaned tool result, and never holds more than `limit` messages.
///
/// ```
/// use agentmem_core::{history::tail_start, Message};
/// let msgs = vec![
///     Message::user("weather?"),
///     Message::tool_call("c1", "weather", "{}"),
///     Message::tool_result("c1", "weather", "sunny"),
///     Message::assistant("It is sunny."),
/// ];
/// // The last two would start with the result of `c1`, whose call is outside: it is dropped.
/// assert_eq!(tail_start(&msgs, 2), 3);
/// assert_eq!(tail_start(&msgs, 3), 1);
/// ```
pub fn tail_start(messages: &[Message], limit: usize) -> usize {
    let mut start = messages.len().saturating_sub(limit);
    if start == 0 {
        return 0;
    }
    while start < messages.len() && messages[start].is_tool_result() {
        start += 1;
    }
    start
}

/// The last `limit` messages of `messages`, without orphaned tool results (see [`tail_start`]).
///
/// ```
/// use agentmem_core::{history::tail, Message};
/// let msgs = vec![
///     Message::user("weather?"),
///     Message::tool_call("c1", "weather", "{}"),
///     Message::tool_result("c1", "weather", "sunny"),
///     Message::assistant("It is sunny."),
/// ];
/// // The last two would begin with the result of `c1` without its call: it is left out.
/// assert_eq!(tail(&msgs, 2), &msgs[3..]);
/// // With room for the call, call and result stay together.
/// assert!(tail(&msgs, 3)[0].is_tool_call());
/// assert_eq!(tail(&msgs, 100).len(), 4);
/// ```
pub fn tail(messages: &[Message], limit: usize) -> &[Message] {
    &messages[tail_start(messages, limit)..]
}

/// Drops tool results at the front of an already-cut window whose calls were cut off.
///
/// Backends that fetch the last N rows directly (SQL `ORDER BY seq DESC LIMIT N`, Redis
/// `LRANGE -N -1`) call this on the result; `window_is_whole` says whether the window holds
/// the whole session (then nothing was cut and nothing is dropped).
///
/// ```
/// use agentmem_core::{history::trim_orphans, Message};
/// // The last two rows of a longer session: the call of `c1` was cut off.
/// let window = vec![
///     Message::tool_result("c1", "weather", "sunny"),
///     Message::assistant("It is sunny."),
/// ];
/// let trimmed = trim_orphans(window.clone(), false);
/// assert_eq!(trimmed, &window[1..]);
/// // The whole session: nothing was cut, so nothing is dropped.
/// assert_eq!(trim_orphans(window.clone(), true), window);
/// ```
pub fn trim_orphans(mut window: Vec<Message>, window_is_whole: bool) -> Vec<Message> {
    if window_is_whole {
        return window;
    }
    let orphans = window.iter().take_while(|m| m.is_tool_result()).count();
    window.drain(..orphans);
    window
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn convo() -> Vec<Message> {
        vec![
            Message::system("s"),
            Message::user("u"),
            Message::tool_call("a", "t", "{}"),
            Message::tool_result("a", "t", "r1"),
            Message::tool_result("a", "t", "r2"),
            Message::assistant("done"),
        ]
    }

    #[test]
    fn whole_history_when_limit_is_large() {
        let m = convo();
        assert_eq!(tail_start(&m, 100), 0);
        assert_eq!(tail(&m, 6).len(), 6);
    }

    #[test]
    fn never_starts_with_orphaned_results() {
        let m = convo();
        assert_eq!(tail_start(&m, 3), 5); // results r1, r2 dropped
        assert_eq!(tail_start(&m, 2), 5);
        assert_eq!(tail_start(&m, 4), 2); // call kept with both results
        assert_eq!(tail_start(&m, 0), 6);
        for n in 0..=8 {
            let w = tail(&m, n);
            assert!(w.len() <= n);
            assert!(w.first().is_none_or(|f| !f.is_tool_result()), "n={n}");
        }
    }

    #[test]
    fn trim_orphans_matches_tail() {
        let m = convo();
        for n in 1..=6 {
            let cut = m[m.len() - n..].to_vec();
            assert_eq!(
                trim_orphans(cut, n == m.len()),
                tail(&m, n).to_vec(),
                "n={n}"
            );
        }
    }
}
