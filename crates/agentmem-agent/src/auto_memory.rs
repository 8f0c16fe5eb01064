//! Auto-memory: facts about the user extracted from messages without any LLM call.
//!
//! A cheap keyword gate ([`has_personal_cue`], one pass over the words) lets messages without
//! personal-information cues through at the cost of that scan. The rest are split into clauses
//! and matched by hand-written patterns:
//!
//! | category | cues | key |
//! |---|---|---|
//! | name | `my name is X`, `call me X`, `I am X`/`I'm X` (X capitalised) | `name` |
//! | role | `I am a/an/the … engineer`, `I work as …`, `my job/role is …` | `role` |
//! | employer | `I work at/for X`, `… developer at X` (X capitalised) | `employer` |
//! | project | `I'm working on …`, `I'm building …`, `my project is …` | `project` |
//! | location | `I live in X`, `I'm from X`, `I'm based in X`, `I moved to X` (X capitalised) | `location` |
//! | preference | `I prefer/like/love/enjoy X`, `I'm a fan of X`, `my favourite T is X` | `taste:<x>`, `favorite:<t>` |
//! | dislike | `I dislike/hate X`, `I don't like X`, `I can't stand X`, `I'm not a fan of X` | `taste:<x>` |
//! | tool / language | `I use X`, `I'm using X`, `I code in X`, `I work with X`, `I speak X` | `uses:<x>`, `speaks:<x>` |
//! | note | `remember that …`, `please remember …`, `don't forget that …`, `keep in mind that …` | `note:<text>` |
//!
//! Case matters where it should: a name, a place or an employer is a capitalised word, so
//! "I am happy" or "I'm going to lunch" yield nothing. Objects that point at the conversation
//! rather than the user ("I like that idea", "I use it") are rejected. A like and a later
//! dislike of the same thing share a key, so the newer replaces the older; so does a new name.
//!
//! ```
//! use agentmem_agent::auto_memory::{extract_facts, FactCategory};
//! let facts = extract_facts("Hi, I'm John and I prefer Python. I like that idea, but not now.");
//! let found: Vec<_> = facts.iter().map(|f| (f.category, f.value.as_str())).collect();
//! assert_eq!(found, [(FactCategory::Name, "John"), (FactCategory::Preference, "Python")]);
//! assert!(extract_facts("I am happy with it").is_empty());
//! ```

use std::fmt;

use agentmem_core::{MemoryItem, MemoryKind};

use crate::text::{clauses, normalise, truncate};

mod patterns;
mod phrases;
mod words;

/// What a [`Fact`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FactCategory {
    /// The user's name.
    Name,
    /// The user's role or job.
    Role,
    /// Where the user works.
    Employer,
    /// What the user is working on.
    Project,
    /// Where the user lives or comes from.
    Location,
    /// Something the user likes or prefers.
    Preference,
    /// Something the user dislikes.
    Dislike,
    /// A programming language, tool or technology the user uses.
    Tool,
    /// A human language the user speaks.
    Language,
    /// Anything the user explicitly asked to remember.
    Note,
}

impl FactCategory {
    /// The stored name: `name`, `role`, `employer`, `project`, `location`, `preference`,
    /// `dislike`, `tool`, `language`, `note`.
    pub fn as_str(self) -> &'static str {
        match self {
            FactCategory::Name => "name",
            FactCategory::Role => "role",
            FactCategory::Employer => "employer",
            FactCategory::Project => "project",
            FactCategory::Location => "location",
            FactCategory::Preference => "preference",
            FactCategory::Dislike => "dislike",
            FactCategory::Tool => "tool",
            FactCategory::Language => "language",
            FactCategory::Note => "note",
        }
    }

    /// How much the fact matters, from 0 to 1 (kept in the item's metadata as `importance`).
    pub fn importance(self) -> f64 {
        match self {
            FactCategory::Name => 0.9,
            FactCategory::Note => 0.8,
            FactCategory::Role | FactCategory::Project => 0.8,
            FactCategory::Employer | FactCategory::Location => 0.7,
            FactCategory::Preference | FactCategory::Dislike => 0.6,
            FactCategory::Tool | FactCategory::Language => 0.6,
        }
    }
}

impl fmt::Display for FactCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fact about the user, found in a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// What it is about.
    pub category: FactCategory,
    /// The de-duplication key: a later fact with the same key replaces this one.
    pub key: String,
    /// The value as the user wrote it (`John`, `Node.js`, `São Paulo`).
    pub value: String,
    /// A sentence for the system prompt (`The user's name is John.`).
    pub text: String,
}

impl Fact {
    fn new(category: FactCategory, value: &str) -> Fact {
        let value = value.trim().to_string();
        let norm = truncate(&normalise(&value), 200).to_string();
        let (key, text) = match category {
            FactCategory::Name => ("name".to_string(), format!("The user's name is {value}.")),
            FactCategory::Role => ("role".to_string(), format!("The user works as {value}.")),
            FactCategory::Employer => (
                "employer".to_string(),
                format!("The user works at {value}."),
            ),
            FactCategory::Project => (
                "project".to_string(),
                format!("The user is working on {value}."),
            ),
            FactCategory::Location => (
                "location".to_string(),
                format!("The user lives in or comes from {value}."),
            ),
            FactCategory::Preference => {
                (format!("taste:{norm}"), format!("The user likes {value}."))
            }
            FactCategory::Dislike => (
                format!("taste:{norm}"),
                format!("The user dislikes {value}."),
            ),
            FactCategory::Tool => (format!("uses:{norm}"), format!("The user uses {value}.")),
            FactCategory::Language => (
                format!("speaks:{norm}"),
                format!("The user speaks {value}."),
            ),
            FactCategory::Note => (format!("note:{norm}"), format!("Remember: {value}")),
        };
        Fact {
            category,
            key,
            value,
            text,
        }
    }

    fn favourite(thing: &str, value: &str) -> Fact {
        let value = value.trim().to_string();
        Fact {
            category: FactCategory::Preference,
            key: format!("favorite:{}", truncate(&normalise(thing), 100)),
            text: format!("The user's favourite {thing} is {value}."),
            value,
        }
    }

    /// The fact as a [`MemoryKind::Fact`] item keyed by [`Fact::key`], with `category`, `value`
    /// and `importance` in its metadata.
    pub fn to_memory_item(&self) -> MemoryItem {
        MemoryItem::new(MemoryKind::Fact, self.text.clone())
            .with_key(self.key.clone())
            .with_metadata("category", self.category.as_str())
            .with_metadata("value", self.value.clone())
            .with_metadata("importance", self.category.importance())
    }
}

/// Words that open every pattern; a message with none of them is skipped after one scan.
const CUE_WORDS: &[&str] = &[
    "i",
    "i'm",
    "i’m",
    "im",
    "i've",
    "i’ve",
    "my",
    "me",
    "remember",
    "forget",
    "mind",
    "we're",
    "working",
    "building",
    "favorite",
    "favourite",
];

/// The keyword gate: whether `text` may hold a personal fact (one pass over its words).
///
/// ```
/// use agentmem_agent::auto_memory::has_personal_cue;
/// assert!(has_personal_cue("By the way, I'm Ana"));
/// assert!(!has_personal_cue("What is the capital of France?"));
/// ```
pub fn has_personal_cue(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .any(|w| CUE_WORDS.iter().any(|cue| w.eq_ignore_ascii_case(cue)))
}

/// The most facts one message yields: "I use a and b and c and …" is one list, not a
/// thousand writes.
pub const MAX_FACTS_PER_MESSAGE: usize = 16;

/// Every fact found in `text`, in order, at most [`MAX_FACTS_PER_MESSAGE`] (the last ones);
/// empty when the gate finds no cue.
pub fn extract_facts(text: &str) -> Vec<Fact> {
    if !has_personal_cue(text) {
        return Vec::new();
    }
    let mut facts: Vec<Fact> = Vec::new();
    for clause in clauses(text) {
        patterns::extract_from_clause(&clause, &mut facts);
    }
    // One fact per key: the last statement in a message wins, as a later message would.
    // Walking backwards keeps each key's last fact in one pass.
    let mut seen = std::collections::HashSet::new();
    let mut unique: Vec<Fact> = Vec::new();
    for fact in facts.into_iter().rev() {
        if unique.len() == MAX_FACTS_PER_MESSAGE {
            break;
        }
        if seen.insert(fact.key.clone()) {
            unique.push(fact);
        }
    }
    unique.reverse();
    unique
}
