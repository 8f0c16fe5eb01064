//! A BERT encoder on candle-nn: just what a sentence-transformers model needs (no pooler, no
//! heads, absolute positions, one token type). Written here rather than taken from
//! `candle-transformers`, which compiles every model it ships to give us this one.

use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The fields of a Hugging Face BERT `config.json` the encoder uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_position_type")]
    pub position_embedding_type: String,
}

fn default_act() -> String {
    "gelu".into()
}

fn default_position_type() -> String {
    "absolute".into()
}

impl BertConfig {
    /// Why this configuration cannot run here, if it cannot.
    pub fn unsupported(&self) -> Option<String> {
        if self.hidden_act != "gelu" {
            return Some(format!("activation {:?} (only gelu)", self.hidden_act));
        }
        if self.position_embedding_type != "absolute" {
            let kind = &self.position_embedding_type;
            return Some(format!("position embeddings {kind:?} (only absolute)"));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            let (h, n) = (self.hidden_size, self.num_attention_heads);
            return Some(format!("hidden size {h} not divisible by {n} heads"));
        }
        None
    }
}

struct Embeddings {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, c: &BertConfig) -> candle_core::Result<Self> {
        Ok(Embeddings {
            words: embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
            positions: embedding(
                c.max_position_embeddings,
                c.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_types: embedding(
                c.type_vocab_size,
                c.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, ids: &Tensor, types: &Tensor) -> candle_core::Result<Tensor> {
        let len = ids.dim(1)?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?.unsqueeze(0)?;
        let x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .add(&self.token_types.forward(types)?)?;
        self.norm.forward(&x)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
    heads: usize,
}

impl Layer {
    fn load(vb: VarBuilder, c: &BertConfig) -> candle_core::Result<Self> {
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let attention = vb.pp("attention");
        let this = attention.pp("self");
        Ok(Layer {
            query: linear(h, h, this.pp("query"))?,
            key: linear(h, h, this.pp("key"))?,
            value: linear(h, h, this.pp("value"))?,
            attention_out: linear(h, h, attention.pp("output").pp("dense"))?,
            attention_norm: layer_norm(
                h,
                c.layer_norm_eps,
                attention.pp("output").pp("LayerNorm"),
            )?,
            intermediate: linear(h, i, vb.pp("intermediate").pp("dense"))?,
            output: linear(i, h, vb.pp("output").pp("dense"))?,
            output_norm: layer_norm(h, c.layer_norm_eps, vb.pp("output").pp("LayerNorm"))?,
            heads: c.num_attention_heads,
        })
    }

    /// `x`: (batch, tokens, hidden); `mask_bias`: (batch, 1, 1, tokens), 0 for real tokens and
    /// a large negative number for padding.
    fn forward(&self, x: &Tensor, mask_bias: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, len, hidden) = x.dims3()?;
        let head_dim = hidden / self.heads;
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((batch, len, self.heads, head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?.broadcast_add(mask_bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch, len, hidden))?;
        let x = self
            .attention_norm
            .forward(&(self.attention_out.forward(&context)? + x)?)?;
        let ff = self.intermediate.forward(&x)?.gelu_erf()?;
        self.output_norm.forward(&(self.output.forward(&ff)? + x)?)
    }
}

/// The encoder: token ids in, one hidden state per token out.
pub(crate) struct Bert {
    embeddings: Embeddings,
    layers: Vec<Layer>,
}

impl Bert {
    /// Loads the weights (Hugging Face names, with or without a `bert.` prefix).
    pub fn load(vb: VarBuilder, c: &BertConfig) -> candle_core::Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c))
            .collect::<candle_core::Result<_>>()?;
        Ok(Bert {
            embeddings: Embeddings::load(vb.pp("embeddings"), c)?,
            layers,
        })
    }

    /// Mean-pooled (over `mask`), L2-normalised sentence vectors: (batch, hidden).
    /// `ids` and `mask` are (batch, tokens), `u32`.
    pub fn embed(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let types = ids.zeros_like()?;
        let maskf = mask.to_dtype(DType::F32)?;
        // Padding gets a bias that makes its attention weight underflow to zero.
        let bias = ((maskf.ones_like()? - &maskf)? * -1e9)?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        let mut x = self.embeddings.forward(ids, &types)?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias)?;
        }
        let weights = maskf.unsqueeze(2)?;
        let summed = x.broadcast_mul(&weights)?.sum(1)?;
        // An all-padding row cannot happen (every text has [CLS] and [SEP]); clamp anyway.
        let counts = weights.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)
    }
}

/// The device inference runs on: the CPU (candle's CUDA and Metal back ends are not enabled).
pub(crate) fn device() -> Device {
    Device::Cpu
}
