//! Tool calls in a conversation: every shape a history window must keep whole, and the check
//! that a window kept them. The conformance cases of last-N windows run them on every store;
//! `agentmem-core`'s tests of `history` run them on the window functions themselves.

use std::ops::Range;

use agentmem_core::{Message, Role};

/// [`conversation`]`[SEQUENTIAL]`: a call with two results, back-to-back calls, and a call
/// with its result at the very end.
pub const SEQUENTIAL: Range<usize> = 0..10;
/// [`conversation`]`[PARALLEL]`: two calls, then their two results (as OpenAI and the
/// PraisonAI importer write them), an answer and a new question.
pub const PARALLEL: Range<usize> = 10..17;
/// [`conversation`]`[INTERLEAVED]`: from that question on, calls and results interleaved (two
/// calls, the first's result, a third call, the other two results), then two results without
/// an id after the message that called their tool.
pub const INTERLEAVED: Range<usize> = 16..28;

/// One conversation holding each shape of tool calls in a part of its own ([`SEQUENTIAL`],
/// [`PARALLEL`], [`INTERLEAVED`]); every part is a whole conversation too (no tool result
/// in it has lost its call). Each call makes fresh message ids.
pub fn conversation() -> Vec<Message> {
    let result_without_id = |content: &str| Message::new(Role::Tool, content);
    vec![
        Message::system("rules"),
        Message::user("weather and time in Lisbon?"),
        Message::tool_call("c1", "weather", "{\"city\":\"Lisbon\"}"),
        Message::tool_result("c1", "weather", "sunny"),
        Message::tool_result("c1", "weather", "24°C"),
        Message::tool_call("c2", "clock", "{}"),
        Message::tool_result("c2", "clock", "14:00"),
        Message::assistant("Sunny, 24°C, 14:00."),
        Message::tool_call("c3", "search", "{}"),
        Message::tool_result("c3", "search", "result"),
        Message::user("weather in Kyoto and Osaka?"),
        Message::tool_call("call_kyoto", "weather", "{\"city\":\"Kyoto\"}"),
        Message::tool_call("call_osaka", "weather", "{\"city\":\"Osaka\"}"),
        Message::tool_result("call_kyoto", "weather", "sunny"),
        Message::tool_result("call_osaka", "weather", "rain"),
        Message::assistant("Sunny in Kyoto, rain in Osaka."),
        Message::user("and the time?"),
        Message::tool_call("t1", "clock", "{}"),
        Message::tool_call("t2", "clock", "{}"),
        Message::tool_result("t1", "clock", "14:00"),
        Message::tool_call("t3", "calendar", "{}"),
        Message::tool_result("t2", "clock", "15:00"),
        Message::tool_result("t3", "calendar", "free"),
        Message::assistant("14:00 and 15:00, and you are free."),
        Message::assistant("calling a tool without an id"),
        result_without_id("first bare result"),
        result_without_id("second bare result"),
        Message::assistant("done"),
    ]
}

/// The messages of one part of [`conversation`] (a range such as [`PARALLEL`]).
pub fn part(range: Range<usize>) -> Vec<Message> {
    conversation()[range].to_vec()
}

/// Where the first tool result in `window` stands that does not follow its call inside it,
/// `None` when there is none. A result with an id needs the call of that id before it; one
/// without an id, any earlier message that is not a tool result.
pub fn first_orphaned_result(window: &[Message]) -> Option<usize> {
    window.iter().enumerate().position(|(j, m)| {
        let before = &window[..j];
        m.is_tool_result()
            && !match &m.tool_call_id {
                Some(id) => before
                    .iter()
                    .any(|c| c.is_tool_call() && c.tool_call_id.as_deref() == Some(id)),
                None => before.iter().any(|c| !c.is_tool_result()),
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_a_whole_conversation() {
        let whole = conversation();
        assert_eq!(first_orphaned_result(&whole), None);
        assert_eq!(INTERLEAVED.end, whole.len());
        for range in [SEQUENTIAL, PARALLEL, INTERLEAVED] {
            assert_eq!(
                first_orphaned_result(&whole[range.clone()]),
                None,
                "{range:?}"
            );
        }
    }

    #[test]
    fn orphaned_results_are_found() {
        let parallel = part(PARALLEL);
        // From call_osaka on, the result of call_kyoto has lost its call.
        assert_eq!(first_orphaned_result(&parallel[2..]), Some(1));
        let interleaved = part(INTERLEAVED);
        // The bare results without the message that called their tool.
        assert_eq!(first_orphaned_result(&interleaved[9..]), Some(0));
    }
}
