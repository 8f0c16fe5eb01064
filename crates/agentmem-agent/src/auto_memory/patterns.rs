//! The patterns of the table in the module docs, tried at each word of a clause; each pushes
//! the facts it finds.

use crate::text::Clause;

use super::phrases::{list_at, name_at, object_at, proper_noun_at, skip_adverbs};
use super::words::{is_in, ROLE_NOUNS, TOOL_STOPS, VAGUE};
use super::{Fact, FactCategory};

/// Pushes every fact of one clause: the patterns are tried at each word, and a match
/// continues after the words it took.
pub(super) fn extract_from_clause(c: &Clause<'_>, facts: &mut Vec<Fact>) {
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
