//! Fuzzing the importers of `agentmem_formats` (which the CLI uses): agentmem's own JSON lines, JSON and
//! YAML exports, PraisonAI session JSON and Swarms agent folders' `MEMORY.md`. Random text
//! and structured mutations of valid exports never panic; every refusal is a typed error
//! (`CorruptData` for malformed input, `InvalidInput`/`Unsupported` for a valid file the
//! store cannot take), and an unmutated export parses back to what was written.
mod common;

use agentmem_core::{ErrorKind, MemoryItem, MemoryKind, Message, SessionId};
use agentmem_formats::{
    canonicalize, json, jsonl, praisonai, swarms, yaml, ArchiveExport, ExportDocument,
    SessionExport,
};
use common::fuzz::{config, mutate, mutation, nasty_string};
use proptest::prelude::*;

fn typed(what: &str, e: &agentmem_core::Error) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(
            e.kind(),
            ErrorKind::CorruptData | ErrorKind::InvalidInput | ErrorKind::Unsupported
        ),
        "{what}: {e}"
    );
    Ok(())
}

fn document(contents: &[String]) -> ExportDocument {
    let id: SessionId = "ResearchAgent".parse().unwrap();
    let messages: Vec<Message> = contents.iter().map(Message::user).collect();
    let mut session = SessionExport::new(id);
    session.archives = vec![ArchiveExport::new(
        messages.iter().take(2).cloned().collect(),
    )];
    session.messages = messages;
    let mut doc = ExportDocument::new();
    doc.sessions.push(session);
    doc.memories
        .push(MemoryItem::new(MemoryKind::Fact, "remembered").with_key("k"));
    canonicalize(&mut doc);
    doc
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_text_is_refused_with_a_typed_error(text in nasty_string()) {
        for (what, r) in [
            ("jsonl", jsonl::parse(&text, "in.jsonl").map(drop)),
            ("json", json::parse(&text, "in.json").map(drop)),
            ("yaml", yaml::parse(&text, "in.yaml").map(drop)),
            ("praisonai", praisonai::parse(&text, "in.json", None).map(drop)),
            (
                "swarms",
                swarms::parse_messages(&text, "MEMORY.md", &"a".parse().unwrap(), "MEMORY.md")
                    .map(drop),
            ),
        ] {
            if let Err(e) = r {
                typed(what, &e)?;
            }
        }
    }

    #[test]
    fn exports_round_trip_and_mutations_are_typed(
        contents in proptest::collection::vec("[a-zA-Z0-9 .,'\"{}\\[\\]:#\n—-]{0,40}", 0..5),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let doc = document(&contents);
        let texts = [
            ("jsonl", jsonl::to_string(&doc).unwrap()),
            ("json", json::to_string(&doc).unwrap()),
            ("yaml", yaml::to_string(&doc).unwrap()),
        ];
        for (what, text) in &texts {
            let parse = |t: &str| match *what {
                "jsonl" => jsonl::parse(t, "in"),
                "json" => json::parse(t, "in"),
                _ => yaml::parse(t, "in"),
            };
            let mut back = parse(text).unwrap_or_else(|e| panic!("{what}: {e}"));
            canonicalize(&mut back);
            prop_assert_eq!(&back, &doc, "{} round trip", what);
            let mut mutated = text.clone();
            for m in &mutations {
                mutated = mutate(&mutated, m);
            }
            if let Err(e) = parse(&mutated) {
                typed(what, &e)?;
            }
        }
        // PraisonAI: one session per file.
        let text = praisonai::render(&doc.sessions[0]).unwrap();
        praisonai::parse(&text, "in.json", None).unwrap();
        let mut mutated = text;
        for m in &mutations {
            mutated = mutate(&mutated, m);
        }
        if let Err(e) = praisonai::parse(&mutated, "in.json", None) {
            typed("praisonai", &e)?;
        }
    }
}
