//! [`LocalEmbedder`]: all-MiniLM-L6-v2 on the CPU, in pure Rust (feature `local`).

mod bert;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::Tensor;
use candle_nn::VarBuilder;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use agentmem_core::{Embedder, Error, ModelIdentity, Result};

use bert::{Bert, BertConfig};

/// The model's name, as [`ModelIdentity::id`] reports it.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2";

/// The environment variable that names the model directory for [`LocalEmbedder::from_env`].
pub const MODEL_DIR_ENV: &str = "AGENTMEM_MODEL_DIR";

/// How to install the model, as error messages show it.
pub const INSTALL_COMMAND: &str = "bash crates/agentmem-embed/install-model.sh [DIR]";

/// The files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The longest input, in tokens, the model embeds; longer texts are cut (MiniLM was trained
/// with 256, the sentence-transformers `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Texts per [`Embedder::embed`] batch by default.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// The sentence model all-MiniLM-L6-v2 (384 dimensions, unit length) run locally with candle:
/// BERT, mean pooling over the real tokens, L2 normalisation — the vectors
/// sentence-transformers computes. No network: the files come from a directory that
/// `install-model.sh` fills ([`INSTALL_COMMAND`]).
///
/// ```no_run
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use agentmem_core::Embedder;
/// use agentmem_embed::LocalEmbedder;
///
/// let embedder = LocalEmbedder::from_env()?;
/// let vectors = embedder.embed(&["what did Caroline say about adopting?".into()]).await?;
/// assert_eq!(vectors[0].len(), 384);
/// # Ok::<(), agentmem_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
    batch_size: usize,
}

struct Inner {
    dir: PathBuf,
    model: ModelIdentity,
    tokenizer: Tokenizer,
    bert: Bert,
}

impl fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dir", &self.inner.dir)
            .field("model", &self.inner.model)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

impl LocalEmbedder {
    /// Loads the model from `dir` (`model.safetensors`, `tokenizer.json`, `config.json`).
    /// `NotFound` when a file is missing (the message names [`INSTALL_COMMAND`]),
    /// `CorruptData` when one cannot be parsed.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        check_files(&dir)?;
        let config = load_config(&dir)?;
        let tokenizer = load_tokenizer(&dir, MAX_TOKENS.min(config.max_position_embeddings))?;
        let weights = dir.join("model.safetensors");
        let tensors = candle_core::safetensors::load(&weights, &bert::device())
            .map_err(|e| corrupt(&weights, e))?;
        let vb = VarBuilder::from_tensors(tensors, candle_core::DType::F32, &bert::device());
        let bert = Bert::load(vb, &config).map_err(|e| corrupt(&weights, e))?;
        let model = ModelIdentity {
            id: MODEL_ID.into(),
            dimensions: config.hidden_size,
            normalized: true,
        };
        Ok(LocalEmbedder {
            inner: Arc::new(Inner {
                dir,
                model,
                tokenizer,
                bert,
            }),
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Loads the model from [`default_model_dir`]: `$AGENTMEM_MODEL_DIR`, else
    /// `$HOME/.cache/agentmem/models/all-MiniLM-L6-v2`.
    pub fn from_env() -> Result<Self> {
        Self::from_dir(default_model_dir()?)
    }

    /// Sets how many texts one inference pass takes (at least 1); larger calls are split.
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }
}

/// Where [`LocalEmbedder::from_env`] looks: `$AGENTMEM_MODEL_DIR`, else
/// `$HOME/.cache/agentmem/models/all-MiniLM-L6-v2`. `NotFound` when neither variable is set.
pub fn default_model_dir() -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(MODEL_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    var("HOME")
        .map(|home| {
            PathBuf::from(home)
                .join(".cache/agentmem/models")
                .join(MODEL_ID)
        })
        .ok_or_else(|| {
            Error::not_found(format!(
                "no model directory: set {MODEL_DIR_ENV} (or HOME) and install the model with \
                 `{INSTALL_COMMAND}`"
            ))
        })
}

fn check_files(dir: &Path) -> Result<()> {
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::not_found(format!(
        "the {MODEL_ID} model is not installed in {} (missing {}): install it with \
         `{INSTALL_COMMAND}`",
        dir.display(),
        missing.join(", ")
    )))
}

fn corrupt(path: &Path, e: impl fmt::Display) -> Error {
    Error::corrupt(format!(
        "cannot load {}: {e}; reinstall the model with `{INSTALL_COMMAND}`",
        path.display()
    ))
}

fn load_config(dir: &Path) -> Result<BertConfig> {
    let path = dir.join("config.json");
    let text = std::fs::read(&path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let config: BertConfig = serde_json::from_slice(&text).map_err(|e| corrupt(&path, e))?;
    match config.unsupported() {
        Some(why) => Err(Error::unsupported(format!(
            "{}: unsupported BERT model: {why}",
            path.display()
        ))),
        None => Ok(config),
    }
}

/// The tokenizer with the padding and truncation sentence-transformers uses. The shipped
/// tokenizer.json pads and cuts every input to 128 tokens; mean pooling is over real tokens
/// only, so the padding costs time, but the cut changes the vectors of longer texts.
fn load_tokenizer(dir: &Path, max_tokens: usize) -> Result<Tokenizer> {
    let path = dir.join("tokenizer.json");
    let mut tokenizer = Tokenizer::from_file(&path).map_err(|e| corrupt(&path, e))?;
    let padding = PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..tokenizer.get_padding().cloned().unwrap_or_default()
    };
    let truncation = TruncationParams {
        max_length: max_tokens,
        ..tokenizer.get_truncation().cloned().unwrap_or_default()
    };
    tokenizer.with_padding(Some(padding));
    tokenizer
        .with_truncation(Some(truncation))
        .map_err(|e| corrupt(&path, e))?;
    Ok(tokenizer)
}

impl Inner {
    /// One forward pass over `texts` (blocking).
    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let model_error =
            |e: candle_core::Error| Error::backend(format!("{MODEL_ID} inference failed: {e}"));
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::invalid_input(format!("cannot tokenize the text: {e}")))?;
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(texts.len() * len);
        let mut mask = Vec::with_capacity(texts.len() * len);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let shape = (texts.len(), len);
        let device = bert::device();
        let ids = Tensor::from_vec(ids, shape, &device).map_err(model_error)?;
        let mask = Tensor::from_vec(mask, shape, &device).map_err(model_error)?;
        self.bert
            .embed(&ids, &mask)
            .and_then(|t| t.to_vec2::<f32>())
            .map_err(model_error)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &ModelIdentity {
        &self.inner.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        let batch_size = self.batch_size;
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(batch_size) {
                out.extend(inner.embed_batch(chunk)?);
            }
            Ok(out)
        })
        .await
        .map_err(|e| Error::backend(format!("the {MODEL_ID} thread failed")).with_source(e))?
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }
}
