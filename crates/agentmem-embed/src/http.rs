//! [`HttpEmbedder`]: any OpenAI-compatible embeddings server (feature `http`).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use agentmem_core::{redact_url, Embedder, Error, ModelIdentity, Result};

/// The base URL [`HttpEmbedder::openai`] uses.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com";

/// The environment variable the API key comes from unless another is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Embeds with a model behind an OpenAI-compatible `POST {base}/v1/embeddings` (OpenAI, vLLM,
/// Ollama, LiteLLM, text-embeddings-inference, …).
///
/// The API key is read from an environment variable ([`DEFAULT_API_KEY_ENV`] unless
/// [`with_api_key_env`](Self::with_api_key_env) names another) and sent as a bearer token;
/// `Debug` and errors never show it. The dimensions are given
/// ([`with_dimensions`](Self::with_dimensions)) or learnt from the first response;
/// [`model`](Embedder::model) reports 0 dimensions until then, and [`probe`](Self::probe)
/// learns them up front. Each call runs on a blocking thread (ureq) with a timeout (60 s by
/// default).
///
/// Errors: an unreachable server, a timeout, HTTP 408, 429 and 5xx are `Unavailable`; other
/// 4xx answers are `InvalidInput` with the server's message; a reply that is not a list of
/// vectors, one per text, of one length, is `CorruptData`.
///
/// ```no_run
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agentmem_core::Embedder;
/// use agentmem_embed::HttpEmbedder;
///
/// // A local Ollama; OpenAI itself is `HttpEmbedder::openai("text-embedding-3-small")`.
/// let embedder = HttpEmbedder::new("http://localhost:11434", "nomic-embed-text");
/// let model = embedder.probe().await?;
/// let vectors = embedder.embed(&["what did Caroline say about adopting?".into()]).await?;
/// assert_eq!(vectors[0].len(), model.dimensions);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct HttpEmbedder {
    base_url: String,
    api_key_env: String,
    api_key: Option<String>,
    timeout: Duration,
    batch_size: usize,
    /// Before the dimensions are known: the identity with 0 dimensions.
    unknown: ModelIdentity,
    /// Shared by clones, so a dimension learnt by one call holds for all.
    known: Arc<OnceLock<ModelIdentity>>,
}

impl fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("endpoint", &self.shown_endpoint())
            .field("model", self.model())
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

fn read_key(env: &str) -> Option<String> {
    std::env::var(env)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl HttpEmbedder {
    /// An embedder for `model` at `base_url` (`http://localhost:11434`; a trailing `/v1` is
    /// accepted too), with the API key from [`DEFAULT_API_KEY_ENV`] when it is set.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        HttpEmbedder {
            base_url: base_url.into(),
            api_key_env: DEFAULT_API_KEY_ENV.into(),
            api_key: read_key(DEFAULT_API_KEY_ENV),
            timeout: Duration::from_secs(60),
            batch_size: 32,
            unknown: ModelIdentity {
                id: model.into(),
                dimensions: 0,
                normalized: false,
            },
            known: Arc::new(OnceLock::new()),
        }
    }

    /// An embedder for `model` on OpenAI's API ([`DEFAULT_BASE_URL`]); OpenAI's embeddings
    /// have unit length.
    pub fn openai(model: impl Into<String>) -> Self {
        Self::new(DEFAULT_BASE_URL, model).with_normalized(true)
    }

    /// Reads the API key from the environment variable `name` instead (no key when unset).
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = name.into();
        self.api_key = read_key(&self.api_key_env);
        self
    }

    /// Sets the dimensions instead of learning them; a reply of another length is then
    /// `CorruptData`.
    pub fn with_dimensions(mut self, dimensions: usize) -> Self {
        let model = ModelIdentity {
            dimensions,
            ..self.unknown.clone()
        };
        self.known = Arc::new(OnceLock::from(model));
        self
    }

    /// Declares whether the server's vectors have unit length (default: not assumed).
    pub fn with_normalized(mut self, normalized: bool) -> Self {
        self.unknown.normalized = normalized;
        if let Some(model) = self.known.get() {
            let model = ModelIdentity {
                normalized,
                ..model.clone()
            };
            self.known = Arc::new(OnceLock::from(model));
        }
        self
    }

    agentmem_core::setters! {
        /// Sets the timeout of one request.
        pub fn with_timeout(timeout: Duration) { self.timeout = timeout }

        /// Sets how many texts one request carries at most (at least 1); larger calls are split.
        pub fn with_batch_size(batch_size: usize) { self.batch_size = batch_size.max(1) }
    }

    /// The URL requests go to: `{base}/v1/embeddings`.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/embeddings")
    }

    /// The model with its dimensions, asking the server for one vector when they are not
    /// known yet.
    pub async fn probe(&self) -> Result<ModelIdentity> {
        if self.known.get().is_none() {
            self.embed(&["dimension probe".into()]).await?;
        }
        Ok(self.model().clone())
    }

    /// The endpoint as errors show it: credentials in the URL hidden.
    fn shown_endpoint(&self) -> String {
        redact_url(&self.endpoint())
    }

    /// Refuses to send texts and the key in clear text: `https://` is required, except to a
    /// loopback address (a local model server).
    fn check_transport(&self) -> Result<()> {
        agentmem_core::transport::check_transport(
            &self.endpoint(),
            "embedding server URL",
            "the texts",
        )
    }

    /// One request (blocking): the vectors of `texts`, in order.
    fn call_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.check_transport()?;
        let shown = self.shown_endpoint();
        let body = json!({ "model": self.unknown.id, "input": texts });
        let (status, text) = agentmem_core::transport::post_json(
            &self.endpoint(),
            &shown,
            self.api_key.as_deref(),
            &body,
            self.timeout,
        )?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(status, &text));
        }
        let reply: EmbeddingsReply = serde_json::from_str(&text).map_err(|e| {
            Error::corrupt(format!(
                "{shown} answered with something that is not a list of embeddings"
            ))
            .with_source(e)
        })?;
        self.order(reply, texts.len())
    }

    fn status_error(&self, status: u16, body: &str) -> Error {
        // OpenAI and most compatible servers put the reason in `error.message`.
        let reason = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                let error = v.get("error")?;
                let message = error.get("message").unwrap_or(error);
                message.as_str().map(str::to_owned)
            })
            .unwrap_or_else(|| body.chars().take(300).collect());
        let message = format!("{} answered HTTP {status}: {reason}", self.shown_endpoint());
        match status {
            401 | 403 => Error::invalid_input(format!(
                "{message} (check the API key in ${})",
                self.api_key_env
            )),
            408 | 429 | 500..=599 => Error::unavailable(message),
            400..=499 => Error::invalid_input(message),
            _ => Error::backend(message),
        }
    }

    /// The reply's vectors sorted by `index`, checked: one per text, all of the model's length.
    fn order(&self, reply: EmbeddingsReply, count: usize) -> Result<Vec<Vec<f32>>> {
        let shown = self.shown_endpoint();
        let bad = |why: String| Error::corrupt(format!("{shown} answered {why}"));
        if reply.data.len() != count {
            let got = reply.data.len();
            return Err(bad(format!("{got} embeddings for {count} texts")));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; count];
        for item in reply.data {
            match slots.get_mut(item.index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                Some(Some(_)) => return Err(bad(format!("index {} twice", item.index))),
                None => return Err(bad(format!("index {} for {count} texts", item.index))),
            }
        }
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        let dims = vectors.first().map_or(0, Vec::len);
        if dims == 0 {
            return Err(bad("an empty embedding".into()));
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != dims) {
            return Err(bad(format!(
                "embeddings of {} and {dims} dimensions",
                v.len()
            )));
        }
        let model = self.known.get_or_init(|| ModelIdentity {
            dimensions: dims,
            ..self.unknown.clone()
        });
        if model.dimensions != dims {
            let want = model.dimensions;
            return Err(bad(format!("{dims}-dimensional embeddings, not {want}")));
        }
        Ok(vectors)
    }
}

#[derive(Deserialize)]
struct EmbeddingsReply {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

#[async_trait]
impl Embedder for HttpEmbedder {
    fn model(&self) -> &ModelIdentity {
        self.known.get().unwrap_or(&self.unknown)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(this.batch_size) {
                out.extend(this.call_blocking(chunk)?);
            }
            Ok(out)
        })
        .await
        .map_err(|e| Error::backend("the embedding request thread failed").with_source(e))?
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }
}
