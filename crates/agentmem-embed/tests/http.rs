//! HttpEmbedder against a tiny OpenAI-compatible server started in the test.
#![cfg(feature = "http")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use agentmem_core::{Embedder, ErrorKind};
use agentmem_embed::HttpEmbedder;
use serde_json::{json, Value};

/// What the server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

type Handler = dyn Fn(&Value) -> (u16, String) + Send + Sync;

/// Serves `handler`'s answers on a loopback port; returns the base URL and the requests seen.
fn serve(
    handler: impl Fn(&Value) -> (u16, String) + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let handler: Arc<Handler> = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            answer(stream, &*handler, &log);
        }
    });
    (base, seen)
}

fn answer(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((&header, ""));
        let value = value.trim().to_string();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "authorization" => authorization = Some(value),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, reply) = handler(&body);
    log.lock().expect("log").push(Seen {
        path,
        authorization,
        body,
    });
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// An OpenAI-style reply: text `i` gets `[len, i, 1]`, listed in reverse index order.
fn embeddings(body: &Value) -> (u16, String) {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let data: Vec<Value> = input
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            let len = t.as_str().map_or(0, str::len);
            json!({"object": "embedding", "index": i, "embedding": [len as f32, i as f32, 1.0]})
        })
        .collect();
    (
        200,
        json!({"object": "list", "data": data, "model": body["model"]}).to_string(),
    )
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Embeds one text with `embedder`, which must fail (`why`, if it does not) with `kind`.
async fn embedding_fails(embedder: &HttpEmbedder, kind: ErrorKind, why: &str) {
    let err = embedder.embed(&texts(&["x"])).await.expect_err(why);
    assert_eq!(err.kind(), kind, "{err}");
}

#[tokio::test]
async fn embeds_in_input_order_and_learns_the_dimensions() {
    std::env::set_var("AGENTMEM_EMBED_TEST_KEY", "sk-test-secret");
    let (base, seen) = serve(embeddings);
    let embedder =
        HttpEmbedder::new(&base, "tiny-embed").with_api_key_env("AGENTMEM_EMBED_TEST_KEY");
    assert_eq!(embedder.model().dimensions, 0);
    let vectors = embedder
        .embed(&texts(&["a", "bbb", "cc"]))
        .await
        .expect("embed");
    assert_eq!(
        vectors,
        [
            vec![1.0, 0.0, 1.0],
            vec![3.0, 1.0, 1.0],
            vec![2.0, 2.0, 1.0]
        ]
    );
    assert_eq!(embedder.model().dimensions, 3);
    assert_eq!(embedder.model().id, "tiny-embed");
    assert!(!format!("{embedder:?}").contains("sk-test-secret"));

    let seen = seen.lock().expect("log").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-test-secret")
    );
    assert_eq!(
        seen[0].body,
        json!({"model": "tiny-embed", "input": ["a", "bbb", "cc"]})
    );
}

#[tokio::test]
async fn splits_large_calls_by_batch_size() {
    let (base, seen) = serve(embeddings);
    // A base URL ending in /v1 (the OPENAI_BASE_URL habit) is accepted too.
    let embedder = HttpEmbedder::new(format!("{base}/v1/"), "m")
        .with_api_key_env("AGENTMEM_EMBED_UNSET_KEY")
        .with_batch_size(2);
    assert_eq!(embedder.batch_size(), 2);
    let vectors = embedder
        .embed(&texts(&["a", "bb", "ccc", "dddd", "eeeee"]))
        .await
        .expect("embed");
    let lengths: Vec<f32> = vectors.iter().map(|v| v[0]).collect();
    assert_eq!(lengths, [1.0, 2.0, 3.0, 4.0, 5.0]);
    let seen = seen.lock().expect("log").clone();
    assert_eq!(seen.len(), 3);
    assert!(seen
        .iter()
        .all(|s| s.path == "/v1/embeddings" && s.authorization.is_none()));
    assert!(embedder.embed(&[]).await.expect("nothing").is_empty());
}

#[tokio::test]
async fn probe_learns_the_dimensions() {
    let (base, _) = serve(embeddings);
    let embedder = HttpEmbedder::new(base, "m");
    let model = embedder.probe().await.expect("probe");
    assert_eq!((model.dimensions, model.normalized), (3, false));
}

#[tokio::test]
async fn server_errors_are_typed_with_the_servers_message() {
    let (base, _) = serve(|body| match body["model"].as_str() {
        Some("too-long") => (
            400,
            r#"{"error":{"message":"input is too long","type":"invalid_request_error"}}"#.into(),
        ),
        Some("no-key") => (
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        ),
        Some("busy") => (429, "slow down".into()),
        _ => (500, "boom".into()),
    });
    std::env::set_var("AGENTMEM_EMBED_ERROR_KEY", "sk-never-shown");
    let call = |model: &str| {
        let embedder = HttpEmbedder::new(&base, model).with_api_key_env("AGENTMEM_EMBED_ERROR_KEY");
        async move { embedder.embed(&texts(&["x"])).await.expect_err("an error") }
    };
    let err = call("too-long").await;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("HTTP 400: input is too long"),
        "{err}"
    );
    let err = call("no-key").await;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("Incorrect API key provided"),
        "{err}"
    );
    assert!(
        err.to_string().contains("$AGENTMEM_EMBED_ERROR_KEY"),
        "{err}"
    );
    assert!(!err.to_string().contains("sk-never-shown"), "{err}");
    assert_eq!(call("busy").await.kind(), ErrorKind::Unavailable);
    assert_eq!(call("other").await.kind(), ErrorKind::Unavailable);
}

#[tokio::test]
async fn malformed_replies_are_corrupt_data() {
    let (base, _) = serve(|body| match body["model"].as_str() {
        Some("not-json") => (200, "<html>hello</html>".into()),
        Some("no-data") => (200, r#"{"object":"list"}"#.into()),
        Some("short") => (200, r#"{"data":[{"index":0,"embedding":[1,2]}]}"#.into()),
        Some("twice") => (
            200,
            r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}"#.into(),
        ),
        Some("ragged") => (
            200,
            r#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[2,3]}]}"#.into(),
        ),
        Some("strings") => (
            200,
            r#"{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}"#.into(),
        ),
        _ => embeddings(body),
    });
    for model in ["not-json", "no-data", "short", "twice", "ragged", "strings"] {
        let embedder = HttpEmbedder::new(&base, model);
        let err = embedder.embed(&texts(&["x", "y"])).await.expect_err(model);
        assert_eq!(err.kind(), ErrorKind::CorruptData, "{model}: {err}");
    }
    // Given dimensions that the server does not deliver.
    let embedder = HttpEmbedder::new(&base, "m").with_dimensions(384);
    assert_eq!(embedder.model().dimensions, 384);
    embedding_fails(&embedder, ErrorKind::CorruptData, "3 dimensions").await;
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let embedder = HttpEmbedder::new(format!("http://127.0.0.1:{port}"), "m");
    embedding_fails(&embedder, ErrorKind::Unavailable, "nobody listens").await;
}

#[tokio::test]
async fn plain_http_to_another_host_is_refused() {
    let embedder = HttpEmbedder::new("http://embeddings.example.com", "m");
    embedding_fails(&embedder, ErrorKind::InvalidInput, "clear text").await;
    assert_eq!(
        HttpEmbedder::openai("text-embedding-3-small").endpoint(),
        "https://api.openai.com/v1/embeddings"
    );
}
