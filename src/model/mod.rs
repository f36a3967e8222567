//! Running a quantized LLM: architecture config, weights, KV cache, the forward pass, tokenizer,
//! sampler and chat format.
//!
//! [`Model::load`] takes the bytes of a GGUF file by value and keeps their data section (moved
//! to the front of the same buffer) as the one buffer the quantized weights point into; a
//! [`Session`] holds one conversation's KV cache and scratch.

mod attention;
pub mod chat;
pub mod config;
pub mod generate;
pub mod kv_cache;
mod miniature;
pub mod profile;
pub mod sampler;
pub mod session;
pub mod tokenizer;
pub mod transformer;
mod warm_up;
pub mod weights;

use std::sync::Arc;

pub use config::{Arch, Config};
pub use session::Session;
pub use transformer::Logits;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gguf::{Array, GgufFile, StrArray, Value};
use crate::storage::{try_copy, try_vec};
use tokenizer::{Tokenizer, TokenizerConfig};
use weights::Weights;

/// A loaded model: config, weights (views into the file buffer) and tokenizer.
///
/// The parts are read-only: the forward pass relies on the config, weights and file agreeing.
pub struct Model {
    config: Config,
    weights: Weights,
    tokenizer: Tokenizer,
    gguf: GgufFile,
    file_size: usize,
    /// Names the file for saved sessions (`session::file_fingerprint` of the header).
    fingerprint: u64,
}

impl Model {
    /// Parses and loads a GGUF file. The bytes are kept (not copied; the header is dropped from
    /// their front) as the storage of every quantized weight.
    pub fn load(bytes: Vec<u8>) -> Result<Model> {
        Model::load_with_layout(bytes, crate::quant::interleave::fast)
    }

    /// [`Model::load`] with the weights' layout chosen by the caller rather than the build: the
    /// matrices of the ×4 formats for which `interleave` says yes are rearranged four rows at a
    /// time (`quant::interleave`; the build's choice is `interleave::fast`), which every build
    /// runs (on the scalar kernels where it has no ×4 dot) with the same bits.
    pub fn load_with_layout(mut bytes: Vec<u8>, interleave: fn(DType) -> bool) -> Result<Model> {
        let mut gguf = GgufFile::parse(&bytes)?;
        let config = Config::from_gguf(&gguf)?;
        let file_size = bytes.len();
        let head = &bytes[..gguf.data_offset.min(file_size)];
        let fingerprint = session::file_fingerprint(head, file_size);
        drop_header(&mut bytes, &mut gguf)?;
        let interleaved = Weights::interleave(&mut bytes, &gguf, interleave)?;
        // The data section (the header is dropped above) is owned by the weights' views.
        let weights = Weights::load(&config, &gguf, &Arc::new(bytes), &interleaved)?;
        let tokenizer = take_tokenizer(&mut gguf)?;
        if tokenizer.vocab_size() != config.n_vocab {
            return Err(Error::UnsupportedModel {
                reason: format!(
                    "{} tokens in the vocabulary but {} embedding rows",
                    tokenizer.vocab_size(),
                    config.n_vocab
                ),
            });
        }
        Ok(Model {
            config,
            weights,
            tokenizer,
            gguf,
            file_size,
            fingerprint,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The file's metadata and tensor table, minus the vocabulary arrays (`tokenizer.ggml.tokens`,
    /// `.scores`, `.token_type`), which moved into [`Model::tokenizer`]. The model keeps only the
    /// data section, so tensor offsets count from its start (`data_offset` is 0).
    pub fn gguf(&self) -> &GgufFile {
        &self.gguf
    }

    /// How this model formats a conversation (its chat template, or the Gemma format).
    pub fn chat_format(&self) -> chat::ChatFormat<'_> {
        chat::ChatFormat::new(&self.gguf, &self.tokenizer)
    }

    /// Size of the GGUF file the model was loaded from.
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// A hash of the file's header and its length: what a saved session is checked against.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Total number of weights (elements of every tensor in the file).
    pub fn parameter_count(&self) -> u64 {
        // Saturating: tensors may share data, so the sum is not bounded by the file size.
        self.gguf
            .tensors
            .iter()
            .fold(0u64, |a, t| a.saturating_add(t.numel() as u64))
    }

    /// Runs the model once on a throwaway session, so the browser has compiled what a first
    /// prompt runs before it comes (`warm_up.rs`; llama.cpp warms up after loading too).
    pub fn warm_up(&self) -> Result<()> {
        warm_up::warm_up(self)
    }

    /// A session with a KV cache for `context` positions (at most the trained context length).
    pub fn session(&self, context: usize) -> Result<Session> {
        Session::new(self, self.context_for(context))
    }

    /// [`Model::session`] without its first pass's buffers written (`Session::bare`).
    pub(super) fn bare_session(&self, context: usize) -> Result<Session> {
        Session::bare(self, self.context_for(context))
    }

    /// `context` positions within 1 ..= the trained context length.
    fn context_for(&self, context: usize) -> usize {
        context.clamp(1, self.config.context_length.max(1))
    }
}

/// Drops the header (metadata and tensor table, parsed into `g` by now) from the front of
/// `bytes` and rebases `g`'s tensor offsets onto what is left. In wasm, memory once written stays
/// resident and the header is the vocabulary's few megabytes: handed back to the allocator, it
/// is where the tokenizer's tables and the first scratch buffers land instead of fresh pages.
/// The data keeps its alignment: `data_offset` is a multiple of the file's alignment.
fn drop_header(bytes: &mut Vec<u8>, g: &mut GgufFile) -> Result<()> {
    let head = g.data_offset.min(bytes.len());
    for t in &mut g.tensors {
        t.offset = t
            .offset
            .checked_sub(head)
            .ok_or_else(|| Error::InvalidGguf {
                offset: t.offset as u64,
                reason: format!("tensor {:?} starts inside the header", t.name),
            })?;
    }
    g.data_offset = 0;
    bytes.drain(..head);
    bytes.shrink_to_fit(); // in place: dlmalloc splits the block and frees its tail
    Ok(())
}

/// The SPM tokenizer described by a GGUF file's `tokenizer.ggml.*` keys.
pub fn tokenizer_from_gguf(g: &GgufFile) -> Result<Tokenizer> {
    let tokens = g.get_str_array("tokenizer.ggml.tokens")?.clone();
    let scores = g.get_f32_array("tokenizer.ggml.scores").ok().map(try_copy);
    let types = g
        .get_i32_array("tokenizer.ggml.token_type")
        .ok()
        .map(try_copy);
    build_tokenizer(g, tokens, scores.transpose()?, types.transpose()?)
}

/// [`tokenizer_from_gguf`] that moves the vocabulary arrays out of `g`'s metadata instead of
/// copying them: the tokenizer builds its own arena, so the model would otherwise hold the
/// vocabulary twice.
fn take_tokenizer(g: &mut GgufFile) -> Result<Tokenizer> {
    let mut take = |key: &str| {
        let at = g.metadata.iter().position(|(k, _)| k == key)?;
        Some(g.metadata.remove(at).1)
    };
    let (tokens, scores, types) = (
        take("tokenizer.ggml.tokens"),
        take("tokenizer.ggml.scores"),
        take("tokenizer.ggml.token_type"),
    );
    let tokens = match tokens {
        Some(Value::Array(Array::String(t))) => t,
        _ => return tokenizer_from_gguf(g), // missing or mistyped: the same error as the copy
    };
    let scores = match scores {
        Some(Value::Array(Array::F32(s))) => Some(s),
        _ => None,
    };
    let types = match types {
        Some(Value::Array(Array::I32(t))) => Some(t),
        _ => None,
    };
    build_tokenizer(g, tokens, scores, types)
}

fn build_tokenizer(
    g: &GgufFile,
    tokens: StrArray,
    scores: Option<Vec<f32>>,
    types: Option<Vec<i32>>,
) -> Result<Tokenizer> {
    let model = g.get_str("tokenizer.ggml.model")?;
    let bpe = match model {
        "llama" => false,
        "gpt2" => true,
        other => {
            return Err(Error::UnsupportedModel {
                reason: format!(
                    "tokenizer {other:?} (supported: llama = SentencePiece, gpt2 = byte-level BPE)"
                ),
            })
        }
    };
    let scores = scores.map_or_else(|| try_vec(tokens.len(), 0.0), Ok)?;
    let types = types.map_or_else(|| try_vec(tokens.len(), 1), Ok)?;
    let id = |k: &str| g.get_u32(k).ok();
    let flag = |k: &str, default: bool| g.get_bool(k).unwrap_or(default);
    let config = TokenizerConfig {
        bos: id("tokenizer.ggml.bos_token_id"),
        eos: id("tokenizer.ggml.eos_token_id"),
        eot: id("tokenizer.ggml.eot_token_id"),
        unk: id("tokenizer.ggml.unknown_token_id"),
        pad: id("tokenizer.ggml.padding_token_id"),
        add_bos: flag("tokenizer.ggml.add_bos_token", true),
        add_eos: flag("tokenizer.ggml.add_eos_token", false),
        add_space_prefix: flag("tokenizer.ggml.add_space_prefix", !bpe),
        rstrip_specials: g.get_str("general.name").is_ok_and(|n| {
            let n = n.to_lowercase();
            n.contains("phi3") || n.contains("phi-3")
        }),
    };
    let tok = Tokenizer::new(tokens, scores, types, config)?;
    if !bpe {
        return Ok(tok);
    }
    let merges = g.get_str_array("tokenizer.ggml.merges")?;
    let pre = g.get_str("tokenizer.ggml.pre").unwrap_or("default");
    tok.into_bpe(merges, pre)
}
