//! Auto-memory extraction on a labelled corpus: precision ≥ 0.95 and recall ≥ 0.8.
//!
//! Each sentence lists the facts a careful reader would store, as (category, value). Half of
//! the sentences hold no fact, many of them traps for naive patterns.

use agentmem_agent::auto_memory::{extract_facts, has_personal_cue, FactCategory};
use FactCategory::*;

type Expected = &'static [(FactCategory, &'static str)];

const CORPUS: &[(&str, Expected)] = &[
    // --- Sentences holding facts ---
    ("My name is Alice.", &[(Name, "Alice")]),
    (
        "Hi, I'm John and I prefer Python.",
        &[(Name, "John"), (Preference, "Python")],
    ),
    ("I am Maria", &[(Name, "Maria")]),
    ("Call me Ishmael.", &[(Name, "Ishmael")]),
    ("my name is bob", &[(Name, "Bob")]),
    ("Hello! I'm Sarah from marketing.", &[(Name, "Sarah")]),
    (
        "I'm Jean-Luc Picard, captain of this ship.",
        &[(Name, "Jean-Luc Picard")],
    ),
    ("I'm a software engineer.", &[(Role, "software engineer")]),
    (
        "I am a data scientist at Spotify.",
        &[(Role, "data scientist"), (Employer, "Spotify")],
    ),
    ("I work as a nurse in a big hospital.", &[(Role, "nurse")]),
    (
        "My job is teaching math to teenagers.",
        &[(Role, "teaching math to teenagers")],
    ),
    ("I'm the CTO of a small startup.", &[(Role, "CTO")]),
    ("I work at Google.", &[(Employer, "Google")]),
    (
        "I work for Bank of America.",
        &[(Employer, "Bank of America")],
    ),
    ("I live in Berlin.", &[(Location, "Berlin")]),
    (
        "I'm from São Paulo, Brazil.",
        &[(Location, "São Paulo, Brazil")],
    ),
    ("I am based in New York.", &[(Location, "New York")]),
    (
        "We moved last year and I live in Lyon now.",
        &[(Location, "Lyon")],
    ),
    ("I moved to Toronto in 2019.", &[(Location, "Toronto")]),
    ("I prefer dark mode.", &[(Preference, "dark mode")]),
    (
        "I like Rust and Go.",
        &[(Preference, "Rust"), (Preference, "Go")],
    ),
    (
        "I really love hiking, but I rarely have time.",
        &[(Preference, "hiking")],
    ),
    ("I enjoy jazz.", &[(Preference, "jazz")]),
    ("I'm a big fan of Star Wars.", &[(Preference, "Star Wars")]),
    ("My favourite editor is Helix.", &[(Preference, "Helix")]),
    ("My favorite color is green", &[(Preference, "green")]),
    (
        "I hate meetings before 10am.",
        &[(Dislike, "meetings before 10am")],
    ),
    ("I don't like spicy food.", &[(Dislike, "spicy food")]),
    ("I can't stand Java.", &[(Dislike, "Java")]),
    ("I'm not a fan of YAML.", &[(Dislike, "YAML")]),
    ("I dislike tabs.", &[(Dislike, "tabs")]),
    ("I use Neovim.", &[(Tool, "Neovim")]),
    (
        "I use Python, Rust and TypeScript.",
        &[(Tool, "Python"), (Tool, "Rust"), (Tool, "TypeScript")],
    ),
    ("I'm using Node.js for the backend.", &[(Tool, "Node.js")]),
    ("I mostly code in C++.", &[(Tool, "C++")]),
    ("I work with Kubernetes every day.", &[(Tool, "Kubernetes")]),
    ("I write code in Haskell.", &[(Tool, "Haskell")]),
    (
        "I speak French and German.",
        &[(Language, "French"), (Language, "German")],
    ),
    ("I usually use a Mac.", &[(Tool, "Mac")]),
    (
        "I'm working on a dashboard for sales.",
        &[(Project, "a dashboard for sales")],
    ),
    ("I'm building a CLI tool.", &[(Project, "a CLI tool")]),
    (
        "My project is an inventory system",
        &[(Project, "an inventory system")],
    ),
    (
        "Remember that my deadline is Friday.",
        &[(Note, "my deadline is Friday")],
    ),
    (
        "Please remember I'm allergic to peanuts.",
        &[(Note, "I'm allergic to peanuts")],
    ),
    (
        "Don't forget that the API key rotates monthly.",
        &[(Note, "the API key rotates monthly")],
    ),
    (
        "Keep in mind that staging is down on Sundays.",
        &[(Note, "staging is down on Sundays")],
    ),
    ("By the way, I'm Priya.", &[(Name, "Priya")]),
    ("I am a student.", &[(Role, "student")]),
    (
        "Thanks! I'm Tom, I use Emacs.",
        &[(Name, "Tom"), (Tool, "Emacs")],
    ),
    (
        "I work as a freelance translator.",
        &[(Role, "freelance translator")],
    ),
    ("I am an iOS developer", &[(Role, "iOS developer")]),
    ("I live near Oslo.", &[(Location, "Oslo")]),
    // Written after the matchers, as a held-out check.
    (
        "Hey there, my name's Kofi and I live in Accra.",
        &[(Name, "Kofi"), (Location, "Accra")],
    ),
    (
        "I'm Lena. I work at Siemens as an electrical engineer.",
        &[(Name, "Lena"), (Employer, "Siemens")],
    ),
    (
        "I'm a backend developer and I use Go at work.",
        &[(Role, "backend developer"), (Tool, "Go")],
    ),
    ("I prefer short answers.", &[(Preference, "short answers")]),
    (
        "I don't enjoy long meetings.",
        &[(Dislike, "long meetings")],
    ),
    (
        "Please remember that I'm vegetarian.",
        &[(Note, "I'm vegetarian")],
    ),
    ("I am from Kyoto, Japan", &[(Location, "Kyoto, Japan")]),
    ("I'm Dr. Chen.", &[(Name, "Chen")]),
    (
        "I usually write code in Kotlin and Swift.",
        &[(Tool, "Kotlin"), (Tool, "Swift")],
    ),
    (
        "My favourite language is Elixir.",
        &[(Preference, "Elixir")],
    ),
    // --- Sentences holding no fact (many are traps) ---
    ("I'm going to lunch.", &[]),
    ("I am happy with it.", &[]),
    ("I like that idea, but let's wait.", &[]),
    ("I like it.", &[]),
    ("I love this!", &[]),
    ("I am not sure.", &[]),
    ("I'm tired today.", &[]),
    ("I am a bit confused by the output.", &[]),
    ("I'm a little worried about the deadline.", &[]),
    ("I'm sorry, that was my mistake.", &[]),
    ("I'm done.", &[]),
    ("I am Going to check later.", &[]),
    ("I use it every day.", &[]),
    ("I'm using the wrong file.", &[]),
    ("I like the new design.", &[]),
    ("I prefer to wait.", &[]),
    ("I would like a summary.", &[]),
    ("I'd like to book a table.", &[]),
    ("Do you remember what I asked?", &[]),
    ("I remember the old API.", &[]),
    ("What is the capital of France?", &[]),
    ("Summarise the logs please.", &[]),
    ("Can you fix the failing test?", &[]),
    ("The build is broken again.", &[]),
    ("It works now, thanks.", &[]),
    ("I'm working on it.", &[]),
    ("I'm from the future, obviously.", &[]),
    ("I am in a meeting.", &[]),
    ("I live in a small town.", &[]),
    ("Call me back tomorrow.", &[]),
    ("I'm here.", &[]),
    ("I am English.", &[]),
    ("I like you.", &[]),
    ("I hate when that happens.", &[]),
    ("I don't like that approach.", &[]),
    ("My code doesn't compile.", &[]),
    ("My name is not important.", &[]),
    ("I am ready", &[]),
    ("Note that the API changed in v2.", &[]),
    ("I work in finance.", &[]),
    ("I'm Happy to help.", &[]),
    ("I am so glad it worked!", &[]),
    ("Let me know when you are done.", &[]),
    ("I think I need more coffee.", &[]),
    ("I'm not a robot.", &[]),
    ("Remember to run the tests.", &[]),
    ("We're working on it.", &[]),
    ("I'm Feeling lucky today.", &[]),
    ("I like how you did that.", &[]),
    ("I use to play guitar.", &[]),
    ("I'm in Paris for a conference.", &[]),
    ("I am a vegetarian.", &[]),
    ("I'm a fan of what you did there.", &[]),
    ("I am Afraid that won't work.", &[]),
    ("I'm on it.", &[]),
    ("I like to keep things simple.", &[]),
    ("I use the default settings.", &[]),
    ("I am responsible for the outage.", &[]),
    ("I'm having trouble with the login page.", &[]),
    ("My favourite part is the ending, honestly.", &[]),
    ("I love how clean this is.", &[]),
    ("I hate to say it, but you're right.", &[]),
    ("I prefer not to say.", &[]),
];

fn key(category: FactCategory, value: &str) -> (FactCategory, String) {
    (category, value.to_lowercase())
}

#[test]
fn corpus_is_large_and_balanced() {
    let with = CORPUS.iter().filter(|(_, e)| !e.is_empty()).count();
    let without = CORPUS.len() - with;
    assert!(CORPUS.len() >= 80, "{} sentences", CORPUS.len());
    assert!(
        without * 2 >= CORPUS.len() - 2,
        "{without} of {} hold no fact",
        CORPUS.len()
    );
}

#[test]
fn extraction_precision_and_recall_meet_the_bar() {
    let (mut true_pos, mut false_pos, mut expected_total) = (0usize, 0usize, 0usize);
    let mut report = String::new();
    for (sentence, expected) in CORPUS {
        let expected: Vec<_> = expected.iter().map(|(c, v)| key(*c, v)).collect();
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
