//! The forward pass of a decoder-only transformer, in the plain style of llama2.c: `forward`
//! reads top to bottom as embed → (attention, feed-forward) per layer → LM head, each a named
//! step with explicit loops over rows, heads and positions and shapes in the comments; every
//! buffer is preallocated in `Scratch` so a decode step allocates nothing. What differs between
//! architectures is data in `Config` and `Weights` (optional biases and norms, RoPE style and
//! extent), never a branch on the architecture here.

use super::attention::{self, AttnScratch};
use super::config::{Activation, Config, RopeStyle};
use super::kv_cache::KvCache;
use super::profile::{self, Section};
use super::weights::{LayerWeights, Linear, Weights};
use crate::error::{Error, Result};
use crate::ops::kernels;
use crate::ops::{gelu_tanh, rms_norm_in_place, rms_norm_row, rms_scale};
use crate::parallel;
use crate::quant::MatmulScratch;
use crate::shape::checked_product;
use crate::storage::{try_extend_rows, try_grow as grow};
use half::f16;
use std::sync::OnceLock;

/// Working buffers for a batch of `rows` tokens; they grow (once) for a longer prompt or a
/// larger model, and are never shrunk.
#[derive(Default)]
pub struct Scratch {
    x: Vec<f32>,       // [rows, n_embd]  residual stream
    xb: Vec<f32>,      // [rows, n_embd]  normed input of a sub-block
    q: Vec<f32>,       // [rows, q_dim]
    k: Vec<f32>,       // [rows, kv_dim]
    v: Vec<f32>,       // [rows, kv_dim]
    att: Vec<f32>,     // [rows, q_dim]   attention output before the projection
    proj: Vec<f32>,    // [rows, n_embd]  output of wo / w_down
    gate: Vec<f32>,    // [rows, n_ff]
    up: Vec<f32>,      // [rows, n_ff]
    attn: AttnScratch, // attention scores
    rope: Vec<f32>,    // [2 bases, rows, (cos, sin), n_rot/2]
    mm: MatmulScratch, // quantized activations and matmul buffers
    logits: Vec<f32>,  // [rows or 1, n_vocab]
    /// The first largest of the last [`forward`]'s logits, when it was asked for.
    top: Option<u32>,
}

impl Scratch {
    /// The first `len` logits of the last [`forward`] (what it returned, borrowed again).
    pub(super) fn logits(&self, len: usize) -> &[f32] {
        &self.logits[..len]
    }

    /// The index of the first largest of the last [`forward`]'s logits (NaN skipped), found in
    /// the LM head's tasks; `None` unless it ran for [`Logits::LastAndTop`], or when every
    /// logit was NaN.
    pub(super) fn top(&self) -> Option<u32> {
        self.top
    }

    fn ensure(
        &mut self,
        cfg: &Config,
        rows: usize,
        logit_rows: usize,
        context: usize,
    ) -> Result<()> {
        // Every buffer is checked on every call (a length comparison each): the scratch may
        // have served another model, and `rows · n_ff` or `rows · n_vocab` may not fit.
        let (d, qd, kvd, ff) = (cfg.n_embd, cfg.q_dim(), cfg.kv_dim(), cfg.n_ff);
        for (v, w) in [
            (&mut self.x, d),
            (&mut self.xb, d),
            (&mut self.q, qd),
            (&mut self.k, kvd),
            (&mut self.v, kvd),
            (&mut self.att, qd),
            (&mut self.proj, d),
            (&mut self.gate, ff),
            (&mut self.up, ff),
        ] {
            // Fresh memory's first touch over the threads (`try_extend_rows`).
            if v.len() < checked_product("forward scratch", &[rows, w])? {
                v.clear();
                try_extend_rows(v, rows, w, |_, _| {})?;
            }
        }
        grow(
            &mut self.rope,
            checked_product("RoPE table", &[2, rows, cfg.head_dim])?,
        )?;
        self.attn.ensure(cfg, context)?;
        let logits = checked_product("logits", &[logit_rows, cfg.n_vocab])?;
        grow(&mut self.logits, logits)?;
        Ok(())
    }

    /// Grows every buffer for passes of up to `rows` rows, zero-filled. In wasm, memory once
    /// written stays resident, and its first write is a page fault: a fresh session's first
    /// 106-token prompt took ~2,300 of them (counted in `/proc` for Chromium's processes),
    /// ~330 once reserved so.
    pub(super) fn reserve(
        &mut self,
        cfg: &Config,
        w: &Weights,
        rows: usize,
        context: usize,
    ) -> Result<()> {
        self.ensure(cfg, rows, 1, context)?;
        let mut last = None;
        for lw in &w.layers {
            // The calls of `attention` and `feed_forward`: q, k, v together, the output
            // projection, gate and up together, down.
            let calls: [&[&Linear]; 4] = [
                &[&lw.wq, &lw.wk, &lw.wv],
                &[&lw.wo],
                &[&lw.w_gate, &lw.w_up],
                &[&lw.w_down],
            ];
            // A layer stored like the one before needs nothing more.
            let layout = calls.map(|c| c.iter().map(|l| l.layout()).collect::<Vec<_>>());
            if last.as_ref() == Some(&layout) {
                continue;
            }
            for linears in calls {
                Linear::reserve_many(linears, rows, &mut self.mm)?;
            }
            last = Some(layout);
        }
        Ok(())
    }
}

/// RoPE of one forward call: which dimensions, how positions map to angles.
struct RopeParams<'a> {
    /// Rotated dimensions per head (the first `n_rot`; the rest pass through).
    n_rot: usize,
    base: f32,
    /// Linear scaling of positions (1 = none).
    freq_scale: f32,
    /// Per-pair divisors of the angle (Llama 3.1's `rope_freqs`), `[n_rot / 2]`.
    factors: Option<&'a [f32]>,
}

/// Fills `table` (`[n, 2, n_rot/2]`: each position's cosines, then its sines) with `cos θ_i`,
/// `sin θ_i` for positions `pos0..pos0 + n`, θ built as ggml builds its cache: a running product
/// `θ'_0 = pos`, `θ'_{i+1} = θ'_i · base^(-2/n_rot)`, then `θ_i = freq_scale · (θ'_i /
/// factor_i)` (exact when both are 1). Computed once per forward call and shared by every layer
/// and head; a prompt's rows on every thread.
fn rope_table(table: &mut [f32], pos0: usize, n: usize, p: &RopeParams) {
    let theta_scale = p.base.powf(-2.0 / p.n_rot as f32);
    parallel::for_each_row(&mut table[..n * p.n_rot], p.n_rot, |i, row| {
        let (cos, sin) = row.split_at_mut(p.n_rot / 2);
        let mut theta = (pos0 + i) as f32;
        for (k, (c, s)) in cos.iter_mut().zip(sin).enumerate() {
            let factor = p.factors.and_then(|f| f.get(k)).copied().unwrap_or(1.0);
            (*s, *c) = (p.freq_scale * (theta / factor)).sin_cos();
            theta *= theta_scale;
        }
    });
}

/// Rotates the first `cs.len()` dimensions of one head in place with one position's row of a
/// [`rope_table`]. The cosines and sines lie apart so that NeoX's pairs (`i`, `i + n_rot/2`)
/// rotate four at a time in SIMD (the compiler vectorises the loop; it has no FMA to contract
/// into, so the bits are the scalar loop's).
fn rope(x: &mut [f32], cs: &[f32], style: RopeStyle) {
    let (cos, sin) = cs.split_at(cs.len() / 2);
    let rotate = |x0: f32, x1: f32, c: f32, s: f32| (x0 * c - x1 * s, x0 * s + x1 * c);
    match style {
        RopeStyle::Neox => {
            let (lo, hi) = x[..cs.len()].split_at_mut(cos.len());
            for (((a, b), &c), &s) in lo.iter_mut().zip(hi).zip(cos).zip(sin) {
                (*a, *b) = rotate(*a, *b, c, s);
            }
        }
        RopeStyle::Normal => {
            for ((pair, &c), &s) in x[..cs.len()].chunks_exact_mut(2).zip(cos).zip(sin) {
                (pair[0], pair[1]) = rotate(pair[0], pair[1], c, s);
            }
        }
    }
}

/// Which positions get logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    /// Only the last token (what generation needs; skips the LM head for the rest).
    Last,
    /// As `Last`, and the index of its first largest logit (NaN skipped), found in the LM
    /// head's parallel tasks while their outputs are in cache: a greedy generation's pick.
    LastAndTop,
    /// Every token of the batch (`[n, n_vocab]`, for evaluation).
    All,
}

/// Runs `tokens` at positions `pos0..pos0 + n` through the model, appending their keys and
/// values to `cache`, and returns the requested logits (a slice of `scratch`).
pub fn forward<'s>(
    cfg: &Config,
    w: &Weights,
    cache: &mut KvCache,
    s: &'s mut Scratch,
    tokens: &[u32],
    pos0: usize,
    which: Logits,
) -> Result<&'s [f32]> {
    let logit_rows = if which == Logits::All {
        tokens.len()
    } else {
        1
    };
    layers(cfg, w, cache, s, tokens, pos0, logit_rows)?;
    lm_head(
        cfg,
        w,
        s,
        tokens.len(),
        logit_rows,
        which == Logits::LastAndTop,
    )
}

/// Everything of [`forward`] before the LM head, with the scratch sized for `logit_rows`; with
/// none, only the keys and values are wanted (a prompt's leading chunks, see `Session::eval`).
pub(crate) fn layers(
    cfg: &Config,
    w: &Weights,
    cache: &mut KvCache,
    s: &mut Scratch,
    tokens: &[u32],
    pos0: usize,
    logit_rows: usize,
) -> Result<()> {
    check_parts(cfg, w, cache)?;
    let n = tokens.len();
    let end = pos0.checked_add(n).ok_or(Error::SizeOverflow {
        what: "position",
        size: pos0 as f64 + n as f64,
    })?;
    if end > cache.capacity() {
        return Err(Error::ContextFull {
            needed: end,
            capacity: cache.capacity(),
        });
    }
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "forward",
            reason: "no tokens to evaluate".into(),
        });
    }
    s.ensure(cfg, n, logit_rows, cache.capacity())?;
    let nr = cfg.n_rot;
    let t = profile::timer(Section::Rope);
    let (rope_global, rope_local) = s.rope[..2 * n * nr].split_at_mut(n * nr);
    for (table, base) in [
        (rope_global, cfg.rope_base),
        (rope_local, cfg.rope_base_swa),
    ] {
        let p = RopeParams {
            n_rot: nr,
            base,
            freq_scale: cfg.rope_freq_scale,
            factors: w.rope_freqs.as_deref(),
        };
        rope_table(table, pos0, n, &p);
    }
    drop(t);
    let t = profile::timer(Section::Embed);
    embed(cfg, w, tokens, &mut s.x)?; // x [n, d]
    drop(t);
    for (il, lw) in w.layers.iter().enumerate() {
        attention(cfg, lw, il, cache, s, n, pos0)?; // x += attention(norm(x))
        feed_forward(cfg, lw, s, n)?; // x += ffn(norm(x))
    }
    Ok(())
}

/// `x[i] = embedding(token_i) · embed_scale`                                      `[n, d]`
fn embed(cfg: &Config, w: &Weights, tokens: &[u32], x: &mut [f32]) -> Result<()> {
    let d = cfg.n_embd;
    for (&t, row) in tokens.iter().zip(x.chunks_exact_mut(d)) {
        if t as usize >= cfg.n_vocab {
            return Err(Error::IndexOutOfRange {
                op: "forward",
                index: t as i64,
                size: cfg.n_vocab,
            });
        }
        w.token_embd.row(t as usize, row)?;
        if let Some(scale) = cfg.embed_scale {
            row.iter_mut().for_each(|v| *v *= scale);
        }
    }
    Ok(())
}

/// `xb[i] = rms_norm(x[i]) · weight` for the first `n` rows.
fn norm_rows(x: &[f32], weight: &[f32], eps: f32, xb: &mut [f32], n: usize) {
    let d = weight.len();
    parallel::for_each_row(&mut xb[..n * d], d, |i, yr| {
        rms_norm_row(&x[i * d..(i + 1) * d], weight, eps, yr)
    });
}

/// `rows[i] += bias` for every row (no-op without a bias).
fn add_bias(rows: &mut [f32], bias: Option<&[f32]>) {
    if let Some(b) = bias {
        for r in rows.chunks_exact_mut(b.len()) {
            r.iter_mut().zip(b).for_each(|(v, &c)| *v += c);
        }
    }
}

/// One attention block for `n` tokens at `pos0..`: `x += wo · attend(rope(q), rope(k), v)`, with
/// q, k, v from `norm(x)`, their keys and values appended to `cache` for layer `il`.
#[inline(never)]
fn attention(
    cfg: &Config,
    lw: &LayerWeights,
    il: usize,
    cache: &mut KvCache,
    s: &mut Scratch,
    n: usize,
    pos0: usize,
) -> Result<()> {
    let (d, hd, qd, kvd, nr) = (
        cfg.n_embd,
        cfg.head_dim,
        cfg.q_dim(),
        cfg.kv_dim(),
        cfg.n_rot,
    );
    let eps = cfg.rms_eps;
    let t = profile::timer(Section::Norms);
    norm_rows(&s.x, &lw.attn_norm, eps, &mut s.xb, n);
    drop(t);
    // q [n, n_head·hd], k and v [n, n_kv·hd]: one job over the three weights
    let t = matmul_timer(Section::Qkv, &[&lw.wq, &lw.wk, &lw.wv], n);
    Linear::forward_many(
        &[&lw.wq, &lw.wk, &lw.wv],
        &s.xb[..n * d],
        &mut [&mut s.q[..n * qd], &mut s.k[..n * kvd], &mut s.v[..n * kvd]],
        &mut s.mm,
    )?;
    drop(t);
    let t = profile::timer(Section::Rope);
    add_bias(&mut s.q[..n * qd], lw.bq.as_deref());
    add_bias(&mut s.k[..n * kvd], lw.bk.as_deref());
    add_bias(&mut s.v[..n * kvd], lw.bv.as_deref());

    let sliding = cfg.is_sliding(il);
    let table = &s.rope[if sliding { n * nr } else { 0 }..][..n * nr];
    // Scale Q (kept in f32: rounding it through f16 as one llama.cpp path does measured
    // further from llama.cpp's logits on the fixture, not closer).
    let (q, k) = (&mut s.q[..n * qd], &mut s.k[..n * kvd]);
    for (rows, w, norm, scale) in [
        (q, qd, &lw.q_norm, cfg.attn_scale),
        (k, kvd, &lw.k_norm, 1.0),
    ] {
        parallel::for_each_row(rows, w, |i, row| {
            for h in row.chunks_exact_mut(hd) {
                if let Some(nw) = norm {
                    rms_norm_in_place(h, nw, eps);
                }
                rope(h, &table[i * nr..(i + 1) * nr], cfg.rope_style);
            }
            if scale != 1.0 {
                row.iter_mut().for_each(|v| *v *= scale);
            }
        });
    }
    cache.store(il, pos0, &s.k[..n * kvd], &s.v[..n * kvd])?;
    drop(t);

    // att[i, h] = Σ_j softmax_j(q_ih · k_j) v_j over visible positions j       [n, q_dim]
    let t = profile::timer(Section::Attend);
    let q = &s.q[..n * qd];
    attention::attention(cfg, cache, il, pos0, q, &mut s.att[..n * qd], &mut s.attn);
    drop(t);
    let t = matmul_timer(Section::AttnOut, &[&lw.wo], n);
    lw.wo
        .forward(&s.att[..n * qd], &mut s.proj[..n * d], &mut s.mm)?; // [n, d]
    drop(t);
    let _t = profile::timer(Section::Norms);
    add_branch(
        &mut s.x[..n * d],
        &s.proj[..n * d],
        lw.post_attn_norm.as_deref(),
        d,
        eps,
    );
    Ok(())
}

/// One gated feed-forward block: `x += w_down · (act(w_gate · norm(x)) ⊙ (w_up · norm(x)))`.
/// Out of line, like [`attention`]: inlined, both made `layers` one large function whose
/// optimising compile (27 ms in Chromium) ran beside a prompt's threads (see `warm_up.rs`).
#[inline(never)]
fn feed_forward(cfg: &Config, lw: &LayerWeights, s: &mut Scratch, n: usize) -> Result<()> {
    let (d, ff, eps) = (cfg.n_embd, cfg.n_ff, cfg.rms_eps);
    let t = profile::timer(Section::Norms);
    norm_rows(&s.x, &lw.ffn_norm, eps, &mut s.xb, n);
    drop(t);
    // gate and up [n, ff]: one job over both weights
    let t = matmul_timer(Section::GateUp, &[&lw.w_gate, &lw.w_up], n);
    Linear::forward_many(
        &[&lw.w_gate, &lw.w_up],
        &s.xb[..n * d],
        &mut [&mut s.gate[..n * ff], &mut s.up[..n * ff]],
        &mut s.mm,
    )?;
    drop(t);
    let t = profile::timer(Section::Activation);
    // Elementwise, so any chunks do: a row each, or a lone decoded row's share per thread.
    let up = &s.up[..n * ff];
    let threads = parallel::num_threads();
    let chunk = if n < threads {
        ff.div_ceil(threads).next_multiple_of(16)
    } else {
        ff
    };
    parallel::for_each_chunk_mut(&mut s.gate[..n * ff], chunk, |i, gate| {
        gated_activation(cfg.activation, gate, &up[i * chunk..][..gate.len()]);
    });
    drop(t);
    let t = matmul_timer(Section::Down, &[&lw.w_down], n);
    lw.w_down
        .forward(&s.gate[..n * ff], &mut s.proj[..n * d], &mut s.mm)?; // [n, d]
    drop(t);
    let _t = profile::timer(Section::Norms);
    add_branch(
        &mut s.x[..n * d],
        &s.proj[..n * d],
        lw.post_ffn_norm.as_deref(),
        d,
        eps,
    );
    Ok(())
}

/// `gate[j] = act(gate[j]) · up[j]` for one row. Its own function, called per row, for the
/// reason `attend` is: inlined into `forward`, a fresh instance's first long prompt ran these
/// millions of table lookups in V8's baseline tier.
#[inline(never)]
fn gated_activation(act: Activation, gate: &mut [f32], up: &[f32]) {
    match act {
        Activation::GeluTanh => kernels::gated_f16_table(gelu_f16_table(), gate, up),
        Activation::Silu => {
            for (g, &u) in gate.iter_mut().zip(up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
        }
    }
}

/// `logits = lm_head · rms_norm(x)` for the last `logit_rows` of `n`      `[logit_rows, vocab]`
fn lm_head<'s>(
    cfg: &Config,
    w: &Weights,
    s: &'s mut Scratch,
    n: usize,
    logit_rows: usize,
    top: bool,
) -> Result<&'s [f32]> {
    let _t = matmul_timer(Section::LmHead, &[w.lm_head()], logit_rows);
    let d = cfg.n_embd;
    let first = n - logit_rows;
    norm_rows(
        &s.x[first * d..n * d],
        &w.output_norm,
        cfg.rms_eps,
        &mut s.xb,
        logit_rows,
    );
    let v = cfg.n_vocab;
    let (x, out) = (&s.xb[..logit_rows * d], &mut s.logits[..logit_rows * v]);
    s.top = None;
    if top {
        let top = w.lm_head().forward_argmax(x, out, &mut s.mm)?;
        s.top = top.and_then(|i| u32::try_from(i).ok());
    } else {
        w.lm_head().forward(x, out, &mut s.mm)?;
    }
    Ok(&s.logits[..logit_rows * v])
}

/// A profile timer for `section`, a matmul of `rows` token rows over `linears` (their sizes are
/// only summed when profiling).
fn matmul_timer(section: Section, linears: &[&Linear], rows: usize) -> Option<profile::Timer> {
    if !profile::active() {
        return None;
    }
    let bytes = linears.iter().map(|l| l.weight_bytes()).sum();
    let weights = linears.iter().map(|l| l.weight_count()).sum();
    profile::timer_matmul(section, bytes, weights, rows)
}

/// Errors unless `cfg`, `w` and `cache` describe one model: the pass slices by `cfg`'s sizes,
/// and all three are public (a [`super::Session`] always passes matching ones).
fn check_parts(cfg: &Config, w: &Weights, cache: &KvCache) -> Result<()> {
    cfg.validate()?;
    let (n_layer, kv_dim) = (cfg.n_layer, cfg.kv_dim());
    if w.layers.len() != n_layer || cache.n_layer() != n_layer || cache.kv_dim() != kv_dim {
        return Err(Error::shape(
            "forward",
            format!("weights and a KV cache of {n_layer} layers of {kv_dim}"),
            format!(
                "{} weight layers and a cache of {} layers of {}",
                w.layers.len(),
                cache.n_layer(),
                cache.kv_dim()
            ),
        ));
    }
    Ok(())
}

/// `x += norm(branch)` (Gemma's post-norms) or `x += branch`, row by row.
fn add_branch(x: &mut [f32], branch: &[f32], post_norm: Option<&[f32]>, d: usize, eps: f32) {
    parallel::for_each_row(x, d, |i, xr| {
        let br = &branch[i * d..(i + 1) * d];
        match post_norm {
            // rms_norm_row's `(b · scale) · w`, added as it is made
            Some(nw) => {
                let scale = rms_scale(br, eps);
                for ((a, &b), &w) in xr.iter_mut().zip(br).zip(nw) {
                    *a += (b * scale) * w;
                }
            }
            None => xr.iter_mut().zip(br).for_each(|(a, b)| *a += b),
        }
    });
}

/// GELU as ggml's CPU backend computes it: through a table indexed by the f16 of the input, so
/// `f16(gelu(f16(x)))` inside (-10, 10), `0` below and `x` above (`kernels::gated_f16_table`).
/// The 64 Ki-entry table (128 KiB) is built on first use; a prefill would otherwise spend a tanh
/// on each of millions of values.
fn gelu_f16_table() -> &'static [u16; 65536] {
    static TABLE: OnceLock<Box<[u16; 65536]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Box::new([0u16; 65536]);
        for (h, v) in table.iter_mut().enumerate() {
            *v = f16::from_f32(gelu_tanh(f16::from_bits(h as u16).to_f32())).to_bits();
        }
        table
    })
}
