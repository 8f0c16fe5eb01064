//! Porter stems: FTS5's `porter` tokenizer and `agentmem_core::search::stem` agree, so SQLite
//! matches as the backends that stem in the client do; and a database from before stems
//! (schema 8) has its full-text indexes rebuilt on open.
mod common;

use std::collections::BTreeSet;

use agentmem_core::search::{stem, words};
use agentmem_core::{AgentMemoryExt, MemoryFilter, MemoryKind, MemoryStore, Message};
use agentmem_core::{MessageQuery, SessionId, SessionStore};
use common::{open, reopened_from, UNDO_MEMORY_REVISION};
use rusqlite::Connection;

/// Words that reach every rule of the algorithm: stems of each shape with each suffix, and
/// the words of this repository's README.
fn vocabulary() -> BTreeSet<String> {
    let stems = [
        "", "a", "y", "ab", "tr", "cy", "sky", "agre", "happ", "hop", "fil", "fail", "fizz",
        "roll", "contr", "relat", "condit", "gener", "predic", "sens", "formal", "electr", "adopt",
        "troubl", "sized", "bowdler", "airlin", "vietnam", "adjust", "oper", "caress",
    ];
    let suffixes = [
        "", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "y", "ly", "at", "bl", "iz",
        "ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli",
        "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti",
        "iviti", "biliti", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance",
        "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion", "tion", "ion",
        "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "lled", "ying",
    ];
    let mut all: BTreeSet<String> = stems
        .iter()
        .flat_map(|s| suffixes.iter().map(move |x| format!("{s}{x}")))
        .filter(|w| !w.is_empty())
        .collect();
    all.extend(words(include_str!("../../../README.md")));
    all
}

#[test]
fn core_stems_as_fts5_porter_does() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5 (w, tokenize = 'porter unicode61 remove_diacritics 0');
         CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance');",
    )
    .unwrap();
    let vocabulary: Vec<String> = vocabulary().into_iter().collect();
    assert!(vocabulary.len() > 2_000, "{}", vocabulary.len());
    for (i, word) in vocabulary.iter().enumerate() {
        conn.execute("INSERT INTO t (rowid, w) VALUES (?1, ?2)", (i as i64, word))
            .unwrap();
    }
    let mut stmt = conn
        .prepare("SELECT doc, term FROM v ORDER BY doc")
        .unwrap();
    let fts5: Vec<(i64, String)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(fts5.len(), vocabulary.len(), "one token per row");
    let differ: Vec<(String, String, String)> = fts5
        .into_iter()
        .filter_map(|(doc, term)| {
            let word = &vocabulary[doc as usize];
            let ours = stem(word);
            (ours != term).then(|| (word.clone(), term, ours.into_owned()))
        })
        .collect();
    assert!(differ.is_empty(), "(word, FTS5, core) differ: {differ:?}");
}

/// A database written at schema 8 indexed words as they are; opening it rebuilds both
/// full-text indexes with stems, so inflections find each other in old rows and new ones.
#[tokio::test]
async fn a_schema_8_database_is_reindexed_with_stems_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let session = SessionId::new("s").unwrap();
    let old = open(&path).await;
    let said = [Message::user("I looked into adoption")];
    old.append(&session, &said).await.unwrap();
    let fact = "Caroline is adopting a dog";
    old.store_memory(MemoryKind::Fact, fact).await.unwrap();
    drop(old);
    {
        // The full-text indexes as schema 2 to 8 made them: plain words.
        let conn = Connection::open(&path).unwrap();
        for (fts, table, column) in [
            ("agentmem_messages_fts", "agentmem_messages", "content"),
            ("agentmem_memories_fts", "agentmem_memories", "text"),
        ] {
            conn.execute_batch(&format!(
                "DROP TABLE {fts};
                 CREATE VIRTUAL TABLE {fts} USING fts5 (
                     {column}, content = '{table}', content_rowid = 'id',
                     tokenize = 'unicode61 remove_diacritics 0');
                 INSERT INTO {fts} ({fts}) VALUES ('rebuild');"
            ))
            .unwrap();
        }
        let plain: i64 = conn
            .query_row(
                "SELECT count(*) FROM agentmem_messages_fts WHERE agentmem_messages_fts MATCH 'adopt'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(plain, 0, "words as they are: `adopt` is not `adoption`");
    }
    // Migration 10 only adds the memory revision (a table and its triggers).
    let store = reopened_from(&path, 8, UNDO_MEMORY_REVISION).await;
    store
        .append_one(&session, Message::user("we adopted a cat"))
        .await
        .unwrap();
    let hits = store
        .search_messages("adopting", &MessageQuery::default())
        .await
        .unwrap();
    let found: BTreeSet<&str> = hits.iter().map(|h| h.message.content.as_str()).collect();
    assert_eq!(
        found,
        BTreeSet::from(["I looked into adoption", "we adopted a cat"])
    );
    let items = store
        .search_memories("adoptions", &MemoryFilter::default())
        .await
        .unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].item.text, fact);
}
