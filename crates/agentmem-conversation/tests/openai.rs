//! The OpenAI-compatible summarizer against a local HTTP server that checks what it receives.
#![cfg(feature = "openai")]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::Arc;

use agentmem_conversation::templates::SUMMARY_PREFIX;
use agentmem_conversation::{Compressor, OpenAiSummarizer, Summarizer, SummaryRequest};
use agentmem_core::{ErrorKind, Message};
use common::{compression_fails_untouched, in_memory, persisting};

/// A request as the server saw it.
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Serves one request with `status` and `body`, and reports what it received.
fn serve_once(status: u16, body: &'static str) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').unwrap();
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .expect("the client sends Content-Length");
        let mut raw = vec![0; len];
        reader.read_exact(&mut raw).unwrap();
        let reply = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = stream;
        stream.write_all(reply.as_bytes()).unwrap();
        stream.flush().unwrap();
        let _ = tx.send(Seen {
            request_line: request_line.trim_end().to_string(),
            headers,
            body: serde_json::from_slice(&raw).unwrap(),
        });
    });
    (url, rx)
}

/// The summarizer of model "m" at `url`, with an API key.
fn summarizer_at(url: String) -> OpenAiSummarizer {
    OpenAiSummarizer::new("m")
        .with_base_url(url)
        .with_api_key("k")
}

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"  The user prefers GCP.  "},"finish_reason":"stop"}]}"#;

#[tokio::test]
async fn sends_a_chat_completion_request_and_returns_the_reply() {
    let (url, seen) = serve_once(200, COMPLETION);
    let summarizer = OpenAiSummarizer::new("summarizer-model")
        .with_base_url(format!("{url}/"))
        .with_api_key("sk-test-123");
    assert!(
        !format!("{summarizer:?}").contains("sk-test-123"),
        "Debug shows the key"
    );
    let request = SummaryRequest::new(
        vec![Message::user("I prefer GCP."), Message::assistant("Noted.")],
        300,
    )
    .with_temperature(0.2);
    let summary = summarizer.summarize(&request).await.unwrap();
    assert_eq!(summary, "The user prefers GCP.");

    let seen = seen.recv().unwrap();
    assert_eq!(seen.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(seen.header("authorization"), Some("Bearer sk-test-123"));
    assert!(seen
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let body = &seen.body;
    assert_eq!(body["model"], "summarizer-model");
    assert_eq!(body["max_tokens"], 300);
    assert!((body["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    let transcript = messages[1]["content"].as_str().unwrap();
    assert!(
        transcript.contains("] User: I prefer GCP.\n\n["),
        "{transcript}"
    );
    assert!(transcript.ends_with("] Assistant: Noted."), "{transcript}");
}

#[tokio::test]
async fn auto_compression_uses_it_and_a_server_error_leaves_memory_untouched() {
    let store = in_memory();
    let (url, _seen) = serve_once(503, r#"{"error":{"message":"overloaded"}}"#);
    let summarizer = Arc::new(summarizer_at(url));
    let convo = persisting("Remote", store.clone())
        .compressor(Compressor::new(summarizer))
        .context_length(40)
        .build()
        .await
        .unwrap();
    let err = compression_fails_untouched(
        &convo,
        "enough words to pass a forty token threshold, surely: one two three four five six seven eight nine ten eleven twelve",
    )
    .await;
    assert!(
        err.to_string().contains("HTTP 503") && err.to_string().contains("overloaded"),
        "{err}"
    );
    assert!(store
        .list_archives(convo.session_id())
        .await
        .unwrap()
        .is_empty());

    let (url, _seen) = serve_once(200, COMPLETION);
    let summarizer = Arc::new(summarizer_at(url));
    let mut convo = convo;
    convo.set_compressor(Compressor::new(summarizer)).unwrap();
    let done = convo.maybe_compress().await.unwrap().unwrap();
    assert_eq!(
        done.summary.content,
        format!("{SUMMARY_PREFIX}The user prefers GCP.")
    );
    assert!(done.archive.is_some());
}

#[tokio::test]
async fn bad_keys_and_garbage_replies_are_typed_errors() {
    let request = SummaryRequest::new(vec![Message::user("hi")], 10);
    let (url, _) = serve_once(401, r#"{"error":"bad key"}"#);
    let err = summarizer_at(url).summarize(&request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("API key"), "{err}");

    let (url, _) = serve_once(200, r#"{"not":"a completion"}"#);
    let err = summarizer_at(url).summarize(&request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptData);

    // Nothing listens on this port once the listener is dropped.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = OpenAiSummarizer::new("m")
        .with_base_url(format!("http://127.0.0.1:{port}/v1"))
        .summarize(&request)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
}

/// The conversation and the API key never travel in clear text to another machine, and
/// credentials in the base URL never appear in errors.
#[tokio::test]
async fn plain_http_is_refused_except_to_loopback_and_credentials_are_not_echoed() {
    let request = SummaryRequest::new(vec![Message::user("hi")], 10);
    for base in [
        "http://gateway.example/v1",
        "http://user:hunter2@10.1.2.3:8080/v1",
        "ftp://gateway.example/v1",
    ] {
        let err = OpenAiSummarizer::new("m")
            .with_api_key("sk-test")
            .with_base_url(base)
            .summarize(&request)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{base}: {err}");
        assert!(err.to_string().contains("https://"), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
    // Loopback over http is allowed (a local model server); the reply is what decides.
    let (url, _) = serve_once(401, r#"{"error":"bad key"}"#);
    let with_credentials = url.replacen("http://", "http://user:hunter2@", 1);
    let summarizer = summarizer_at(with_credentials);
    assert!(!format!("{summarizer:?}").contains("hunter2"));
    let err = summarizer.summarize(&request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(!err.to_string().contains("hunter2"), "{err}");
}
