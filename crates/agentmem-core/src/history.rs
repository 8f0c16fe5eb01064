//! History windows that never separate a tool call from its result.

use crate::model::Message;

/// Where the last `limit` messages of `messages` start, moved forward until no tool result in
/// the window has lost its call (see [`complete_from`]).
///
/// Every backend fetches the last `limit` messages, then drops this many from the front; so a
/// window never holds a tool result without its call, and never more than `limit` messages.
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
    let start = messages.len().saturating_sub(limit);
    if start == 0 {
        return 0;
    }
    complete_from(messages, start)
}

/// The first index at or after `from` where a window running to the end of `messages` is
/// complete: every tool result in it follows its call inside it. (A window that runs to the
/// end holds every result of the calls it holds, so it never has a call without its results.)
///
/// A result pairs with the latest earlier call of the same `tool_call_id`; a result without an
/// id pairs with the nearest earlier message that is not a tool result. Parallel tool calls
/// (`[call_a, call_b, result_a, result_b]`) and interleaved ones are kept or dropped as a
/// group, so cutting between two calls drops the results of both.
///
/// ```
/// use agentmem_core::{history::complete_from, Message};
/// let msgs = vec![
///     Message::user("weather in Kyoto and Osaka?"),
///     Message::tool_call("k", "weather", "{\"city\":\"Kyoto\"}"),
///     Message::tool_call("o", "weather", "{\"city\":\"Osaka\"}"),
///     Message::tool_result("k", "weather", "sunny"),
///     Message::tool_result("o", "weather", "rain"),
///     Message::assistant("Sunny in Kyoto, rain in Osaka."),
/// ];
/// assert_eq!(complete_from(&msgs, 1), 1);
/// // From `call_o` on, the result of `k` would have no call: the window starts after both.
/// assert_eq!(complete_from(&msgs, 2), 5);
/// ```
pub fn complete_from(messages: &[Message], from: usize) -> usize {
    let len = messages.len();
    if from >= len {
        return len;
    }
    // A result at `j` whose call is at `c` (or nowhere from `from` on) forbids every start in
    // `c+1..=j`; the answer is the first start not forbidden. `depth[s]` counts the forbidding
    // results by a difference array, so the whole scan is linear.
    let mut depth = vec![0i64; len + 2];
    let mut last_call: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut last_speaker: Option<usize> = None;
    for (j, m) in messages.iter().enumerate().skip(from) {
        if m.is_tool_result() {
            let call = match &m.tool_call_id {
                Some(id) => last_call.get(id.as_str()).copied(),
                None => last_speaker,
            };
            let first_forbidden = call.map_or(from, |c| c + 1);
            depth[first_forbidden] += 1;
            depth[j + 1] -= 1;
        } else {
            if let Some(id) = &m.tool_call_id {
                last_call.insert(id.as_str(), j);
            }
            last_speaker = Some(j);
        }
    }
    let mut covered = 0i64;
    for (s, delta) in depth.iter().enumerate().take(len + 1) {
        covered += delta;
        if s >= from && covered == 0 {
            return s;
        }
    }
    len
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

/// Drops the front of an already-cut window up to where it is complete (see
/// [`complete_from`]): no tool result is left whose call was cut off.
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
    let start = complete_from(&window, 0);
    window.drain(..start);
    window
}
