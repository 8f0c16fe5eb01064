//! A test embedding model without a real one: [`words_vector`] (a bag of words in 8
//! dimensions that knows a few synonyms), as an [`Embedder`] ([`WordsEmbedder`]) and as an
//! OpenAI-compatible `/v1/embeddings` server on loopback ([`spawn_embeddings_server`]), for the
//! tests of the CLI, the MCP server and the HTTP embedder.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use agentmem_core::{async_trait, Embedder, ModelIdentity, Result};
use serde_json::{json, Value};

/// Words of one meaning share a dimension; any other word lands on one of the rest.
pub const SYNONYMS: [&[&str]; 2] = [&["puppy", "dog", "canine"], &["invoice", "bill", "payment"]];

/// How many dimensions [`words_vector`] has.
pub const WORDS_DIMENSIONS: usize = 8;

/// The test model's vector of `text`: one count per dimension, synonyms of [`SYNONYMS`] in
/// the first two, every other word in one of the rest by its bytes.
///
/// ```
/// use agentmem_testkit::embeddings::words_vector;
/// assert_eq!(words_vector("dog")[0], 1.0);
/// assert_eq!(words_vector("puppy"), words_vector("canine"));
/// ```
pub fn words_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; WORDS_DIMENSIONS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        let dim = SYNONYMS
            .iter()
            .position(|group| group.contains(&word.as_str()))
            .unwrap_or_else(|| 2 + word.bytes().map(usize::from).sum::<usize>() % 6);
        v[dim] += 1.0;
    }
    v
}

/// [`words_vector`] as an [`Embedder`] (model `agentmem-test-words`, not normalized).
#[derive(Debug)]
pub struct WordsEmbedder(ModelIdentity);

impl Default for WordsEmbedder {
    fn default() -> Self {
        WordsEmbedder(ModelIdentity {
            id: "agentmem-test-words".into(),
            dimensions: WORDS_DIMENSIONS,
            normalized: false,
        })
    }
}

#[async_trait]
impl Embedder for WordsEmbedder {
    fn model(&self) -> &ModelIdentity {
        &self.0
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| words_vector(t)).collect())
    }
}

/// Starts an OpenAI-compatible embeddings server answering `POST /v1/embeddings` with
/// [`words_vector`], on a free loopback port, for the rest of the process; returns its base
/// URL (`http://127.0.0.1:PORT`).
///
/// # Panics
///
/// When no loopback port can be bound (a test cannot run then).
pub fn spawn_embeddings_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the test server");
    let port = listener
        .local_addr()
        .expect("the test server's address")
        .port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Answers requests on one connection until the client closes it (or sends nonsense, which
/// ends the connection: the client's test then fails on its own terms).
fn serve(stream: TcpStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(reply) = answer(&mut reader) {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(reply.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// Reads one request and builds its reply; `None` at the end of the connection or on a
/// request that is not an embeddings call.
fn answer(reader: &mut BufReader<TcpStream>) -> Option<String> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0
        || !request_line.starts_with("POST /v1/embeddings ")
    {
        return None;
    }
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let request: Value = serde_json::from_slice(&body).ok()?;
    let data: Vec<Value> = request["input"]
        .as_array()?
        .iter()
        .enumerate()
        .map(
            |(i, text)| json!({"index": i, "embedding": words_vector(text.as_str().unwrap_or(""))}),
        )
        .collect();
    Some(json!({"object": "list", "data": data, "model": request["model"]}).to_string())
}
