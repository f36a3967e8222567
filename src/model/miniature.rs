//! A miniature of a loaded model for the warm-up: its architecture, options and weight formats,
//! with every dimension a few hundred wide and every weight zero.
//!
//! V8 optimises a wasm function once the code it ran adds up to a budget. The forward pass's
//! driving code (the per-layer functions, the matmul's set-up, the loops' hand-out) runs a few
//! times per layer whatever the model's size: full-size passes that made it hot before a first
//! prompt took seconds, where the miniature's 300 passes add ~20 ms to a load (`warm_up.rs`).

use super::config::Config;
use super::kv_cache::KvCache;
use super::transformer::{self, Logits, Scratch};
use super::weights::{LayerWeights, Linear, Weights};
use crate::error::Result;
use crate::quant::interleave::GROUP;
use crate::storage::try_vec;
use crate::Tensor;

/// Width of the embedding, the feed-forward and the vocabulary: a whole block of every format
/// (the K formats' are 256).
const WIDTH: usize = 256;

/// Most layers: enough for Gemma 3's pattern of five sliding-window layers and a global one.
const LAYERS: usize = 6;

pub(super) struct Miniature {
    cfg: Config,
    w: Weights,
    cache: KvCache,
    scratch: Scratch,
}

impl Miniature {
    /// The miniature of the model `cfg` and `w` describe, with a cache of `context` positions.
    pub(super) fn of(cfg: &Config, w: &Weights, context: usize) -> Result<Miniature> {
        let hd = cfg.head_dim;
        // The query width a whole number of blocks and of heads: lcm(head_dim, WIDTH).
        let n_head = WIDTH / gcd(hd, WIDTH);
        let n_head_kv = if cfg.n_head_kv == cfg.n_head {
            n_head
        } else {
            1
        };
        let cfg = Config {
            n_vocab: WIDTH,
            n_embd: WIDTH,
            n_ff: WIDTH,
            n_layer: cfg.n_layer.min(LAYERS),
            n_head,
            n_head_kv,
            context_length: context,
            ..cfg.clone()
        };
        cfg.validate()?;
        let (qd, kvd) = (cfg.q_dim(), cfg.kv_dim());
        let layers = w.layers.iter().take(cfg.n_layer);
        let w = Weights {
            token_embd: like(&w.token_embd, WIDTH, WIDTH)?,
            output: w
                .output
                .as_ref()
                .map(|o| like(o, WIDTH, WIDTH))
                .transpose()?,
            output_norm: ones(WIDTH)?,
            rope_freqs: w.rope_freqs.clone(),
            layers: layers
                .map(|l| layer(l, qd, kvd, hd))
                .collect::<Result<_>>()?,
        };
        let cache = KvCache::new(cfg.n_layer, context, kvd)?;
        Ok(Miniature {
            cfg,
            w,
            cache,
            scratch: Scratch::default(),
        })
    }

    /// `passes` one-token forward passes with the LM head and its greedy pick, positions cycling
    /// through the cache.
    pub(super) fn run(&mut self, passes: usize) -> Result<()> {
        let capacity = self.cache.capacity();
        for p in 0..passes {
            let (cfg, w) = (&self.cfg, &self.w);
            let (cache, s) = (&mut self.cache, &mut self.scratch);
            transformer::forward(cfg, w, cache, s, &[0], p % capacity, Logits::LastAndTop)?;
        }
        Ok(())
    }
}

/// A layer shaped like `l` (the same formats and optional parts) at the miniature's sizes.
fn layer(l: &LayerWeights, qd: usize, kvd: usize, hd: usize) -> Result<LayerWeights> {
    let some = |v: &Option<Vec<f32>>, n: usize, f: fn(usize) -> Result<Vec<f32>>| {
        v.as_ref().map(|_| f(n)).transpose()
    };
    Ok(LayerWeights {
        attn_norm: ones(WIDTH)?,
        wq: like(&l.wq, qd, WIDTH)?,
        wk: like(&l.wk, kvd, WIDTH)?,
        wv: like(&l.wv, kvd, WIDTH)?,
        bq: some(&l.bq, qd, zeros)?,
        bk: some(&l.bk, kvd, zeros)?,
        bv: some(&l.bv, kvd, zeros)?,
        q_norm: some(&l.q_norm, hd, ones)?,
        k_norm: some(&l.k_norm, hd, ones)?,
        wo: like(&l.wo, WIDTH, qd)?,
        post_attn_norm: some(&l.post_attn_norm, WIDTH, ones)?,
        ffn_norm: ones(WIDTH)?,
        w_gate: like(&l.w_gate, WIDTH, WIDTH)?,
        w_up: like(&l.w_up, WIDTH, WIDTH)?,
        w_down: like(&l.w_down, WIDTH, WIDTH)?,
        post_ffn_norm: some(&l.post_ffn_norm, WIDTH, ones)?,
    })
}

/// A zero `[out, inp]` matrix stored as `l` is (its format, interleaved or not).
fn like(l: &Linear, out: usize, inp: usize) -> Result<Linear> {
    Ok(match l {
        Linear::Quant(t) => {
            let bytes = try_vec(t.dtype().storage_bytes(out * inp)?, 0u8)?;
            Linear::Quant(Tensor::from_quantized(t.dtype(), bytes, [out, inp])?)
        }
        Linear::Interleaved { dtype, .. } if out % GROUP == 0 => Linear::Interleaved {
            dtype: *dtype,
            bytes: try_vec(dtype.storage_bytes(out * inp)?, 0u8)?.into(),
            out,
            inp,
        },
        Linear::Interleaved { dtype, .. } => {
            let bytes = try_vec(dtype.storage_bytes(out * inp)?, 0u8)?;
            Linear::Quant(Tensor::from_quantized(*dtype, bytes, [out, inp])?)
        }
        Linear::Dense { .. } => Linear::Dense {
            w: zeros(out * inp)?,
            out,
            inp,
        },
    })
}

fn ones(n: usize) -> Result<Vec<f32>> {
    try_vec(n, 1.0)
}

fn zeros(n: usize) -> Result<Vec<f32>> {
    try_vec(n, 0.0)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

    /// Every architecture's miniature, the mixed-format fixture's too, runs with its LM head, and
    /// its zero weights give zero logits (the embedding, and so every layer's input, is zero).
    #[test]
    fn every_architecture_has_a_miniature_with_zero_logits() {
        for file in [
            &include_bytes!("../../tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf")[..],
            include_bytes!("../../tests/fixtures/tiny-llama-mix/tiny-llama-mix.gguf"),
            include_bytes!("../../tests/fixtures/tiny-phi3/tiny-phi3-q4_0.gguf"),
            include_bytes!("../../tests/fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf"),
            include_bytes!("../../tests/fixtures/tiny-qwen3/tiny-qwen3-q4_0.gguf"),
        ] {
            let model = Model::load(file.to_vec()).unwrap();
            let arch = model.config().arch;
            let mut m = Miniature::of(model.config(), model.weights(), 8).unwrap();
            m.run(20).unwrap();
            let logits = m.scratch.logits(WIDTH);
            assert!(logits.iter().all(|&v| v == 0.0), "{arch:?}");
            assert_eq!(m.scratch.top(), Some(0), "{arch:?}");
        }
    }
}
