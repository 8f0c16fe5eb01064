//! Reading one phrase of a clause: a name, a proper noun, an object, a list of objects, and
//! where a phrase ends.

use crate::text::Clause;

use super::words::{is_in, ADVERBS, NOT_NAMES, STOPS, VAGUE};

/// Skips adverbs from `i`; returns the index of the next word.
pub(super) fn skip_adverbs(c: &Clause<'_>, mut i: usize) -> usize {
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
pub(super) fn name_at(c: &Clause<'_>, i: usize, lenient: bool) -> Option<(String, usize)> {
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
pub(super) fn proper_noun_at(c: &Clause<'_>, i: usize) -> Option<(String, usize)> {
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
pub(super) fn object_at(
    c: &Clause<'_>, i: usize, max: usize, extra_stops: &[&str],
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
pub(super) fn list_at(
    c: &Clause<'_>, mut i: usize, max: usize, capitalised: bool, extra_stops: &[&str],
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
