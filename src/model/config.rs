//! Hyper-parameters of a decoder-only transformer, read from GGUF metadata.
//!
//! Everything architecture-specific that is a *number or a switch* lives here, so the forward
//! pass in `transformer.rs` stays one plain loop for every supported architecture.

use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::shape::checked_product;

/// The architectures this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Gemma 3: scaled embeddings, q/k norms, post-attention/post-FFN norms, GELU-tanh gated FFN,
    /// sliding-window layers with their own RoPE base, tied LM head.
    Gemma3,
    /// The llama family: plain pre-norm blocks, SiLU gated FFN, one RoPE base (normal pairs,
    /// optionally linearly scaled and per-dimension `rope_freqs`), tied or untied output.
    Llama,
    /// Qwen 2 / 2.5: llama with q/k/v biases and NEOX RoPE.
    Qwen2,
    /// Qwen 3: llama with per-head q/k RMSNorms, NEOX RoPE and an explicit head size.
    Qwen3,
    /// Phi-3: llama with fused `attn_qkv` and gate|up `ffn_up`, NEOX RoPE, full attention (the
    /// file's sliding-window key is ignored, as llama.cpp does).
    Phi3,
}

impl Arch {
    /// GGUF `general.architecture` names and the architectures they are.
    pub const TABLE: [(&'static str, Arch); 5] = [
        ("gemma3", Arch::Gemma3),
        ("llama", Arch::Llama),
        ("qwen2", Arch::Qwen2),
        ("qwen3", Arch::Qwen3),
        ("phi3", Arch::Phi3),
    ];

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::TABLE
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, a)| a)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    GeluTanh,
    Silu,
}

/// How RoPE pairs dimensions: NEOX rotates `(i, i + d/2)`, the original (GPT-J) style `(2i, 2i+1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    Neox,
    Normal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub arch: Arch,
    pub n_vocab: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub n_ff: usize,
    pub rms_eps: f32,
    /// RoPE base of global (full-attention) layers.
    pub rope_base: f32,
    /// RoPE base of sliding-window layers.
    pub rope_base_swa: f32,
    pub rope_style: RopeStyle,
    /// How many leading dimensions of each head RoPE rotates (`rope.dimension_count`).
    pub n_rot: usize,
    /// Linear RoPE scaling: positions are multiplied by this (`1 / rope.scaling.factor`).
    pub rope_freq_scale: f32,
    /// Window of the sliding layers in positions, self included (`None`: every layer is global).
    pub sliding_window: Option<usize>,
    /// Layer `il` is global iff `il % swa_period == swa_period - 1` (Gemma 3: 6).
    pub swa_period: usize,
    /// Token embeddings are multiplied by this (Gemma: `sqrt(n_embd)`).
    pub embed_scale: Option<f32>,
    /// Queries are multiplied by this before `q·k` (`1/sqrt(head_dim)`).
    pub attn_scale: f32,
    /// Per-head RMSNorms of q and k before RoPE (`attn_q_norm`, `attn_k_norm`).
    pub qk_norm: bool,
    /// Biases added after the q, k and v projections.
    pub qkv_bias: bool,
    /// RMSNorms of each block's output before the residual add.
    pub post_norms: bool,
    pub activation: Activation,
    /// The context length the model was trained with (an upper bound for the KV cache).
    pub context_length: usize,
}

impl Config {
    pub fn from_gguf(g: &GgufFile) -> Result<Config> {
        let arch_name = g.architecture()?.to_string();
        let arch = Arch::from_name(&arch_name).ok_or_else(|| Error::UnsupportedModel {
            reason: format!(
                "architecture {arch_name:?} (supported: {})",
                Arch::TABLE.map(|(n, _)| n).join(", ")
            ),
        })?;
        let key = |k: &str| format!("{arch_name}.{k}");
        let u = |k: &str| g.get_u32(&key(k)).map(|v| v as usize);
        let n_embd = u("embedding_length")?;
        let n_head = u("attention.head_count")?;
        let head_dim = match u("attention.key_length") {
            Ok(d) => d,
            Err(_) if n_head > 0 => n_embd / n_head,
            Err(e) => return Err(e),
        };
        let n_vocab = g.get_str_array("tokenizer.ggml.tokens")?.len();
        let rope_base = g.get_f32(&key("rope.freq_base")).unwrap_or(10_000.0);
        let gemma = arch == Arch::Gemma3;
        let sliding_window = match arch {
            Arch::Gemma3 => u("attention.sliding_window").ok().filter(|&w| w > 0),
            _ => None,
        };
        let rope_freq_scale = match g.get_str(&key("rope.scaling.type")) {
            Ok("linear") => 1.0 / g.get_f32(&key("rope.scaling.factor"))?,
            _ => 1.0,
        };
        let cfg = Config {
            arch,
            n_vocab,
            n_embd,
            n_layer: u("block_count")?,
            n_head,
            n_head_kv: u("attention.head_count_kv").unwrap_or(n_head),
            head_dim,
            n_ff: u("feed_forward_length")?,
            rms_eps: g.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
            rope_base,
            rope_base_swa: if gemma { 10_000.0 } else { rope_base },
            rope_style: match arch {
                Arch::Llama => RopeStyle::Normal,
                _ => RopeStyle::Neox,
            },
            n_rot: u("rope.dimension_count").unwrap_or(head_dim),
            rope_freq_scale,
            sliding_window,
            swa_period: 6,
            embed_scale: gemma.then(|| (n_embd as f32).sqrt()),
            attn_scale: 1.0 / (head_dim as f32).sqrt(),
            qk_norm: matches!(arch, Arch::Gemma3 | Arch::Qwen3),
            qkv_bias: arch == Arch::Qwen2,
            post_norms: gemma,
            activation: if gemma {
                Activation::GeluTanh
            } else {
                Activation::Silu
            },
            context_length: u("context_length").unwrap_or(2048),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Errors unless the forward pass can run this config: no zero or odd sizes, heads that
    /// group, and head products that fit `usize` (on wasm32 `n_head · head_dim` from a file can
    /// wrap to a small number that matches a real weight). [`Config::from_gguf`] calls it; the
    /// forward pass does too, since the fields are public.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(Error::UnsupportedModel { reason });
        if self.n_embd == 0
            || self.n_layer == 0
            || self.n_head == 0
            || self.head_dim == 0
            || self.swa_period == 0
            || self.sliding_window == Some(0)
        {
            return bad(format!("degenerate dimensions {self:?}"));
        }
        checked_product("query heads × head size", &[self.n_head, self.head_dim])?;
        checked_product("KV heads × head size", &[self.n_head_kv, self.head_dim])?;
        if self.n_head_kv == 0 || self.n_head % self.n_head_kv != 0 {
            return bad(format!(
                "{} query heads cannot share {} KV heads",
                self.n_head, self.n_head_kv
            ));
        }
        if self.n_rot % 2 != 0 || self.n_rot == 0 || self.n_rot > self.head_dim {
            return bad(format!(
                "RoPE over {} of {} head dimensions cannot be rotated",
                self.n_rot, self.head_dim
            ));
        }
        if !(self.rope_freq_scale.is_finite() && self.rope_freq_scale > 0.0) {
            return bad(format!("RoPE scale {}", self.rope_freq_scale));
        }
        Ok(())
    }

    /// Whether layer `il` attends through the sliding window.
    pub fn is_sliding(&self, il: usize) -> bool {
        self.sliding_window.is_some() && il % self.swa_period != self.swa_period - 1
    }

    /// `n_head · head_dim` (exact once [`Config::validate`] passed; saturating otherwise).
    pub fn q_dim(&self) -> usize {
        self.n_head.saturating_mul(self.head_dim)
    }

    /// `n_head_kv · head_dim` (exact once [`Config::validate`] passed; saturating otherwise).
    pub fn kv_dim(&self) -> usize {
        self.n_head_kv.saturating_mul(self.head_dim)
    }
}
