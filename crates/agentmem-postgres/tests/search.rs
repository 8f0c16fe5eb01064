//! Search on PostgreSQL: stems (a schema from before them is re-indexed on open, once, however
//! many processes open it) and ranking by inverse document frequency, checked against the
//! formula computed separately.

mod common;

use std::collections::HashMap;

use agentmem_core::search::query_terms;
use agentmem_core::{
    AgentMemoryExt, MemoryFilter, MemoryItem, MemoryKind, MemoryScope, MemoryStore, Message,
    MessageQuery, SessionId, SessionStore,
};
use agentmem_postgres::{PostgresStore, SCHEMA_VERSION};

fn sid(name: &str) -> SessionId {
    SessionId::new(name).expect("valid test session id")
}

/// The contents of the messages `query` finds in every session, sorted.
async fn found(store: &PostgresStore, query: &str) -> Vec<String> {
    let hits = store
        .search_messages(query, &MessageQuery::default())
        .await
        .expect("search");
    let mut contents: Vec<String> = hits.into_iter().map(|h| h.message.content).collect();
    contents.sort();
    contents
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_7_tsvectors_are_stemmed_once_when_migrated_to_8() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let texts = [
        "The adoption went well",
        // Stored with its exact bytes aside (`content_raw`): indexed from those.
        "nul \0 adopted a cat",
        "unrelated gardening",
    ];
    let messages: Vec<Message> = texts.iter().map(|t| Message::user(*t)).collect();
    store.append(&sid("pets"), &messages).await.expect("append");
    store
        .put_memory(&MemoryItem::new(MemoryKind::Fact, "Adoption papers signed"))
        .await
        .expect("put");
    let s = format!("\"{}\"", store.schema());
    let admin = common::admin().await;
    admin
        .batch_execute(&format!(
            "{undo} DELETE FROM {s}.schema_migrations WHERE version > 7;",
            undo = common::undo_version_8(&s)
        ))
        .await
        .expect("downgrade to version 7");
    let stems = format!(
        "SELECT (SELECT count(*) FROM {s}.messages WHERE tsv @@ 'adopt')
              + (SELECT count(*) FROM {s}.memories WHERE tsv @@ 'adopt')"
    );
    assert_eq!(
        common::count(&admin, &stems, &[]).await,
        0,
        "version 7 indexed words"
    );

    // Two processes open it at once: one migrates, the other waits for it and finds it done.
    let url = common::with_options(
        &common::database_url(),
        &[("schema", store.schema()), ("pool_size", "1")],
    );
    let (a, b) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    let (a, b) = (a.expect("open"), b.expect("open"));
    for opened in [&a, &b] {
        assert_eq!(
            opened.schema_version().await.expect("version"),
            SCHEMA_VERSION
        );
    }
    let applied = format!("SELECT count(*) FROM {s}.schema_migrations WHERE version = 8");
    assert_eq!(
        common::count(&admin, &applied, &[]).await,
        1,
        "applied once"
    );
    assert_eq!(common::count(&admin, &stems, &[]).await, 3);

    assert_eq!(
        found(&a, "adopting").await,
        ["The adoption went well", "nul \0 adopted a cat"]
    );
    let items = b
        .search_memories("adopting", &MemoryFilter::default())
        .await
        .expect("search memories");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].item.text, "Adoption papers signed");

    // The rebuilt tsvectors are the ones the write path builds now.
    a.append(&sid("fresh"), &messages).await.expect("append");
    let same = format!(
        "SELECT count(*) FROM {s}.messages o JOIN {s}.messages n
             ON o.content = n.content AND o.session_id = 'pets' AND n.session_id = 'fresh'
         WHERE o.tsv = n.tsv"
    );
    assert_eq!(common::count(&admin, &same, &[]).await, 3);
}

#[tokio::test]
async fn a_rare_word_outweighs_a_common_one() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let session = sid("chat");
    let mut messages: Vec<Message> = (0..20)
        .map(|i| Message::user(format!("Caroline: small talk number {i}")))
        .collect();
    let common_twice = "Caroline: Caroline again";
    let rare_once =
        "Melanie: I signed up for a pottery class yesterday with a few friends from work";
    messages.push(Message::user(common_twice));
    messages.push(Message::user(rare_once));
    store.append(&session, &messages).await.expect("append");
    for in_session in [None, Some(session.clone())] {
        let scope = MessageQuery {
            session: in_session,
            limit: 10,
        };
        let hits = store.search_messages("Caroline pottery", &scope).await;
        let hits = hits.expect("search");
        // Without idf the short text repeating the name everyone says ranks first.
        assert_eq!(hits[0].message.content, rare_once, "{scope:?}");
        assert_eq!(hits[1].message.content, common_twice, "{scope:?}");
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{scope:?}"
        );
    }
}

/// Each message's score as the statements define it, computed term by term: `Σ idf(t) ·
/// ts_rank(tsv, t, 1)` over `terms`, `N` the session's message count, `df` its messages
/// holding `t`.
async fn expected_scores(
    admin: &tokio_postgres::Client, schema: &str, session: &str, terms: &[String],
) -> HashMap<String, f64> {
    let s = format!("\"{schema}\"");
    let n = common::count(
        admin,
        &format!("SELECT count(*) FROM {s}.messages WHERE session_id = $1"),
        &[&session],
    )
    .await as f64;
    let mut scores: HashMap<String, f64> = HashMap::new();
    for term in terms {
        let query = format!("'{term}'");
        let df = common::count(
            admin,
            &format!(
                "SELECT count(*) FROM {s}.messages
                 WHERE session_id = $1 AND tsv @@ $2::text::tsquery"
            ),
            &[&session, &query],
        )
        .await as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        let rows = admin
            .query(
                &format!(
                    "SELECT id, ts_rank(tsv, $2::text::tsquery, 1)::float8 FROM {s}.messages
                     WHERE session_id = $1"
                ),
                &[&session, &query],
            )
            .await
            .expect("ranks");
        for row in rows {
            *scores.entry(row.get(0)).or_default() += idf * row.get::<_, f64>(1);
        }
    }
    scores
}

#[tokio::test]
async fn scores_are_idf_weighted_ranks_summed_over_any_number_of_terms() {
    let Some(store) = common::open(&[]).await else {
        return;
    };
    let session = sid("fruit");
    let fruit = [
        "kiwi", "lemon", "mango", "melon", "olive", "peach", "pear", "plum", "fig", "lime",
        "apple", "cherry", "grape", "guava", "papaya", "quince", "banana", "apricot", "lychee",
        "durian",
    ];
    // Each message names a few fruit, some twice, in texts of different lengths; the first
    // fruit are common, the last rare.
    let messages: Vec<Message> = (0..40)
        .map(|i| {
            let named: Vec<&str> = (0..fruit.len())
                .filter(|&f| (i * 7 + f * 3) % (f + 2) == 0)
                .map(|f| fruit[f])
                .collect();
            let filler = "and some more words ".repeat(i % 4);
            Message::user(format!("{} {filler}{}", named.join(" "), named.join(", ")))
        })
        .collect();
    store.append(&session, &messages).await.expect("append");
    store
        .append_one(&sid("other"), Message::user("kiwi elsewhere"))
        .await
        .expect("append");
    let admin = common::admin().await;
    // More terms (20) than the statements weigh in columns of their own (16), in two orders,
    // so each term is scored both ways.
    let mut reversed = fruit;
    reversed.reverse();
    for query in [fruit.join(" "), reversed.join(" ")] {
        let terms = query_terms(&query);
        assert_eq!(terms.len(), fruit.len());
        let expected = expected_scores(&admin, store.schema(), session.as_str(), &terms).await;
        let scope = MessageQuery {
            session: Some(session.clone()),
            limit: 100,
        };
        let hits = store.search_messages(&query, &scope).await.expect("search");
        let matching = expected.values().filter(|&&score| score > 0.0).count();
        assert_eq!(hits.len(), matching, "every message naming a fruit");
        for hit in &hits {
            let want = expected[hit.message.id.as_str()];
            assert!(
                (hit.score - want).abs() <= 1e-9 * want.max(1.0),
                "{}: score {} where the formula gives {want}",
                hit.message.content,
                hit.score
            );
        }
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }
}

/// Unnamed statements (`prepared_statements=off`, what a pooler in transaction mode gets) run
/// every search: messages and memory items, scoped or not, of few terms and of many.
#[tokio::test]
async fn unnamed_statements_search_with_few_and_many_terms() {
    let Some(store) = common::open(&[("prepared_statements", "off")]).await else {
        return;
    };
    let session = sid("notes");
    let texts = ["adopting a cat", "adopted two dogs", "weather report"];
    let messages: Vec<Message> = texts.iter().map(|t| Message::user(*t)).collect();
    store.append(&session, &messages).await.expect("append");
    for text in texts {
        store
            .put_memory(&MemoryItem::new(MemoryKind::Fact, text))
            .await
            .expect("put");
    }
    // More terms than the statements weigh in columns of their own (16).
    let many = "adoption alpha bravo delta echo foxtrot golf hotel india juliet kilo lima mike \
                november oscar papa quebec romeo sierra tango";
    assert_eq!(query_terms(many).len(), 20);
    for query in ["adoption", many] {
        assert_eq!(
            found(&store, query).await,
            ["adopted two dogs", "adopting a cat"],
            "{query}"
        );
        let scoped = MessageQuery {
            session: Some(session.clone()),
            limit: 10,
        };
        let hits = store.search_messages(query, &scoped).await.expect("search");
        assert_eq!(hits.len(), 2, "{query}");
        for filter in [
            MemoryFilter::default(),
            MemoryFilter::kind(MemoryKind::Fact),
            MemoryFilter::default().visible_from(MemoryScope::global()),
        ] {
            let items = store.search_memories(query, &filter).await.expect("search");
            assert_eq!(items.len(), 2, "{query}");
        }
    }
}
