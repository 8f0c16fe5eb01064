//! Learning: recurring patterns in what the user says, kept as insight items.
//!
//! Three patterns are captured from user messages, without any LLM call:
//!
//! - **rules** the user states: a clause starting with `always …`, `never …`, `don't …`,
//!   `do not …`, `avoid …`, `make sure …`, `remember to …`, or anything after
//!   `from now on` / `going forward` (`never mind`, `don't worry` and the like are not rules);
//! - **corrections**: a message opening with `no, …`, `that's wrong`, `that's not right`,
//!   `actually, …`, `I meant …`, `not what I asked` (but not `no thanks` or `no problem`);
//! - **repeated requests**: a request (`please …`, `can you …`, or an imperative such as
//!   `summarise …`, `write …`) seen again in a later message.
//!
//! Each becomes a [`MemoryKind::Insight`] item whose key is the category and the normalised
//! text (lowercase words), so "Always use tabs!" and "always use tabs" are one insight; its id
//! is derived from the key ([`insight_id`]). The item's metadata holds `category`, `count` (how
//! many distinct messages said it) and `message_ids` (the last few, so processing the same
//! message twice does not count twice). Rules and corrections are injected into the context
//! from their first occurrence; requests once seen twice.
//!
//! ```
//! use agentmem_agent::learning::{detect_insights, InsightCategory};
//! let found = detect_insights("Thanks. From now on, answer in French. Never use emojis!");
//! assert_eq!(found.len(), 2);
//! assert!(found.iter().all(|i| i.category == InsightCategory::Rule));
//! assert_eq!(found[1].text, "Never use emojis");
//! assert!(detect_insights("Never mind, it works now").is_empty());
//! ```

use std::fmt;

use agentmem_core::{MemoryId, MemoryItem, MemoryKind, MemoryScope};

use crate::text::{clauses, normalise, stable_hash, truncate, Clause};

/// What an [`Insight`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InsightCategory {
    /// A rule the user stated ("always …", "never …", "don't …").
    Rule,
    /// The user corrected the assistant.
    Correction,
    /// A request the user makes (an insight once it recurs).
    Request,
}

impl InsightCategory {
    /// The stored name: `rule`, `correction`, `request`.
    pub fn as_str(self) -> &'static str {
        match self {
            InsightCategory::Rule => "rule",
            InsightCategory::Correction => "correction",
            InsightCategory::Request => "request",
        }
    }

    /// How many occurrences make it worth injecting into the context.
    pub fn min_count(self) -> u64 {
        match self {
            InsightCategory::Request => 2,
            InsightCategory::Rule | InsightCategory::Correction => 1,
        }
    }
}

impl fmt::Display for InsightCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pattern found in one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insight {
    /// What it records.
    pub category: InsightCategory,
    /// The de-duplication key: the category and the normalised text.
    pub key: String,
    /// The text as the user wrote it (the rule, the correcting message, the request).
    pub text: String,
}

impl Insight {
    fn new(category: InsightCategory, text: &str) -> Option<Insight> {
        let text = truncate(text.trim(), 300).trim().to_string();
        let norm = normalise(&text);
        if norm.is_empty() {
            return None;
        }
        Some(Insight {
            category,
            key: format!("{category}:{}", truncate(&norm, 200)),
            text,
        })
    }

    /// A new item in `scope` for this insight, seen once in `message_id`; [`record`] merges
    /// it with an existing one.
    pub fn to_memory_item(&self, scope: &MemoryScope, message_id: &str) -> MemoryItem {
        let mut item = MemoryItem::new(MemoryKind::Insight, self.text.clone())
            .with_key(self.key.clone())
            .in_scope(scope.clone())
            .with_metadata("category", self.category.as_str())
            .with_metadata("count", 1u64)
            .with_metadata("message_ids", serde_json::json!([message_id]));
        item.id = insight_id(scope, &self.key);
        item
    }
}

/// The id of the insight item with `key` in `scope`: `insight_` + a stable hash of both, so
/// the current item is one `get_memory` away and each scope counts its own.
///
/// The hash is unkeyed, so the id reveals the insight's text to anyone who guesses it: an
/// encrypted store (`agentmem-crypt`'s `EncryptLayer`) keeps every memory id sealed under the
/// store's key, and finds the item by this id all the same.
pub fn insight_id(scope: &MemoryScope, key: &str) -> MemoryId {
    // The global scope keeps the ids insights had before scopes.
    let hashed = if scope.is_global() {
        stable_hash(key)
    } else {
        stable_hash(&format!("{}\n{key}", scope.stored_form()))
    };
    // `insight_` and 32 hex digits: always a valid id, whatever the key.
    MemoryId::new(format!("insight_{hashed}")).expect("insight ids are valid ids")
}

/// How many message ids an insight remembers to avoid counting a message twice.
const KEPT_MESSAGE_IDS: usize = 32;

/// Merges one more sighting of `insight` (in message `message_id`) into `existing`, the item
/// stored so far: the count grows by one unless that message was already counted. Returns the
/// item to store, or `None` when nothing changes.
pub fn record(
    insight: &Insight, scope: &MemoryScope, message_id: &str, existing: Option<MemoryItem>,
) -> Option<MemoryItem> {
    let Some(mut item) = existing else {
        return Some(insight.to_memory_item(scope, message_id));
    };
    let mut ids: Vec<serde_json::Value> = item
        .metadata
        .get("message_ids")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    if ids.iter().any(|v| v.as_str() == Some(message_id)) {
        return None;
    }
    ids.push(message_id.into());
    let skip = ids.len().saturating_sub(KEPT_MESSAGE_IDS);
    let ids: Vec<_> = ids.into_iter().skip(skip).collect();
    let count = insight_count(&item) + 1;
    item.text = insight.text.clone();
    item.metadata.insert("count".into(), count.into());
    item.metadata.insert("message_ids".into(), ids.into());
    item.metadata
        .insert("category".into(), insight.category.as_str().into());
    Some(item)
}

/// The `count` of an insight item (1 when missing).
pub fn insight_count(item: &MemoryItem) -> u64 {
    item.metadata
        .get("count")
        .and_then(|v| v.as_u64())
        .unwrap_or(1)
}

/// The category of an insight item, when it is one this module wrote.
pub fn insight_category(item: &MemoryItem) -> Option<InsightCategory> {
    match item.metadata.get("category").and_then(|v| v.as_str())? {
        "rule" => Some(InsightCategory::Rule),
        "correction" => Some(InsightCategory::Correction),
        "request" => Some(InsightCategory::Request),
        _ => None,
    }
}

/// The insights one user message holds: its rules, else a correction, else a request.
pub fn detect_insights(text: &str) -> Vec<Insight> {
    let clauses = clauses(text);
    let mut out: Vec<Insight> = clauses.iter().filter_map(rule_in).collect();
    if out.is_empty() {
        if let Some(first) = clauses.first() {
            if is_correction(first) {
                out.extend(Insight::new(InsightCategory::Correction, text));
            } else if let Some(request) = request_in(first) {
                out.push(request);
            }
        }
    }
    out.dedup_by(|a, b| a.key == b.key);
    out
}

/// Polite or linking words skipped at the start of a clause.
const FILLERS: &[&str] = &[
    "please", "and", "also", "oh", "ok", "okay", "so", "but", "btw", "and", "plus", "pls", "again",
    "just", "remember", "guys", "hey", "thanks", "then",
];

fn skip_fillers(c: &Clause<'_>, mut i: usize) -> usize {
    while FILLERS.contains(&c.lower(i)) && !(c.lower(i) == "remember" && c.lower(i + 1) == "to") {
        i += 1;
    }
    i
}

fn rule_in(c: &Clause<'_>) -> Option<Insight> {
    let i = skip_fillers(c, 0);
    // "from now on, …" / "going forward …" / "in the future …" make whatever follows a rule.
    for lead in [
        &["from", "now", "on"][..],
        &["going", "forward"][..],
        &["in", "the", "future"][..],
        &["in", "future"][..],
    ] {
        if c.has_at(i, lead) {
            let at = skip_fillers(c, i + lead.len());
            if c.words.len() - at >= 2 {
                return Insight::new(InsightCategory::Rule, c.rest(at));
            }
            return None;
        }
    }
    let word = c.lower(i);
    let next = c.lower(i + 1);
    let rule = match word {
        "always" | "never" => !matches!(next, "mind" | "again" | "ever" | "" | "is" | "was"),
        "do" if next == "not" => {
            // An instruction, not "don't worry", "don't know", "do not disturb".
            i + 2 < c.words.len()
                && !matches!(
                    c.lower(i + 2),
                    "worry"
                        | "mind"
                        | "know"
                        | "bother"
                        | "care"
                        | "think"
                        | "understand"
                        | "get"
                        | "see"
                        | "remember"
                        | "have"
                        | "disturb"
                )
        }
        "avoid" => c.words.len() - i >= 2,
        "make" => next == "sure" && c.words.len() - i >= 3,
        "remember" => next == "to" && c.words.len() - i >= 3,
        _ => false,
    };
    // Imperatives start the clause; "I always …" or "it never …" are statements.
    if !rule || (i > 0 && c.lower(i - 1) == "i") {
        return None;
    }
    Insight::new(InsightCategory::Rule, c.rest(i))
}

fn is_correction(c: &Clause<'_>) -> bool {
    let w0 = c.lower(0);
    let w1 = c.lower(1);
    match w0 {
        "no" | "nope" => {
            !matches!(
                w1,
                "thanks" | "thank" | "problem" | "worries" | "worry" | "need" | "rush"
            ) && c.words.len() > 1
        }
        "wrong" | "incorrect" => true,
        "actually" => c.pause_before(1),
        "that" | "this" | "it" => {
            c.has_at(1, &["is", "wrong"])
                || c.has_at(1, &["is", "not", "right"])
                || c.has_at(1, &["is", "not", "correct"])
                || c.has_at(1, &["is", "incorrect"])
                || c.has_at(1, &["is", "not", "what", "i"])
                || c.has_at(1, &["was", "wrong"])
        }
        "i" => c.has_at(1, &["meant"]) || c.has_at(1, &["said"]) || c.has_at(1, &["asked", "for"]),
        "not" => c.has_at(1, &["what", "i"]),
        "you" => {
            c.has_at(1, &["misunderstood"])
                || c.has_at(1, &["got", "it", "wrong"])
                || c.has_at(1, &["are", "wrong"])
        }
        _ => false,
    }
}

/// Verbs that open an imperative request.
const REQUEST_VERBS: &[&str] = &[
    "summarise",
    "summarize",
    "write",
    "make",
    "create",
    "explain",
    "list",
    "find",
    "check",
    "run",
    "generate",
    "fix",
    "update",
    "add",
    "remove",
    "show",
    "give",
    "tell",
    "translate",
    "review",
    "refactor",
    "draft",
    "send",
    "search",
    "compare",
    "describe",
    "convert",
    "format",
    "rewrite",
    "help",
    "build",
    "deploy",
    "test",
    "analyse",
    "analyze",
    "plan",
    "suggest",
];

fn request_in(c: &Clause<'_>) -> Option<Insight> {
    let mut i = 0;
    if c.lower(0) == "please" {
        i = 1;
    } else if matches!(c.lower(0), "can" | "could" | "would" | "will") && c.lower(1) == "you" {
        i = 2;
        if c.lower(i) == "please" {
            i += 1;
        }
    }
    if !REQUEST_VERBS.contains(&c.lower(i)) {
        return None;
    }
    let words = c.words.len() - i;
    if !(2..=25).contains(&words) {
        return None;
    }
    let request = c.rest(i);
    let mut insight = Insight::new(InsightCategory::Request, request)?;
    // Keep the request readable: "Summarise the logs", capitalised like a sentence.
    let mut chars = insight.text.chars();
    if let Some(first) = chars.next() {
        insight.text = first.to_uppercase().chain(chars).collect();
    }
    Some(insight)
}
