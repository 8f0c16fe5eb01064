//! Auto-memory extraction on a labelled corpus: precision ≥ 0.95 and recall ≥ 0.8.
//!
//! Each sentence of `data/auto_memory_corpus.txt` lists the facts a careful reader would store,
//! as (category, value). Half of the sentences hold no fact, many of them traps for naive
//! patterns.

use agentmem_agent::auto_memory::{extract_facts, has_personal_cue, FactCategory};
use FactCategory::*;

/// The labelled corpus (its header says how it is written).
const CORPUS: &str = include_str!("data/auto_memory_corpus.txt");

/// Every category, to read them back by their stored names.
const CATEGORIES: [FactCategory; 10] = [
    Name, Role, Employer, Project, Location, Preference, Dislike, Tool, Language, Note,
];

/// A fact as the corpus and the extractor are compared: its category and lower-cased value.
type Key = (FactCategory, String);

/// The [`Key`] of a fact in `category` with `value`.
fn key(category: FactCategory, value: &str) -> Key {
    (category, value.to_lowercase())
}

/// The corpus's sentences, each with the facts it holds ([`key`]s), in file order.
fn corpus() -> Vec<(&'static str, Vec<Key>)> {
    CORPUS
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.starts_with('#'))
        .map(|(index, line)| {
            let at = || format!("corpus line {}: {line:?}", index + 1);
            let (sentence, facts) = line
                .split_once(" =>")
                .unwrap_or_else(|| panic!("{}: no ` =>`", at()));
            let facts = facts
                .split(';')
                .map(str::trim)
                .filter(|fact| !fact.is_empty())
                .map(|fact| {
                    let (name, value) = fact
                        .split_once('=')
                        .unwrap_or_else(|| panic!("{}: `{fact}` is not category=value", at()));
                    let category = CATEGORIES
                        .into_iter()
                        .find(|c| c.as_str() == name)
                        .unwrap_or_else(|| panic!("{}: no category `{name}`", at()));
                    key(category, value)
                })
                .collect();
            (sentence, facts)
        })
        .collect()
}

#[test]
fn corpus_is_large_and_balanced() {
    let corpus = corpus();
    let with = corpus.iter().filter(|(_, e)| !e.is_empty()).count();
    let without = corpus.len() - with;
    assert!(corpus.len() >= 80, "{} sentences", corpus.len());
    assert!(
        without * 2 >= corpus.len() - 2,
        "{without} of {} hold no fact",
        corpus.len()
    );
}

#[test]
fn extraction_precision_and_recall_meet_the_bar() {
    let (mut true_pos, mut false_pos, mut expected_total) = (0usize, 0usize, 0usize);
    let mut report = String::new();
    for (sentence, expected) in corpus() {
        let found: Vec<_> = extract_facts(sentence)
            .iter()
            .map(|f| key(f.category, &f.value))
            .collect();
        expected_total += expected.len();
        for f in &found {
            if expected.contains(f) {
                true_pos += 1;
            } else {
                false_pos += 1;
                report.push_str(&format!("  false positive {f:?} in {sentence:?}\n"));
            }
        }
        for e in &expected {
            if !found.contains(e) {
                report.push_str(&format!("  missed {e:?} in {sentence:?}\n"));
            }
        }
    }
    let precision = true_pos as f64 / (true_pos + false_pos).max(1) as f64;
    let recall = true_pos as f64 / expected_total.max(1) as f64;
    eprintln!("precision {precision:.3}, recall {recall:.3}\n{report}");
    assert!(precision >= 0.95, "precision {precision:.3}\n{report}");
    assert!(recall >= 0.8, "recall {recall:.3}\n{report}");
}

#[test]
fn names_must_be_capitalised_words() {
    for trap in [
        "I am happy",
        "I'm going to lunch",
        "I am hungry",
        "i am bob",
    ] {
        assert!(
            extract_facts(trap).iter().all(|f| f.category != Name),
            "{trap:?} is not a name"
        );
    }
    let facts = extract_facts("I am Bob");
    assert_eq!(facts[0].value, "Bob");
    assert_eq!(facts[0].key, "name");
}

#[test]
fn keys_make_later_facts_replace_earlier_ones() {
    let alice = &extract_facts("My name is Alice")[0];
    let bob = &extract_facts("Actually, my name is Bob")[0];
    assert_eq!(alice.key, bob.key);
    let like = &extract_facts("I like YAML")[0];
    let dislike = &extract_facts("I hate YAML")[0];
    assert_eq!(
        like.key, dislike.key,
        "a taste changes rather than piling up"
    );
    assert_ne!(
        extract_facts("I use Rust")[0].key,
        extract_facts("I use Go")[0].key
    );
    let item = bob.to_memory_item();
    assert_eq!(item.kind, agentmem_core::MemoryKind::Fact);
    assert_eq!(item.key.as_deref(), Some("name"));
    assert_eq!(item.text, "The user's name is Bob.");
    assert_eq!(item.metadata["category"], "name");
}

#[test]
fn the_gate_skips_messages_without_cues() {
    for plain in [
        "What is 2 + 2?",
        "Summarise the logs",
        "The build is green",
        "",
    ] {
        assert!(!has_personal_cue(plain), "{plain:?}");
        assert!(extract_facts(plain).is_empty());
    }
    for cued in ["my name is Bob", "I'm here", "Remember this", "im tired"] {
        assert!(has_personal_cue(cued), "{cued:?}");
    }
}

#[test]
fn odd_input_never_panics() {
    for odd in [
        "I",
        "I am",
        "my name is",
        "I'm a",
        "call me",
        "remember that",
        "I like ,,,",
        "I'm ünïcødé Ñame",
        "I'm 🦀 and I like 🦀",
        "I am a a a a a a a a developer",
        "I use , and , or",
    ] {
        let _ = extract_facts(odd);
    }
    let long = "I like Rust ".repeat(10_000);
    assert!(!extract_facts(&long).is_empty());
}

/// A message listing thousands of tools yields a bounded number of facts (the last ones), in
/// one linear pass, not one write per item.
#[test]
fn facts_per_message_are_bounded() {
    use agentmem_agent::auto_memory::MAX_FACTS_PER_MESSAGE;
    let tools: Vec<String> = (0..5_000).map(|i| format!("tool{i}")).collect();
    let text = format!("I use {}", tools.join(" and "));
    let facts = extract_facts(&text);
    assert!(!facts.is_empty(), "the list is still remembered");
    assert!(
        facts.len() <= MAX_FACTS_PER_MESSAGE,
        "{} facts",
        facts.len()
    );
    let keys: std::collections::HashSet<&str> = facts.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys.len(), facts.len(), "one fact per key");
    assert!(
        facts.iter().any(|f| f.value == "tool4999"),
        "the last statement wins: {:?}",
        facts.iter().map(|f| &f.value).collect::<Vec<_>>()
    );
}
