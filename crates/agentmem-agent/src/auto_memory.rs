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

use crate::text::{clauses, normalise, truncate, Clause};

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
        extract_from_clause(&clause, &mut facts);
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

/// Words that end an object phrase.
const STOPS: &[&str] = &[
    "but", "because", "since", "although", "though", "so", "when", "if", "unless", "while",
    "whereas", "which", "who", "except", "then", "too", "as", "and", "or",
];

/// Words that end a tool's name: "Node.js for the backend" is Node.js.
const TOOL_STOPS: &[&str] = &[
    "for", "in", "at", "on", "with", "to", "every", "daily", "at", "mostly", "now", "these",
    "nowadays", "instead", "because", "all", "most", "since", "from",
];

/// First words that make an object refer to the conversation, not to the user.
const VAGUE: &[&str] = &[
    "it",
    "that",
    "this",
    "these",
    "those",
    "you",
    "your",
    "yours",
    "him",
    "her",
    "them",
    "me",
    "us",
    "what",
    "how",
    "when",
    "where",
    "why",
    "which",
    "who",
    "to",
    "if",
    "so",
    "very",
    "too",
    "such",
    "here",
    "there",
    "the",
    "a",
    "an",
    "lot",
    "much",
    "some",
    "something",
    "anything",
    "everything",
    "nothing",
    "stuff",
    "things",
    "not",
    "no",
    "one",
    "all",
    "both",
    "being",
    "doing",
    "having",
    "getting",
    "going",
    "working",
    "thinking",
    "about",
    "with",
    "of",
    "at",
    "in",
    "on",
    "for",
    "from",
    "by",
    "myself",
    "yourself",
    "back",
    "up",
    "out",
    "more",
    "less",
    "again",
    "now",
    "today",
    "tomorrow",
    "yesterday",
    "later",
    "sure",
    "really",
];

/// Capitalised words that are not names after "I am" / "call me".
const NOT_NAMES: &[&str] = &[
    "i",
    "not",
    "the",
    "a",
    "an",
    "so",
    "very",
    "just",
    "also",
    "really",
    "sorry",
    "here",
    "back",
    "done",
    "fine",
    "good",
    "great",
    "ok",
    "okay",
    "sure",
    "ready",
    "happy",
    "sad",
    "tired",
    "busy",
    "going",
    "in",
    "on",
    "at",
    "from",
    "with",
    "afraid",
    "glad",
    "new",
    "still",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "english",
    "french",
    "german",
    "spanish",
    "italian",
    "american",
    "british",
    "canadian",
    "indian",
    "chinese",
    "japanese",
    "korean",
    "russian",
    "brazilian",
    "mexican",
    "australian",
    "dutch",
    "swedish",
    "polish",
    "irish",
    "scottish",
    "european",
    "asian",
    "african",
    "christian",
    "muslim",
    "jewish",
    "hindu",
    "buddhist",
    "catholic",
    "vegan",
    "vegetarian",
    "human",
    "ai",
    "a.i",
    "bot",
    "online",
    "offline",
    "home",
    "away",
    "late",
    "early",
    "tomorrow",
    "today",
    "yesterday",
    "later",
    "soon",
    "always",
    "never",
    "your",
    "you",
    "he",
    "she",
    "we",
    "they",
    "it",
    "this",
    "that",
    "what",
    "who",
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank",
    "please",
    "well",
    "yes",
    "no",
    "python",
    "rust",
    "java",
    "gonna",
    "trying",
    "looking",
    "working",
    "using",
    "writing",
    "building",
    "learning",
    "feeling",
    "about",
    "actually",
    "only",
    "sometimes",
];

/// Last words of a role after "I am a/an/the …".
const ROLE_NOUNS: &[&str] = &[
    "developer",
    "engineer",
    "programmer",
    "coder",
    "designer",
    "manager",
    "scientist",
    "analyst",
    "student",
    "teacher",
    "researcher",
    "doctor",
    "nurse",
    "lawyer",
    "writer",
    "architect",
    "consultant",
    "founder",
    "cofounder",
    "co-founder",
    "ceo",
    "cto",
    "cfo",
    "coo",
    "vp",
    "director",
    "administrator",
    "admin",
    "sysadmin",
    "devops",
    "sre",
    "intern",
    "professor",
    "lecturer",
    "accountant",
    "artist",
    "musician",
    "journalist",
    "editor",
    "marketer",
    "freelancer",
    "contractor",
    "lead",
    "specialist",
    "technician",
    "tester",
    "owner",
    "entrepreneur",
    "physicist",
    "chemist",
    "biologist",
    "mathematician",
    "economist",
    "translator",
    "photographer",
    "recruiter",
    "chef",
    "pilot",
    "pharmacist",
    "dentist",
    "therapist",
    "psychologist",
    "officer",
    "executive",
    "president",
    "maintainer",
    "contributor",
    "hacker",
    "statistician",
    "librarian",
    "historian",
    "clerk",
    "trader",
    "banker",
    "investor",
    "salesperson",
    "advisor",
    "adviser",
    "coach",
    "mentor",
    "tutor",
    "instructor",
    "pm",
    "qa",
    "ux",
    "webdev",
    "dev",
    "phd",
    "postdoc",
    "undergrad",
];

/// Adverbs allowed between "I" and a verb ("I really like …").
const ADVERBS: &[&str] = &[
    "really",
    "also",
    "absolutely",
    "totally",
    "mostly",
    "mainly",
    "usually",
    "generally",
    "always",
    "still",
    "primarily",
    "definitely",
    "actually",
    "just",
    "kinda",
    "honestly",
    "typically",
    "normally",
    "often",
    "currently",
    "now",
    "personally",
    "sometimes",
];

fn is_in(word: &str, list: &[&str]) -> bool {
    list.contains(&word)
}

/// Skips adverbs from `i`; returns the index of the next word.
fn skip_adverbs(c: &Clause<'_>, mut i: usize) -> usize {
    while is_in(c.lower(i), ADVERBS) {
        i += 1;
    }
    i
}

/// Whether the phrase ends at word `i`: the clause ends, a pause follows, or a word that
/// usually links to another clause.
fn phrase_ends_at(c: &Clause<'_>, i: usize) -> bool {
    i >= c.words.len()
        || c.pause_before(i)
        || is_in(
            c.lower(i),
            &[
                "and",
                "but",
                "from",
                "here",
                "by",
                "btw",
                "though",
                "so",
                "nice",
                "speaking",
                "by the way",
                "too",
                "again",
                "lol",
            ],
        )
}

/// A name at word `i`: one or two words, capitalised unless `lenient`, followed by the end
/// of the phrase. Returns the value and the index after it.
fn name_at(c: &Clause<'_>, i: usize, lenient: bool) -> Option<(String, usize)> {
    let ok = |k: usize, first: bool| {
        let w = c.words.get(k)?;
        let word = c.original(k);
        let alphabetic = !w.synthetic
            && word
                .chars()
                .all(|ch| ch.is_alphabetic() || ch == '-' || ch == '\'')
            && word.chars().any(char::is_alphabetic);
        let shaped = c.is_capitalised(k) || (lenient && first);
        (alphabetic && shaped && !is_in(&w.lower, NOT_NAMES)).then_some(())
    };
    ok(i, true)?;
    let mut end = i + 1;
    if !c.pause_before(end) && ok(end, false).is_some() {
        end += 1;
    }
    if !phrase_ends_at(c, end) {
        return None;
    }
    let value = c.span(i, end);
    let mut chars = value.chars();
    let capitalised = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => return None,
    };
    Some((capitalised, end))
}

/// A run of capitalised words from `i` (a place or company), allowing "Paris, France",
/// "New York" and lowercase joiners inside ("Bank of America", "Rio de Janeiro").
fn proper_noun_at(c: &Clause<'_>, i: usize) -> Option<(String, usize)> {
    if !c.is_capitalised(i) || is_in(c.lower(i), &["i", "the", "a", "an"]) {
        return None;
    }
    let mut end = i + 1;
    loop {
        if c.is_capitalised(end) && !c.pause_before(end) {
            end += 1;
        } else if is_in(c.lower(end), &["of", "de", "del", "da", "la", "le", "upon"])
            && !c.pause_before(end)
            && c.is_capitalised(end + 1)
        {
            end += 2;
        } else if c.pause_before(end) && c.is_capitalised(end) && !is_in(c.lower(end), &["i"]) {
            // "Paris, France": a comma followed by another capitalised place.
            end += 1;
        } else {
            break;
        }
    }
    Some((c.span(i, end).to_string(), end))
}

/// An object phrase from `i`: up to `max` words until a pause or a linking word; `None` when
/// it is empty or points at the conversation ("it", "that idea", "the …").
fn object_at(
    c: &Clause<'_>,
    i: usize,
    max: usize,
    extra_stops: &[&str],
) -> Option<(String, usize)> {
    let first = c.words.get(i)?;
    if first.synthetic || is_in(&first.lower, VAGUE) {
        return None;
    }
    let mut end = i + 1;
    while end < c.words.len()
        && end - i < max
        && !c.pause_before(end)
        && !is_in(c.lower(end), STOPS)
        && !is_in(c.lower(end), extra_stops)
    {
        end += 1;
    }
    // A long tail means a clause, not a thing ("I like it when …" is caught above; "I prefer
    // meetings that start late on Fridays" is not a taste worth a key).
    if end < c.words.len()
        && end - i >= max
        && !c.pause_before(end)
        && !is_in(c.lower(end), STOPS)
        && !is_in(c.lower(end), extra_stops)
    {
        return None;
    }
    Some((c.span(i, end).to_string(), end))
}

/// Items of a list from `i` ("Python, Rust and Go"), each an object phrase of at most `max`
/// words (capitalised when `capitalised`); stops at the first item that is not one.
fn list_at(
    c: &Clause<'_>,
    mut i: usize,
    max: usize,
    capitalised: bool,
    extra_stops: &[&str],
) -> Vec<String> {
    let mut items = Vec::new();
    loop {
        // An article is allowed before a capitalised thing: "a Mac", "the JetBrains IDEs".
        if is_in(c.lower(i), &["a", "an", "the"]) && c.is_capitalised(i + 1) {
            i += 1;
        }
        if capitalised && !c.is_capitalised(i) {
            break;
        }
        let Some((value, end)) = object_at(c, i, max, extra_stops) else {
            break;
        };
        items.push(value);
        i = end;
        if is_in(c.lower(i), &["and", "or"]) {
            i += 1;
        } else if c.pause_before(i) {
            // "Python, Rust and Go" or "Python, Rust": a comma continues the list only when a
            // capitalised item or a closing "and"/"or" follows, not "Python, thanks".
            let closes = (i..c.words.len()).any(|k| is_in(c.lower(k), &["and", "or"]));
            if !(c.is_capitalised(i) || closes) {
                break;
            }
        } else {
            break;
        }
        if i >= c.words.len() || is_in(c.lower(i), &["i", "but", "because", "so", "then"]) {
            break;
        }
    }
    items
}

fn extract_from_clause(c: &Clause<'_>, facts: &mut Vec<Fact>) {
    let n = c.words.len();
    let mut i = 0;
    while i < n {
        let before = facts.len();
        let next = match_at(c, i, facts);
        i = if facts.len() > before {
            next.max(i + 1)
        } else {
            i + 1
        };
    }
}

/// Tries every pattern at word `i`; pushes what it finds and returns where to continue.
fn match_at(c: &Clause<'_>, i: usize, facts: &mut Vec<Fact>) -> usize {
    let w = c.lower(i);
    match w {
        "my" => match_my(c, i, facts),
        "i" => match_i(c, i, facts),
        "call"
            if c.has_at(i + 1, &["me"])
                && (i == 0
                    || is_in(
                        c.lower(i - 1),
                        &["please", "just", "can", "could", "to", "you"],
                    )) =>
        {
            if let Some((name, end)) = name_at(c, i + 2, false) {
                facts.push(Fact::new(FactCategory::Name, &name));
                return end;
            }
            i + 1
        }
        "remember" | "forget" | "keep" | "note" => match_note(c, i, facts),
        "we" if c.has_at(i + 1, &["are", "working", "on"])
            || c.has_at(i + 1, &["are", "building"]) =>
        {
            let at = if c.lower(i + 2) == "working" {
                i + 4
            } else {
                i + 3
            };
            project_at(c, at, facts)
        }
        _ => i + 1,
    }
}

fn project_at(c: &Clause<'_>, at: usize, facts: &mut Vec<Fact>) -> usize {
    // "a dashboard", "an app" are projects; "it", "that" are not.
    let start = if is_in(c.lower(at), &["a", "an", "the", "my", "our"]) {
        at + 1
    } else {
        at
    };
    if let Some((_, end)) = object_at(c, start, 10, &[]) {
        let value = c.span(at, end);
        facts.push(Fact::new(FactCategory::Project, value));
        return end;
    }
    at
}

fn match_my(c: &Clause<'_>, i: usize, facts: &mut Vec<Fact>) -> usize {
    if c.has_at(i + 1, &["name", "is"]) {
        if let Some((name, end)) = name_at(c, i + 3, true) {
            facts.push(Fact::new(FactCategory::Name, &name));
            return end;
        }
    } else if c.has_at(i + 1, &["job", "is"])
        || c.has_at(i + 1, &["role", "is"])
        || c.has_at(i + 1, &["title", "is"])
        || c.has_at(i + 1, &["profession", "is"])
    {
        return role_phrase(c, i + 3, false, facts);
    } else if c.has_at(i + 1, &["project", "is"]) {
        return project_at(c, i + 3, facts);
    } else if c.has_at(i + 1, &["location", "is"]) || c.has_at(i + 1, &["hometown", "is"]) {
        if let Some((place, end)) = proper_noun_at(c, i + 3) {
            facts.push(Fact::new(FactCategory::Location, &place));
            return end;
        }
    } else if is_in(c.lower(i + 1), &["favorite", "favourite"]) {
        // "my favourite editor is Helix", "my favorite language is Rust"
        let mut k = i + 2;
        while k < c.words.len() && k < i + 5 && c.lower(k) != "is" {
            k += 1;
        }
        if c.lower(k) == "is" && k > i + 2 {
            let thing = c.span(i + 2, k);
            if let Some((value, end)) = object_at(c, k + 1, 5, &[]) {
                facts.push(Fact::favourite(thing, &value));
                return end;
            }
        }
    } else if c.has_at(i + 1, &["stack", "is"]) || c.has_at(i + 1, &["stack", "includes"]) {
        let items = list_at(c, i + 3, 3, false, TOOL_STOPS);
        let found = !items.is_empty();
        for item in items {
            facts.push(Fact::new(FactCategory::Tool, &item));
        }
        if found {
            return c.words.len();
        }
    }
    i + 1
}

fn match_i(c: &Clause<'_>, i: usize, facts: &mut Vec<Fact>) -> usize {
    let v = skip_adverbs(c, i + 1);
    let verb = c.lower(v);
    match verb {
        "am" => match_i_am(c, v + 1, facts),
        "prefer" | "like" | "love" | "enjoy" | "adore" => {
            taste(c, v + 1, FactCategory::Preference, facts)
        }
        "dislike" | "hate" | "detest" | "loathe" => taste(c, v + 1, FactCategory::Dislike, facts),
        "do" | "can" | "really" if c.lower(v + 1) == "not" => {
            let w = skip_adverbs(c, v + 2);
            match c.lower(w) {
                "like" | "enjoy" | "love" if verb == "do" => {
                    taste(c, w + 1, FactCategory::Dislike, facts)
                }
                "stand" | "bear" if verb == "can" => taste(c, w + 1, FactCategory::Dislike, facts),
                _ => v + 1,
            }
        }
        "use" => tools(c, v + 1, facts),
        "code" | "program" | "develop" | "write" | "work" | "build" | "script"
            if c.has_at(v + 1, &["in"]) && (verb != "work" || c.is_capitalised(v + 2)) =>
        {
            // "I work in Python" is a language; "I work in finance" is not, so "work in" needs
            // a capitalised word. "I write code in Rust" is handled below.
            tools(c, v + 2, facts)
        }
        "write" if c.has_at(v + 1, &["code", "in"]) => tools(c, v + 3, facts),
        "work" if c.has_at(v + 1, &["with"]) => tools(c, v + 2, facts),
        "work" if c.has_at(v + 1, &["as"]) => role_phrase(c, v + 2, false, facts),
        "work" if is_in(c.lower(v + 1), &["at", "for"]) => {
            if let Some((company, end)) = proper_noun_at(c, v + 2) {
                facts.push(Fact::new(FactCategory::Employer, &company));
                return end;
            }
            v + 1
        }
        "live" if is_in(c.lower(v + 1), &["in", "near"]) => location(c, v + 2, facts),
        "moved" | "relocated" if c.lower(v + 1) == "to" => location(c, v + 2, facts),
        "speak" => {
            let langs = list_at(c, v + 1, 1, true, &[]);
            if langs.is_empty() {
                return v + 1;
            }
            for lang in langs {
                facts.push(Fact::new(FactCategory::Language, &lang));
            }
            c.words.len()
        }
        _ => v,
    }
}

fn match_i_am(c: &Clause<'_>, a: usize, facts: &mut Vec<Fact>) -> usize {
    let a = skip_adverbs(c, a);
    match c.lower(a) {
        "a" | "an" | "the" => {
            if c.has_at(a + 1, &["fan", "of"]) || c.has_at(a + 2, &["fan", "of"]) {
                let at = if c.lower(a + 1) == "fan" {
                    a + 3
                } else {
                    a + 4
                };
                return taste(c, at, FactCategory::Preference, facts);
            }
            role_phrase(c, a + 1, true, facts)
        }
        "not"
            if c.has_at(a + 1, &["a", "fan", "of"])
                || c.has_at(a + 1, &["a", "big", "fan", "of"]) =>
        {
            let at = if c.lower(a + 2) == "fan" {
                a + 4
            } else {
                a + 5
            };
            taste(c, at, FactCategory::Dislike, facts)
        }
        "from" => location(c, a + 1, facts),
        "based" | "located" | "living" if is_in(c.lower(a + 1), &["in", "near", "out"]) => {
            let at = if c.lower(a + 1) == "out" {
                a + 3
            } else {
                a + 2
            };
            location(c, at, facts)
        }
        "using" => tools(c, a + 1, facts),
        "working" if c.lower(a + 1) == "on" => project_at(c, a + 2, facts),
        "working" if c.lower(a + 1) == "as" => role_phrase(c, a + 2, false, facts),
        "working" if is_in(c.lower(a + 1), &["at", "for"]) => {
            if let Some((company, end)) = proper_noun_at(c, a + 2) {
                facts.push(Fact::new(FactCategory::Employer, &company));
                return end;
            }
            a
        }
        "building" | "developing" | "creating" => project_at(c, a + 1, facts),
        "called" | "named" => {
            if let Some((name, end)) = name_at(c, a + 1, false) {
                facts.push(Fact::new(FactCategory::Name, &name));
                return end;
            }
            a
        }
        _ => {
            if let Some((name, end)) = name_at(c, a, false) {
                facts.push(Fact::new(FactCategory::Name, &name));
                return end;
            }
            a
        }
    }
}

/// A role phrase from `at`; with `need_noun` it must end in a known role noun (after "I am a").
fn role_phrase(c: &Clause<'_>, at: usize, need_noun: bool, facts: &mut Vec<Fact>) -> usize {
    let start = if is_in(c.lower(at), &["a", "an", "the"]) {
        at + 1
    } else {
        at
    };
    let mut end = start;
    while end < c.words.len()
        && end - start < 5
        && !(end > start && c.pause_before(end))
        && !is_in(
            c.lower(end),
            &[
                "at", "for", "in", "with", "from", "and", "but", "who", "that", "on", "of",
            ],
        )
    {
        end += 1;
    }
    if end == start || is_in(c.lower(start), VAGUE) {
        return at;
    }
    if need_noun && !is_in(c.lower(end - 1), ROLE_NOUNS) {
        return at;
    }
    facts.push(Fact::new(FactCategory::Role, c.span(start, end)));
    // "a developer at Google": the employer comes with it.
    if is_in(c.lower(end), &["at", "for"]) {
        if let Some((company, after)) = proper_noun_at(c, end + 1) {
            facts.push(Fact::new(FactCategory::Employer, &company));
            return after;
        }
    }
    end
}

fn location(c: &Clause<'_>, at: usize, facts: &mut Vec<Fact>) -> usize {
    if let Some((place, end)) = proper_noun_at(c, at) {
        facts.push(Fact::new(FactCategory::Location, &place));
        return end;
    }
    at
}

fn taste(c: &Clause<'_>, at: usize, category: FactCategory, facts: &mut Vec<Fact>) -> usize {
    let items = list_at(c, at, 4, false, &[]);
    if items.is_empty() {
        return at;
    }
    for item in items {
        facts.push(Fact::new(category, &item));
    }
    c.words.len()
}

fn tools(c: &Clause<'_>, at: usize, facts: &mut Vec<Fact>) -> usize {
    let items = list_at(c, at, 3, false, TOOL_STOPS);
    if items.is_empty() {
        return at;
    }
    for item in items {
        facts.push(Fact::new(FactCategory::Tool, &item));
    }
    c.words.len()
}

/// "remember that …", "please remember: …", "don't forget that …", "keep in mind that …".
fn match_note(c: &Clause<'_>, i: usize, facts: &mut Vec<Fact>) -> usize {
    // Only an instruction to the assistant: at the start of the clause, after at most a polite
    // word ("please", "also", "and"), never "do you remember …" or "I remember …".
    let mut s = 0;
    while is_in(
        c.lower(s),
        &[
            "please", "also", "and", "oh", "hey", "btw", "just", "pls", "so", "ok", "okay",
        ],
    ) {
        s += 1;
    }
    let starts = match c.lower(i) {
        "remember" => i == s,
        "forget" => i == s + 2 && c.has_at(s, &["do", "not"]),
        "keep" => i == s && c.has_at(i + 1, &["in", "mind"]),
        // "note that …" is common in prose; only "please note that …" is an instruction.
        "note" => i == s && s > 0 && c.lower(s - 1) == "please" && c.lower(i + 1) == "that",
        _ => false,
    };
    if !starts {
        return i + 1;
    }
    let mut at = match c.lower(i) {
        "keep" => i + 3,
        _ => i + 1,
    };
    if c.lower(at) == "to" || c.lower(at) == "me" || c.lower(at) == "when" || c.lower(at) == "what"
    {
        // "remember to …" is a rule (see learning); "remember what …" a question.
        return i + 1;
    }
    if c.lower(at) == "that" {
        at += 1;
    }
    let rest = c.rest(at);
    if rest.split_whitespace().count() < 2 {
        return i + 1;
    }
    facts.push(Fact::new(FactCategory::Note, rest));
    c.words.len()
}
