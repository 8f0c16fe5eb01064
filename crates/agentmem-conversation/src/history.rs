//! The in-memory history with a running upper bound of its prompt string's token count, so
//! the compression check costs O(1) instead of rendering and tokenizing the whole history.
//!
//! # Why the running figure is an upper bound
//!
//! The prompt string is `L1 SEP L2 SEP … SEP Ln`, `Li` the [`prompt_line`] of message `i` and
//! `SEP` the blank line. tiktoken splits text into pieces with a regex, then BPE-encodes each
//! piece on its own, so a count is additive over any cut that is also a piece boundary. Every
//! line starts with `[` (its timestamp), and in both encodings' regexes no piece holds a line
//! break followed by `[` (punctuation pieces end with their trailing line breaks, whitespace
//! pieces are whitespace, letter and number pieces hold no line break); a piece that ends at
//! such a cut is also the same piece whether the text goes on or not (a whitespace run that
//! reaches the cut ends with a line break, so `\s*[\r\n]` takes all of it where cl100k's
//! `\s++$` would at the end of text). So
//!
//! ```text
//! count(prompt) = count(L1 SEP) + … + count(Ln-1 SEP) + count(Ln)
//! ```
//!
//! Counting each message as `max(count(Li SEP), count(Li))` makes the sum an upper bound of
//! that, over by at most the last message's separator: the `max` covers the last line
//! without assuming that appending a separator never shortens an encoding, which BPE does not
//! promise. The fallback estimate (one token per 3 bytes) is subadditive, so the sum bounds it
//! too. Merely adding `count(Li)` and `count(SEP)` would not be a bound: BPE is not
//! subadditive (`.` and `\n\n` may merge into one piece, and merges across a join can make
//! more tokens, not fewer). The compression check confirms with the exact count whenever the
//! figure reaches the trigger, so its decision is exactly the one an exact count gives.

use agentmem_core::Message;

use crate::templates::{prompt_line, PROMPT_SEPARATOR};
use crate::tokens::TokenEncoding;

/// The messages, preamble included, and an upper bound of their prompt string's tokens,
/// updated on every change. Only this type's methods change `messages`, so the two stay in step.
#[derive(Debug)]
pub(crate) struct History {
    messages: Vec<Message>,
    tokens_bound: usize,
}

impl History {
    pub(crate) fn new(messages: Vec<Message>, encoding: TokenEncoding) -> Self {
        let tokens_bound = messages.iter().map(|m| part_tokens(m, encoding)).sum();
        History {
            messages,
            tokens_bound,
        }
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// An upper bound of the prompt string's token count (see the module docs), in O(1).
    pub(crate) fn tokens_bound(&self) -> usize {
        self.tokens_bound
    }

    /// Adds a message counted with this history's encoding (counted before taking the
    /// history's lock, so the lock is not held while tokenizing).
    pub(crate) fn push(&mut self, message: Counted) {
        self.tokens_bound += message.tokens;
        self.messages.push(message.message);
    }

    /// Counts again with `encoding` (after the encoding changed).
    pub(crate) fn recount(&mut self, encoding: TokenEncoding) {
        *self = History::new(std::mem::take(&mut self.messages), encoding);
    }
}

/// A message with its share of the bound.
#[derive(Debug)]
pub(crate) struct Counted {
    message: Message,
    tokens: usize,
}

impl Counted {
    pub(crate) fn new(message: Message, encoding: TokenEncoding) -> Self {
        let tokens = part_tokens(&message, encoding);
        Counted { message, tokens }
    }

    pub(crate) fn message(&self) -> &Message {
        &self.message
    }
}

/// A message's share of the bound: `max(count(line SEP), count(line))`.
fn part_tokens(message: &Message, encoding: TokenEncoding) -> usize {
    let mut part = prompt_line(message);
    let alone = encoding.count(&part);
    part.push_str(PROMPT_SEPARATOR);
    encoding.count(&part).max(alone)
}

#[cfg(test)]
mod tests {
    use agentmem_core::Role;

    use super::*;
    use crate::templates::prompt_string;

    /// Contents chosen to stress the joins: endings in punctuation, line breaks, spaces,
    /// tabs, digits, letters, apostrophes, unicode (CJK, combining marks, emoji), empty
    /// contents, and contents that themselves hold blank lines and `[`.
    const CONTENTS: &[&str] = &[
        "",
        " ",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        "Hello.",
        "Hello.\n",
        "Hello. ",
        "Hello!?",
        "end with a paren)",
        "end with a slash/",
        "a list:\n- one\n- two\n\n",
        "trailing spaces   ",
        "trailing spaces and break  \n",
        "number 12345",
        "it's",
        "don't'",
        "東京の天気は晴れです。",
        "Grüße aus München…",
        "e\u{301}",
        "emoji 🎉🎉",
        "🎉",
        "[2025-01-01T00:00:00.000000Z] User: a fake line",
        "ends with [",
        "code: `fn main() {}`\n\n```\nlet x = [1, 2];\n```",
        "<|endoftext|>",
        "'",
        "...",
        "--\n\n--",
    ];

    fn message(i: usize, content: &str) -> Message {
        let role = match i % 4 {
            0 => Role::System,
            1 => Role::User,
            2 => Role::Assistant,
            _ => Role::parse("ResearchAgent").unwrap_or(Role::Assistant),
        };
        Message::new(role, content)
    }

    fn exact(history: &History, encoding: TokenEncoding) -> usize {
        encoding.count(&prompt_string(history.messages().iter()))
    }

    #[test]
    fn running_figure_bounds_the_exact_count_over_varied_content() {
        for encoding in [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase] {
            let mut history = History::new(Vec::new(), encoding);
            assert_eq!(history.tokens_bound(), 0);
            // Every ordered pair of contents meets at a join, and every content ends the
            // history once.
            for (i, a) in CONTENTS.iter().enumerate() {
                for (j, b) in CONTENTS.iter().enumerate() {
                    let pair = History::new(vec![message(i, a), message(j, b)], encoding);
                    let exact_pair = exact(&pair, encoding);
                    // The reasoning above: the count is additive at the cut after `SEP`.
                    let [first, second] =
                        [&pair.messages()[0], &pair.messages()[1]].map(prompt_line);
                    assert_eq!(
                        exact_pair,
                        encoding.count(&format!("{first}{PROMPT_SEPARATOR}"))
                            + encoding.count(&second),
                        "{encoding:?}: {a:?} then {b:?}"
                    );
                    assert!(
                        pair.tokens_bound() >= exact_pair,
                        "{encoding:?}: {a:?} then {b:?}: bound {} < exact {exact_pair}",
                        pair.tokens_bound()
                    );
                }
                history.push(Counted::new(message(i, a), encoding));
                let exact_now = exact(&history, encoding);
                assert!(
                    history.tokens_bound() >= exact_now,
                    "{encoding:?} after {a:?}: bound {} < exact {exact_now}",
                    history.tokens_bound()
                );
                // Tight: over by at most the last message's separator (a few tokens).
                assert!(
                    history.tokens_bound() <= exact_now + 2,
                    "{encoding:?} after {a:?}: bound {} far over exact {exact_now}",
                    history.tokens_bound()
                );
            }
        }
    }

    #[test]
    fn push_and_recount_keep_the_figure_in_step() {
        let messages: Vec<Message> = CONTENTS
            .iter()
            .enumerate()
            .map(|(i, c)| message(i, c))
            .collect();
        let mut history = History::new(Vec::new(), TokenEncoding::O200kBase);
        for m in &messages {
            history.push(Counted::new(m.clone(), TokenEncoding::O200kBase));
        }
        let o200k = History::new(messages.clone(), TokenEncoding::O200kBase).tokens_bound();
        assert_eq!(history.tokens_bound(), o200k);

        history.recount(TokenEncoding::Cl100kBase);
        assert_eq!(history.messages(), &messages[..]);
        let cl100k = History::new(messages, TokenEncoding::Cl100kBase).tokens_bound();
        assert_eq!(history.tokens_bound(), cl100k);
        assert!(cl100k >= exact(&history, TokenEncoding::Cl100kBase));

        history.recount(TokenEncoding::O200kBase);
        assert_eq!(history.tokens_bound(), o200k);
    }
}
