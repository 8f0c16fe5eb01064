//! A summarizer that asks any OpenAI-compatible chat-completions endpoint (feature `openai`).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use agentmem_core::{Error, Result};

use super::{Summarizer, SummaryRequest};
use crate::templates::prompt_string;

/// The OpenAI API base URL, used when none is configured or in `OPENAI_BASE_URL`.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The instructions the model gets with the transcript.
const INSTRUCTIONS: &str = "You compress conversation transcripts for an AI agent's memory. \
Write a concise summary that keeps every fact, decision, preference, open task, name and number \
the agent will need to continue the conversation, and the gist of the latest turns. \
Write plain text, no preamble.";

/// Summarizes with a model behind an OpenAI-compatible `POST {base_url}/chat/completions`
/// (OpenAI, Azure-compatible gateways, vLLM, Ollama, LiteLLM, …).
///
/// The API key comes from the configuration, else `OPENAI_API_KEY`; the base URL from the
/// configuration, else `OPENAI_BASE_URL`, else [`DEFAULT_OPENAI_BASE_URL`]. `Debug` never
/// shows the key. The HTTP call runs on a blocking thread (ureq), with a timeout (60 s by
/// default).
///
/// ```no_run
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::{sync::Arc, time::Duration};
/// use agentmem_conversation::{Compressor, Conversation, OpenAiSummarizer};
///
/// // A local Ollama; vLLM, LiteLLM, a gateway or OpenAI itself work the same way.
/// let summarizer = OpenAiSummarizer::new("llama3.1")
///     .with_base_url("http://localhost:11434/v1")
///     .with_api_key("unused-by-ollama")
///     .with_timeout(Duration::from_secs(30));
/// assert_eq!(summarizer.endpoint(), "http://localhost:11434/v1/chat/completions");
/// let convo = Conversation::builder("ResearchAgent".parse()?)
///     .compressor(Compressor::new(Arc::new(summarizer)))
///     .build()
///     .await?;
/// // Once the prompt reaches 90% of the context, the model writes the summary.
/// convo.maybe_compress().await?;
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct OpenAiSummarizer {
    model: String,
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl fmt::Debug for OpenAiSummarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSummarizer")
            .field("model", &self.model)
            .field("base_url", &agentmem_core::redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl OpenAiSummarizer {
    /// A summarizer using `model`, with the base URL and API key from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        OpenAiSummarizer {
            model: model.into(),
            base_url: env("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.into()),
            api_key: env("OPENAI_API_KEY"),
            timeout: Duration::from_secs(60),
        }
    }

    agentmem_core::setters! {
        /// Sets the base URL (the part before `/chat/completions`).
        pub fn with_base_url(url: impl Into<String>) { self.base_url = url.into() }

        /// Sets the API key, overriding `OPENAI_API_KEY`.
        pub fn with_api_key(key: impl Into<String>) { self.api_key = Some(key.into()) }

        /// Sets the request timeout.
        pub fn with_timeout(timeout: Duration) { self.timeout = timeout }
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The chat-completions URL requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The endpoint as errors show it: credentials in the URL hidden.
    fn shown_endpoint(&self) -> String {
        agentmem_core::redact_url(&self.endpoint())
    }

    /// Refuses to send the conversation (and the API key) in clear text: `https://` is
    /// required, except to a loopback address (a local model server).
    fn check_transport(&self) -> Result<()> {
        agentmem_core::transport::check_transport(
            &self.endpoint(),
            "summarizer base URL",
            "the conversation",
        )
    }

    fn call_blocking(&self, body: serde_json::Value) -> Result<String> {
        self.check_transport()?;
        let (status, text) = agentmem_core::transport::post_json(
            &self.endpoint(),
            &self.shown_endpoint(),
            self.api_key.as_deref(),
            &body,
            self.timeout,
        )?;
        if !(200..300).contains(&status) {
            let shown: String = text.chars().take(300).collect();
            let message = format!("{} answered HTTP {status}: {shown}", self.shown_endpoint());
            return Err(match status {
                401 | 403 => Error::invalid_input(format!("{message} (check the API key)")),
                400 | 404 | 422 => Error::invalid_input(message),
                408 | 429 | 500..=599 => Error::unavailable(message),
                _ => Error::backend(message),
            });
        }
        let reply: ChatCompletion = serde_json::from_str(&text).map_err(|e| {
            Error::corrupt(format!(
                "{} answered with something that is not a chat completion",
                self.shown_endpoint()
            ))
            .with_source(e)
        })?;
        reply
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "{} answered without summary text",
                    self.shown_endpoint()
                ))
            })
    }
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
}

#[async_trait]
impl Summarizer for OpenAiSummarizer {
    async fn summarize(&self, request: &SummaryRequest) -> Result<String> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": prompt_string(request.messages.iter())},
            ],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        });
        let this = self.clone();
        let summary = tokio::task::spawn_blocking(move || this.call_blocking(body))
            .await
            .map_err(|e| Error::backend("the summarizer thread failed").with_source(e))??;
        // Models overrun `max_tokens` only by being cut off, but a gateway may ignore it:
        // hold the summary to the budget either way.
        Ok(request
            .encoding
            .truncate(&summary, request.max_tokens)
            .to_string())
    }
}
