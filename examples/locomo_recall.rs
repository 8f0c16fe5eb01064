//! LoCoMo-10 retrieval (Maharana et al., ACL 2024): how often search puts an evidence turn of
//! a question in its top k, by keyword, by meaning, and both (hybrid), on any backend.
//!
//! Every turn of a conversation is appended as a message (`Speaker: text`) of its session, one
//! store per conversation; the messages are embedded (`embed=messages`) with the local model;
//! each question is searched in its conversation with a limit of 20. A hit is an evidence turn.
//! Prints recall@5/10/20, hit@5/10/20 and MRR per mode, with query latency. Not part of CI.
//!
//! The data: `data/locomo10.json` of <https://github.com/snap-research/locomo> (a list of
//! samples with `conversation` and `qa`), or a folder of its per-conversation files (the
//! `locomo10_v2` folder of `data/locomo10.zip` there). Run, with the model installed
//! (`bash crates/agentmem-embed/install-model.sh`):
//!
//! ```text
//! cargo run --release --example locomo_recall --features embed-local,sqlite -- \
//!     --data PATH [--url 'sqlite://{dir}/conv{n}.db'] [--modes keyword,semantic,hybrid]
//! ```
//!
//! `--url` is a store URL template: `{n}` is the conversation's number, `{dir}` a fresh
//! temporary folder (e.g. `redis://127.0.0.1:6379/?prefix=locomo{n}`); its stores are cleared
//! first (with `--reuse`, a store already filled is kept, vectors and all, for the next run).
//! `--keyword-weight W --semantic-weight W --k K` tune the fusion (default: `Fusion::default()`).
#![allow(clippy::print_stdout, reason = "an example reports on standard output")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentmem::recall::{Fusion, Recall, RecallOptions, SearchMode};
use agentmem::{AgentMemory, Embedder, Message, MessageQuery, Result, SessionId};
use serde_json::Value;

/// A session's turns: `(turn id, "Speaker: text")`, in order.
type Turns = Vec<(String, String)>;

/// One conversation: its sessions' turns, and its questions with their evidence turn ids.
struct Conversation {
    sessions: Vec<(String, Turns)>,
    questions: Vec<(String, Vec<String>)>,
}

const KS: [usize; 3] = [5, 10, 20];

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let data = arg("--data").map(PathBuf::from).ok_or_else(|| {
        agentmem::Error::invalid_input("--data PATH: locomo10.json or its folder of files")
    })?;
    // `--reuse`: keep the stores (and their vectors) for the next run, e.g. to tune the fusion.
    let reuse = args.iter().any(|a| a == "--reuse");
    let template = arg("--url").unwrap_or_else(|| "sqlite://{dir}/conv{n}.db".to_owned());
    let modes: Vec<SearchMode> = arg("--modes")
        .unwrap_or_else(|| "keyword,semantic,hybrid".to_owned())
        .split(',')
        .map(str::parse)
        .collect::<Result<_>>()?;
    let number = |name: &str, default: f64| {
        arg(name).map_or(Ok(default), |v| {
            v.parse::<f64>()
                .map_err(|_| agentmem::Error::invalid_input(format!("{name} takes a number")))
        })
    };
    let default = Fusion::default();
    let fusion = Fusion {
        keyword_weight: number("--keyword-weight", default.keyword_weight)?,
        semantic_weight: number("--semantic-weight", default.semantic_weight)?,
        k: number("--k", default.k)?,
        ..default
    };
    fusion.validate()?;
    let conversations = load(&data)?;
    let embedder: Arc<dyn Embedder> = Arc::new(agentmem::embed::LocalEmbedder::from_env()?);
    let dir = tempfile::tempdir().map_err(|e| agentmem::Error::io("temporary folder", e))?;

    let mut scores: HashMap<SearchMode, Scores> = HashMap::new();
    let started = Instant::now();
    let mut turns = 0usize;
    for (n, conversation) in conversations.iter().enumerate() {
        let url = template
            .replace("{n}", &n.to_string())
            .replace("{dir}", &dir.path().display().to_string());
        let store = agentmem::open(&url).await?;
        let reused = reuse && !store.list_sessions().await?.is_empty();
        if !reused {
            clear(&store).await?;
        }
        let turn_of = fill(&store, conversation, reused).await?;
        turns += turn_of.len();
        let options = RecallOptions::default()
            .with_embed_messages(true)
            .with_fusion(fusion);
        let recall = Recall::new(Arc::clone(&store), Arc::clone(&embedder), options);
        recall.index(&mut |_| {}).await?;
        for mode in &modes {
            let scores = scores.entry(*mode).or_default();
            for (question, evidence) in &conversation.questions {
                let query = MessageQuery {
                    session: None,
                    limit: 20,
                };
                let t = Instant::now();
                let hits = recall.search_messages(question, &query, *mode).await?;
                scores.latencies.push(t.elapsed().as_secs_f64() * 1e3);
                let ranked: Vec<&str> = hits
                    .iter()
                    .filter_map(|h| turn_of.get(h.message.id.as_str()).map(String::as_str))
                    .collect();
                scores.add(&ranked, evidence);
            }
        }
        clear(&store).await?;
        eprintln!(
            "conversation {n} done ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    println!(
        "LoCoMo-10: {} conversations, {turns} turns, {} questions; embedder {}; fusion \
         keyword {} semantic {} k {}; store {}",
        conversations.len(),
        conversations
            .iter()
            .map(|c| c.questions.len())
            .sum::<usize>(),
        embedder.model(),
        fusion.keyword_weight,
        fusion.semantic_weight,
        fusion.k,
        template
    );
    println!("| mode | hit@5 | hit@10 | hit@20 | recall@5 | recall@10 | recall@20 | MRR | query p50 ms | p95 ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for mode in &modes {
        if let Some(s) = scores.get_mut(mode) {
            println!("{}", s.row(*mode));
        }
    }
    Ok(())
}

/// Per-mode sums of the metrics and the query latencies.
#[derive(Default)]
struct Scores {
    questions: usize,
    hits: [f64; 3],
    recall: [f64; 3],
    reciprocal_rank: f64,
    latencies: Vec<f64>,
}

impl Scores {
    fn add(&mut self, ranked: &[&str], evidence: &[String]) {
        self.questions += 1;
        for (i, k) in KS.iter().enumerate() {
            let top = &ranked[..ranked.len().min(*k)];
            let found = evidence
                .iter()
                .filter(|e| top.contains(&e.as_str()))
                .count();
            self.hits[i] += f64::from(u8::from(found > 0));
            self.recall[i] += found as f64 / evidence.len() as f64;
        }
        if let Some(rank) = ranked.iter().position(|t| evidence.iter().any(|e| e == t)) {
            self.reciprocal_rank += 1.0 / (rank + 1) as f64;
        }
    }

    fn row(&mut self, mode: SearchMode) -> String {
        let n = self.questions.max(1) as f64;
        self.latencies.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            self.latencies
                .get(((self.latencies.len() as f64 - 1.0) * p) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        format!(
            "| {mode} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
            self.hits[0] / n,
            self.hits[1] / n,
            self.hits[2] / n,
            self.recall[0] / n,
            self.recall[1] / n,
            self.recall[2] / n,
            self.reciprocal_rank / n,
            pct(0.5),
            pct(0.95)
        )
    }
}

/// Deletes what a store holds (sessions and vectors), so a rerun starts empty.
async fn clear(store: &Arc<dyn AgentMemory>) -> Result<()> {
    for info in store.list_sessions().await? {
        store.delete_session(&info.id).await?;
    }
    store.clear_vectors().await?;
    Ok(())
}

/// The turn id (`D1:3`) of each message id. Appends every turn, or with `reuse` reads the
/// messages a run before appended (`--reuse`): the turns in order, session by session.
async fn fill(
    store: &Arc<dyn AgentMemory>, conversation: &Conversation, reuse: bool,
) -> Result<HashMap<String, String>> {
    let mut turn_of = HashMap::new();
    for (name, turns) in &conversation.sessions {
        let session: SessionId = name.parse()?;
        let messages: Vec<Message> = if reuse {
            let loaded = store.load(&session, None).await?;
            loaded.map(|s| s.messages).unwrap_or_default()
        } else {
            let fresh: Vec<Message> = turns
                .iter()
                .map(|(_, text)| Message::user(text.clone()))
                .collect();
            store.append(&session, &fresh).await?;
            fresh
        };
        for (message, (id, _)) in messages.iter().zip(turns) {
            turn_of.insert(message.id.as_str().to_owned(), id.clone());
        }
    }
    Ok(turn_of)
}

/// Reads `locomo10.json` (a list of samples) or a folder of per-conversation files.
fn load(path: &Path) -> Result<Vec<Conversation>> {
    let read = |p: &Path| -> Result<Value> {
        let text = std::fs::read_to_string(p).map_err(|e| agentmem::Error::io("LoCoMo data", e))?;
        Ok(serde_json::from_str(&text)?)
    };
    let mut samples = Vec::new();
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| agentmem::Error::io("LoCoMo folder", e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for file in files {
            samples.push(read(&file)?);
        }
    } else {
        match read(path)? {
            Value::Array(list) => samples = list,
            other => samples.push(other),
        }
    }
    Ok(samples.iter().map(conversation).collect())
}

/// One sample: `conversation` (or the sample itself) holds `session_N` lists of turns.
fn conversation(sample: &Value) -> Conversation {
    let body = sample.get("conversation").unwrap_or(sample);
    let mut sessions: Vec<(usize, String, Turns)> = Vec::new();
    if let Some(map) = body.as_object() {
        for (key, value) in map {
            let Some(n) = key.strip_prefix("session_").and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Some(turns) = value.as_array() else {
                continue;
            };
            let turns = turns
                .iter()
                .filter_map(|t| {
                    let id = t.get("dia_id")?.as_str()?;
                    let speaker = t.get("speaker")?.as_str()?;
                    let text = t.get("text")?.as_str()?;
                    Some((id.to_owned(), format!("{speaker}: {text}")))
                })
                .collect();
            sessions.push((n, key.clone(), turns));
        }
    }
    sessions.sort_by_key(|s| s.0);
    let questions = sample
        .get("qa")
        .and_then(Value::as_array)
        .map(|qa| {
            qa.iter()
                .filter_map(|q| {
                    let question = q.get("question")?.as_str()?.to_owned();
                    let evidence: Vec<String> = q
                        .get("evidence")?
                        .as_array()?
                        .iter()
                        .filter_map(Value::as_str)
                        .flat_map(|e| e.split([';', ',']))
                        .map(|e| e.trim().to_owned())
                        .filter(|e| !e.is_empty())
                        .collect();
                    (!evidence.is_empty()).then_some((question, evidence))
                })
                .collect()
        })
        .unwrap_or_default();
    Conversation {
        sessions: sessions.into_iter().map(|(_, k, t)| (k, t)).collect(),
        questions,
    }
}
