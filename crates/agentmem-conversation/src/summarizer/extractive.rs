//! A summarizer that needs no model: it keeps the sentences that state facts and decisions,
//! and the latest turns, within the token budget. Deterministic: the same transcript always
//! gives the same summary.

use std::collections::HashSet;

use async_trait::async_trait;

use agentmem_core::{Message, Result, Role};
use agentmem_formats::swarms::parse_memory_md;

use super::{Summarizer, SummaryRequest};
use crate::templates::{PRELOAD_PREFIX, SUMMARY_PREFIX};

/// The heading of the facts section of an extractive summary.
const FACTS_HEADING: &str = "Key facts and decisions:";
/// The heading of the latest-turns section of an extractive summary.
const TURNS_HEADING: &str = "Latest turns:";
/// What an empty transcript summarizes to.
const NOTHING: &str = "No earlier conversation.";
/// The smallest share of the budget worth giving one quoted turn, in tokens.
const MIN_TURN_TOKENS: usize = 16;
/// Longest single fact kept, in tokens, so one pasted document cannot take the whole budget.
const MAX_FACT_TOKENS: usize = 120;

/// Phrases (as lowercase words separated by single spaces) that mark a sentence as a fact or a
/// decision worth keeping.
const DEFAULT_CUES: &[&str] = &[
    "decide",
    "decided",
    "decision",
    "agreed",
    "agree",
    "chose",
    "choose",
    "chosen",
    "prefer",
    "prefers",
    "preferred",
    "preference",
    "will",
    "must",
    "should",
    "plan",
    "goal",
    "need",
    "needs",
    "always",
    "never",
    "remember",
    "important",
    "note",
    "my name",
    "name is",
    "i am",
    "i m",
    "deadline",
    "budget",
    "recommend",
    "recommended",
    "conclusion",
    "confirmed",
    "use",
    "using",
    "shortlist",
    "require",
    "requires",
    "required",
    "requirement",
    "fact",
];

/// Summarizes without a model: the sentences that state facts and decisions (they contain
/// a cue such as "decided", "prefer", "must", "my name", or else a number), then the latest
/// turns. When the budget is short, cue sentences win over number-only ones and newer over
/// older; the kept facts print in transcript order.
///
/// Facts carried in an earlier summary or in preloaded memory are kept like any other, so
/// they survive repeated compactions.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use agentmem_conversation::{ExtractiveSummarizer, Summarizer, SummaryRequest};
/// use agentmem_core::Message;
/// let request = SummaryRequest::new(vec![
///     Message::user("My name is Ada."),
///     Message::assistant("Hello Ada."),
///     Message::user("We decided to use BigQuery. Lunch was fine."),
///     Message::assistant("Noted."),
///     Message::user("What next?"),
///     Message::assistant("Load the data."),
/// ], 200);
/// let summary = ExtractiveSummarizer::new().with_latest_turns(2).summarize(&request).await.unwrap();
/// assert_eq!(summary, "Key facts and decisions:\n- User: My name is Ada.\n- User: We decided to use BigQuery.\n\nLatest turns:\n- User: What next?\n- Assistant: Load the data.");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractiveSummarizer {
    latest_turns: usize,
    cues: Vec<String>,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        ExtractiveSummarizer {
            latest_turns: 4,
            cues: DEFAULT_CUES.iter().map(|c| (*c).to_string()).collect(),
        }
    }
}

impl ExtractiveSummarizer {
    /// Keeps the 4 latest turns and the default cues.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps the `n` latest turns (system messages are not turns).
    pub fn with_latest_turns(mut self, n: usize) -> Self {
        self.latest_turns = n;
        self
    }

    /// Also treats sentences containing `cue` (a word or phrase, matched case-insensitively
    /// on whole words) as facts.
    pub fn with_cue(mut self, cue: &str) -> Self {
        let cue = normalize(cue);
        if !cue.is_empty() {
            self.cues.push(cue);
        }
        self
    }

    /// Whether `sentence` contains a cue phrase (the strongest sign of a fact or decision).
    fn has_cue(&self, sentence: &str) -> bool {
        let padded = format!(" {} ", normalize(sentence));
        self.cues
            .iter()
            .any(|cue| padded.contains(&format!(" {cue} ")))
    }

    /// Whether `sentence` is worth keeping: it has a cue, or a number.
    fn is_fact(&self, sentence: &str) -> bool {
        self.has_cue(sentence) || sentence.chars().any(|c| c.is_ascii_digit())
    }

    /// The summary text, within `request.max_tokens`.
    pub fn summarize_now(&self, request: &SummaryRequest) -> String {
        let enc = request.encoding;
        let budget = request.max_tokens;
        let turn_start = latest_turns_start(&request.messages, self.latest_turns);

        let mut seen = HashSet::new();
        let facts: Vec<String> = request
            .messages
            .iter()
            .flat_map(|m| self.facts_of(m))
            .filter(|f| seen.insert(f.clone()))
            .map(|f| enc.truncate(&f, MAX_FACT_TOKENS).to_string())
            .collect();
        let turns: Vec<String> = request.messages[turn_start..]
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| format!("- {}: {}", m.role.display_name(), one_line(&m.content)))
            .collect();
        if facts.is_empty() && turns.is_empty() {
            return enc.truncate(NOTHING, budget).to_string();
        }

        // Facts first, in up to two thirds of the budget (all of it without turns to quote):
        // those with a cue phrase, then those with only a number, newest first within each;
        // they print in transcript order.
        let facts_cap = if turns.is_empty() {
            budget
        } else {
            budget * 2 / 3
        };
        let mut left = facts_cap.saturating_sub(enc.count(FACTS_HEADING) + 2);
        let mut kept = vec![false; facts.len()];
        for strong in [true, false] {
            for (i, fact) in facts.iter().enumerate().rev() {
                if kept[i] || self.has_cue(fact) != strong {
                    continue;
                }
                let cost = enc.count(fact) + 1;
                if cost <= left {
                    kept[i] = true;
                    left -= cost;
                }
            }
        }
        let facts: Vec<&str> = facts
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(f, _)| f.as_str())
            .collect();
        let facts_cost = if facts.is_empty() {
            0
        } else {
            enc.count(FACTS_HEADING) + 2 + facts.iter().map(|f| enc.count(f) + 1).sum::<usize>()
        };

        // The latest turns share the rest evenly; when it is too small for all of them, the
        // newest get a useful share each rather than every turn a few words.
        let left = budget
            .saturating_sub(facts_cost)
            .saturating_sub(enc.count(TURNS_HEADING) + 2);
        let shown = turns.len().min(left / MIN_TURN_TOKENS);
        let per_turn = left.checked_div(shown).unwrap_or(0);
        let turns: Vec<&str> = turns[turns.len() - shown..]
            .iter()
            .map(|t| enc.truncate(t, per_turn.saturating_sub(1)))
            .filter(|t| !t.is_empty())
            .collect();

        let mut sections = Vec::new();
        if !facts.is_empty() {
            sections.push(format!("{FACTS_HEADING}\n{}", facts.join("\n")));
        }
        if !turns.is_empty() {
            sections.push(format!("{TURNS_HEADING}\n{}", turns.join("\n")));
        }
        let out = sections.join("\n\n");
        // Token counts of parts are not exactly additive (BPE merges across joins): the final
        // cut guarantees the bound.
        enc.truncate(&out, budget).to_string()
    }

    /// The fact lines of one message: `- {Role}: {sentence}`, or the carried line itself for
    /// earlier summaries and preloaded memory.
    fn facts_of(&self, message: &Message) -> Vec<String> {
        if message.role == Role::System {
            if let Some(body) = message.content.strip_prefix(SUMMARY_PREFIX) {
                return self.facts_of_summary(body);
            }
            if let Some(body) = message.content.strip_prefix(PRELOAD_PREFIX) {
                return self.facts_of_memory_md(body);
            }
        }
        let role = message.role.display_name();
        sentences(&message.content)
            .filter(|s| self.is_fact(s))
            .map(|s| format!("- {role}: {s}"))
            .collect()
    }

    /// Lines of an earlier summary: everything in its facts section is kept (it was chosen
    /// before); other lines are judged like any sentence.
    fn facts_of_summary(&self, body: &str) -> Vec<String> {
        let mut in_facts = false;
        let mut out = Vec::new();
        for line in body.lines().map(str::trim) {
            if line == FACTS_HEADING {
                in_facts = true;
            } else if line == TURNS_HEADING {
                in_facts = false;
            } else if !line.is_empty() && (in_facts || self.is_fact(line)) {
                let item = line.strip_prefix("- ").unwrap_or(line);
                out.push(format!("- {item}"));
            }
        }
        out
    }

    /// Facts of a preloaded `MEMORY.md`: each block is judged as the message it records (so
    /// an earlier summary block keeps its facts section). Text that does not parse as
    /// `MEMORY.md` is judged as plain text.
    fn facts_of_memory_md(&self, body: &str) -> Vec<String> {
        match parse_memory_md(body) {
            Ok(parsed) => parsed
                .blocks
                .iter()
                .flat_map(|b| self.facts_of(&b.to_message()))
                .collect(),
            Err(_) => self.facts_of(&Message::system(body)),
        }
    }
}

#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    async fn summarize(&self, request: &SummaryRequest) -> Result<String> {
        Ok(self.summarize_now(request))
    }
}

/// Where the latest `n` non-system turns start.
fn latest_turns_start(messages: &[Message], n: usize) -> usize {
    if n == 0 {
        return messages.len();
    }
    let mut seen = 0;
    for (i, m) in messages.iter().enumerate().rev() {
        if m.role != Role::System {
            seen += 1;
            if seen == n {
                return i;
            }
        }
    }
    0
}

/// Sentences of `text`: split at line ends and after `.`, `!` or `?` followed by a space.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
                out.push(&line[start..=i]);
                start = i + 2;
            }
        }
        out.push(&line[start.min(line.len())..]);
        out.into_iter().map(str::trim).filter(|s| !s.is_empty())
    })
}

/// Lowercase words joined by single spaces (so `I'm` becomes `i m`).
fn normalize(text: &str) -> String {
    agentmem_core::search::words(text).join(" ")
}

/// `text` with runs of whitespace (newlines included) collapsed to single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
