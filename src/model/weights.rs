//! The model's weights, taken from a loaded GGUF file.
//!
//! Quantized matrices with a fused kernel stay in the file's buffer as `Bytes` views (never
//! copied, never expanded); norms and the rare dense matrix are decoded to f32 once.

use std::sync::Arc;

use super::config::Config;
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, TensorInfo};
use crate::quant::{self, interleave, quant_type, MatmulScratch, QWeight};
use crate::shape::checked_product;
use crate::storage::Bytes;
use crate::{DType, Shape, Tensor};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// `y = x · Wᵀ` for a weight `[out, in]`.
pub enum Linear {
    /// Block-quantized with a fused kernel: a view into the file.
    Quant(Tensor),
    /// A matrix of a ×4 format interleaved four rows at a time at load (SIMD builds, see
    /// `quant::interleave::fast`): a view into the file, `out` a multiple of four.
    Interleaved {
        dtype: DType,
        bytes: Bytes,
        out: usize,
        inp: usize,
    },
    /// Everything else, decoded to f32 `[out, in]`.
    Dense { w: Vec<f32>, out: usize, inp: usize },
}

impl Linear {
    pub fn out_features(&self) -> usize {
        self.dims().0
    }

    /// Bytes of the weight as stored (what one pass over it reads).
    pub fn weight_bytes(&self) -> usize {
        match self {
            Linear::Quant(t) => t.dtype().storage_bytes(t.elem_count()).unwrap_or(0),
            Linear::Interleaved { bytes, .. } => bytes.len(),
            Linear::Dense { w, .. } => std::mem::size_of_val(&w[..]),
        }
    }

    /// `out × in`.
    pub fn weight_count(&self) -> usize {
        let (o, i) = self.dims();
        o.saturating_mul(i)
    }

    /// `(out, in)`; `(0, 0)` for a `Quant` tensor that is not a matrix (the variants are public,
    /// so nothing guarantees one).
    fn dims(&self) -> (usize, usize) {
        match self {
            Linear::Quant(t) => match *t.dims() {
                [o, i] => (o, i),
                _ => (0, 0),
            },
            Linear::Dense { out, inp, .. } | Linear::Interleaved { out, inp, .. } => (*out, *inp),
        }
    }

    /// `(out, in, format, interleaved)`: what the matmul's buffers depend on (`None`: dense).
    pub fn layout(&self) -> (usize, usize, Option<DType>, bool) {
        let (out, inp) = self.dims();
        match self {
            Linear::Quant(t) => (out, inp, Some(t.dtype()), false),
            Linear::Interleaved { dtype, .. } => (out, inp, Some(*dtype), true),
            Linear::Dense { .. } => (out, inp, None, false),
        }
    }

    /// The matrix as the quantized matmul reads it (`None` for `Dense`).
    fn qweight(&self) -> Result<Option<QWeight<'_>>> {
        Ok(match self {
            Linear::Quant(t) => Some(QWeight::try_from(t)?),
            Linear::Interleaved {
                dtype,
                bytes,
                out,
                inp,
            } => Some(QWeight {
                dtype: *dtype,
                bytes,
                rows: *out,
                cols: *inp,
                interleaved: true,
            }),
            Linear::Dense { .. } => None,
        })
    }

    /// [`Linear::forward`] for several weights reading the same `x` (Q/K/V, gate/up): quantized
    /// ones run as one job (see [`quant::matmul_many`]); the results are those of separate calls.
    pub fn forward_many(
        linears: &[&Linear],
        x: &[f32],
        outs: &mut [&mut [f32]],
        mm: &mut MatmulScratch,
    ) -> Result<()> {
        let n = linears.len();
        if outs.len() != n {
            return Err(Error::shape("Linear::forward_many", n, outs.len()));
        }
        if let Some(ws) = Linear::quantized(linears)? {
            return quant::matmul_weights(x, &ws[..n], mm, outs);
        }
        for (l, out) in linears.iter().zip(outs.iter_mut()) {
            l.forward(x, out, mm)?;
        }
        Ok(())
    }

    /// `linears` as the quantized matmul reads them (the first `linears.len()`), when all are
    /// quantized and there are at most four: what [`Linear::forward_many`] runs as one call.
    fn quantized<'a>(linears: &[&'a Linear]) -> Result<Option<[QWeight<'a>; 4]>> {
        let mut quant: [Option<QWeight>; 4] = [None; 4];
        if linears.len() > quant.len() {
            return Ok(None);
        }
        for (q, l) in quant.iter_mut().zip(linears) {
            *q = l.qweight()?;
        }
        let all = quant[..linears.len()].iter().all(Option::is_some);
        Ok(all.then(|| quant.map(Option::unwrap_or_default)))
    }

    /// Grows `mm` for [`Linear::forward_many`] over `linears` with up to `rows` rows of `x`
    /// ([`MatmulScratch::reserve`]); dense matrices take no scratch.
    pub fn reserve_many(linears: &[&Linear], rows: usize, mm: &mut MatmulScratch) -> Result<()> {
        if let Some(ws) = Linear::quantized(linears)? {
            return mm.reserve(rows, &ws[..linears.len()]);
        }
        for l in linears {
            if let Some(w) = l.qweight()? {
                mm.reserve(rows, &[w])?;
            }
        }
        Ok(())
    }

    /// [`Linear::forward`] that also returns the index of the first largest output (NaN
    /// skipped; `None` when all are NaN): the LM head of a decode step, whose greedy pick a
    /// quantized matrix finds in its parallel tasks (`quant::matmul_argmax`).
    pub fn forward_argmax(
        &self,
        x: &[f32],
        out: &mut [f32],
        mm: &mut MatmulScratch,
    ) -> Result<Option<usize>> {
        match self.qweight()? {
            Some(w) => quant::matmul_argmax(x, w, mm, out),
            None => {
                self.forward(x, out, mm)?;
                Ok(crate::ops::kernels::argmax(out))
            }
        }
    }

    /// `out[r, :] = W · x[r, :]` for every row of `x` (`rows × in` → `rows × out`).
    pub fn forward(&self, x: &[f32], out: &mut [f32], mm: &mut MatmulScratch) -> Result<()> {
        match self {
            Linear::Quant(_) | Linear::Interleaved { .. } => {
                let w = self.qweight()?.unwrap_or_default();
                quant::matmul_weights(x, &[w], mm, &mut [out])
            }
            Linear::Dense { w, out: n_out, inp } => {
                let rows = x.len().checked_div(*inp).unwrap_or(0);
                if *inp == 0
                    || rows * inp != x.len()
                    || rows.checked_mul(*n_out) != Some(out.len())
                    || n_out.checked_mul(*inp) != Some(w.len())
                {
                    return Err(Error::shape(
                        "Linear::forward",
                        format!("x [rows, {inp}], out [rows, {n_out}], weight {n_out}×{inp}"),
                        format!(
                            "{} inputs, {} outputs, {} weights",
                            x.len(),
                            out.len(),
                            w.len()
                        ),
                    ));
                }
                for (xr, yr) in x.chunks_exact(*inp).zip(out.chunks_exact_mut(*n_out)) {
                    for (y, wr) in yr.iter_mut().zip(w.chunks_exact(*inp)) {
                        *y = crate::ops::kernels::dot(xr, wr);
                    }
                }
                Ok(())
            }
        }
    }

    /// Row `r` of the weight as f32 (embedding lookup through a tied LM head).
    pub fn row(&self, r: usize, out: &mut [f32]) -> Result<()> {
        let (rows, cols) = self.dims();
        if r >= rows {
            return Err(Error::IndexOutOfRange {
                op: "Linear::row",
                index: r as i64,
                size: rows,
            });
        }
        if out.len() != cols {
            return Err(Error::shape("Linear::row", cols, out.len()));
        }
        match self {
            Linear::Quant(w) => {
                let row_bytes = w.dtype().storage_bytes(cols)?;
                let bytes = w.quantized_bytes()?;
                quant::dequantize_row(w.dtype(), &bytes[r * row_bytes..(r + 1) * row_bytes], out)
            }
            Linear::Interleaved { dtype, bytes, .. } => {
                if !interleave::supports(*dtype) {
                    return Err(Error::UnsupportedDType {
                        op: "Linear::row",
                        dtype: *dtype,
                    });
                }
                let mut row = crate::storage::try_vec(dtype.storage_bytes(cols)?, 0u8)?;
                let nb = cols / dtype.block_elems();
                interleave::deinterleave_rows(*dtype, bytes, nb, r..r + 1, &mut row);
                quant::dequantize_row(*dtype, &row, out)
            }
            Linear::Dense { w, .. } => {
                if rows.checked_mul(cols) != Some(w.len()) {
                    return Err(Error::shape(
                        "Linear::row",
                        format!("{rows}×{cols} weights"),
                        w.len(),
                    ));
                }
                out.copy_from_slice(&w[r * cols..(r + 1) * cols]);
                Ok(())
            }
        }
    }
}

/// One block's weights. Fused file tensors (Phi-3's `attn_qkv` and gate|up `ffn_up`) arrive
/// here as their row ranges, so the forward pass sees the same projections for every
/// architecture; what an architecture lacks is `None`.
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wq: Linear,
    pub wk: Linear,
    pub wv: Linear,
    /// Qwen 2's biases after the q, k, v projections.
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    pub wo: Linear,
    pub post_attn_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Linear,
    pub w_up: Linear,
    pub w_down: Linear,
    pub post_ffn_norm: Option<Vec<f32>>,
}

pub struct Weights {
    /// `[vocab, n_embd]`; also the LM head when the model ties them.
    pub token_embd: Linear,
    /// `None` when tied to `token_embd`.
    pub output: Option<Linear>,
    pub output_norm: Vec<f32>,
    /// Llama 3.1+'s per-dimension RoPE divisors (`rope_freqs.weight`, `[n_rot / 2]`).
    pub rope_freqs: Option<Vec<f32>>,
    pub layers: Vec<LayerWeights>,
}

impl Weights {
    pub fn lm_head(&self) -> &Linear {
        self.output.as_ref().unwrap_or(&self.token_embd)
    }

    /// Interleaves in place every matrix of `file` in a format with a ×4 layout that `which`
    /// picks, whose rows come in whole groups of four (`quant::interleave`), and returns their
    /// data offsets, sorted, for [`Weights::load`]. Tensors whose bytes overlap another's, and
    /// matrices with an inf/NaN scale, stay as they are.
    pub fn interleave(
        file: &mut [u8],
        g: &GgufFile,
        which: fn(DType) -> bool,
    ) -> Result<Vec<usize>> {
        let mut done = Vec::new();
        let mut spans = crate::storage::try_with_capacity(g.tensors.len())?;
        spans.extend(
            g.tensors
                .iter()
                .map(|t| (t.offset, t.offset.saturating_add(t.nbytes), t)),
        );
        spans.sort_unstable_by_key(|&(start, end, _)| (start, end));
        let mut reach = 0; // the furthest end of the spans before this one
        for (k, &(start, end, t)) in spans.iter().enumerate() {
            let alone = reach <= start && spans.get(k + 1).is_none_or(|n| end <= n.0);
            reach = reach.max(end);
            let (cols, rows) = match t.dims[..] {
                [c, r] => (c, r),
                _ => continue,
            };
            let row = t.dtype.storage_bytes(cols).ok();
            let whole = row.and_then(|r| r.checked_mul(rows)) == Some(t.nbytes);
            if !alone
                || !interleave::supports(t.dtype)
                || !which(t.dtype)
                || !whole
                || rows == 0
                || rows % interleave::GROUP != 0
            {
                continue;
            }
            let Some(bytes) = file.get_mut(start..end) else {
                continue;
            };
            if interleave::interleave(t.dtype, bytes, cols / t.dtype.block_elems())? {
                crate::storage::try_reserve(&mut done, 1)?;
                done.push(start);
            }
        }
        Ok(done)
    }

    /// The weights of `g`, views of `file` where they stay quantized; `interleaved` lists the
    /// data offsets of the matrices [`Weights::interleave`] rearranged.
    pub fn load(
        cfg: &Config,
        g: &GgufFile,
        file: &Arc<Vec<u8>>,
        interleaved: &[usize],
    ) -> Result<Weights> {
        let l = Loader {
            g,
            file,
            interleaved,
        };
        // `block_count` comes from the file: every layer needs tensors, so the table bounds it.
        let mut layers = Vec::new();
        crate::storage::try_reserve(&mut layers, cfg.n_layer.min(g.tensors.len()))?;
        for il in 0..cfg.n_layer {
            layers.push(LayerWeights::load(cfg, &l, il)?);
        }
        let d = cfg.n_embd;
        let output = match g.tensor("output.weight") {
            Some(_) => Some(l.linear("output.weight", cfg.n_vocab, d)?),
            None => None,
        };
        let rope_freqs = match g.tensor("rope_freqs.weight") {
            Some(_) => Some(l.vector("rope_freqs.weight", cfg.n_rot / 2)?),
            None => None,
        };
        Ok(Weights {
            token_embd: l.linear("token_embd.weight", cfg.n_vocab, d)?,
            output,
            output_norm: l.vector("output_norm.weight", d)?,
            rope_freqs,
            layers,
        })
    }
}

impl LayerWeights {
    fn load(cfg: &Config, l: &Loader, il: usize) -> Result<LayerWeights> {
        let (d, qd, kvd, ff) = (cfg.n_embd, cfg.q_dim(), cfg.kv_dim(), cfg.n_ff);
        let n = |s: &str| format!("blk.{il}.{s}.weight");
        let bias = |s: &str| format!("blk.{il}.{s}.bias");
        let when = |on: bool, name: String, len| on.then(|| l.vector(&name, len)).transpose();
        // Q, K, V: three tensors, or one [q | k | v] tensor split by rows.
        let [wq, wk, wv] = if l.g.tensor(&n("attn_qkv")).is_some() {
            l.split_rows(&n("attn_qkv"), d, [qd, kvd, kvd])?
        } else {
            [
                l.linear(&n("attn_q"), qd, d)?,
                l.linear(&n("attn_k"), kvd, d)?,
                l.linear(&n("attn_v"), kvd, d)?,
            ]
        };
        // Gate and up: two tensors, or one [gate | up] `ffn_up` of 2·ff rows.
        let [w_gate, w_up] = if l.g.tensor(&n("ffn_gate")).is_some() {
            [
                l.linear(&n("ffn_gate"), ff, d)?,
                l.linear(&n("ffn_up"), ff, d)?,
            ]
        } else {
            l.split_rows(&n("ffn_up"), d, [ff, ff])?
        };
        Ok(LayerWeights {
            attn_norm: l.vector(&n("attn_norm"), d)?,
            wq,
            wk,
            wv,
            bq: when(cfg.qkv_bias, bias("attn_q"), qd)?,
            bk: when(cfg.qkv_bias, bias("attn_k"), kvd)?,
            bv: when(cfg.qkv_bias, bias("attn_v"), kvd)?,
            q_norm: when(cfg.qk_norm, n("attn_q_norm"), cfg.head_dim)?,
            k_norm: when(cfg.qk_norm, n("attn_k_norm"), cfg.head_dim)?,
            wo: l.linear(&n("attn_output"), d, qd)?,
            post_attn_norm: when(cfg.post_norms, n("post_attention_norm"), d)?,
            ffn_norm: l.vector(&n("ffn_norm"), d)?,
            w_gate,
            w_up,
            w_down: l.linear(&n("ffn_down"), d, ff)?,
            post_ffn_norm: when(cfg.post_norms, n("post_ffw_norm"), d)?,
        })
    }
}

/// `[f(0), …, f(N - 1)]`, or the first error.
fn try_array<T, const N: usize>(mut f: impl FnMut(usize) -> Result<T>) -> Result<[T; N]> {
    let mut v = Vec::with_capacity(N);
    for i in 0..N {
        v.push(f(i)?);
    }
    // `v` holds exactly N entries, so this cannot fail.
    v.try_into()
        .map_err(|_| Error::shape("try_array", N, "another count"))
}

/// Little-endian f16 or bf16 `bytes` (two per element of `out`) into `out`, through a stack
/// tile so that `half`'s bulk conversion runs without a copy of the whole tensor.
fn decode_half<H: Copy + Default>(bytes: &[u8], out: &mut [f32], from_le: fn([u8; 2]) -> H)
where
    [H]: HalfFloatSliceExt,
{
    let mut tile = [H::default(); 1024];
    for (src, dst) in bytes.chunks(2 * tile.len()).zip(out.chunks_mut(tile.len())) {
        let t = &mut tile[..dst.len()];
        for (h, c) in t.iter_mut().zip(src.chunks_exact(2)) {
            *h = from_le([c[0], c[1]]);
        }
        t.convert_to_f32_slice(dst);
    }
}

struct Loader<'a> {
    g: &'a GgufFile,
    file: &'a Arc<Vec<u8>>,
    /// Data offsets of the interleaved matrices, sorted.
    interleaved: &'a [usize],
}

impl Loader<'_> {
    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.g.tensor(name).ok_or_else(|| Error::MissingMetadata {
            key: name.to_string(),
            reason: "tensor not in the file".into(),
        })
    }

    fn check_shape(&self, info: &TensorInfo, want: &[usize]) -> Result<()> {
        if info.shape() != want {
            return Err(Error::MissingMetadata {
                key: info.name.clone(),
                reason: format!("shape {:?}, expected {want:?}", info.shape()),
            });
        }
        Ok(())
    }

    /// Any tensor decoded to f32 (norm weights; dense fallbacks).
    fn decode(&self, info: &TensorInfo) -> Result<Vec<f32>> {
        let bytes = self.g.tensor_bytes(self.file, info)?;
        let n = Shape::from(info.shape()).checked_elem_count()?;
        // `TensorInfo`'s fields are public: the byte count need not match the shape.
        if info.dtype.storage_bytes(n)? != bytes.len() {
            return Err(Error::InvalidGguf {
                offset: info.offset as u64,
                reason: format!(
                    "tensor {}: {} bytes for {n} elements",
                    info.name,
                    bytes.len()
                ),
            });
        }
        let mut out = crate::storage::try_vec(n, 0.0f32)?;
        match info.dtype {
            DType::F32 => {
                for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
            DType::F16 => decode_half(bytes, &mut out, f16::from_le_bytes),
            DType::BF16 => decode_half(bytes, &mut out, bf16::from_le_bytes),
            dtype if dtype.is_quantized() => quant::dequantize_row(dtype, bytes, &mut out)?,
            dtype => {
                return Err(Error::UnsupportedModel {
                    reason: format!("tensor {} has dtype {dtype}", info.name),
                })
            }
        }
        Ok(out)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        self.check_shape(info, &[len])?;
        self.decode(info)
    }

    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Linear> {
        let [l] = self.split_rows(name, inp, [out])?;
        Ok(l)
    }

    /// The matrix `name` (`[Σ rows, inp]`) as consecutive row blocks of `rows[i]` rows each: for
    /// a fused kernel, views of the file's bytes (rows of a block format are whole byte runs);
    /// otherwise the matrix is decoded to f32 once and cut (the first block keeps the buffer).
    fn split_rows<const N: usize>(
        &self,
        name: &str,
        inp: usize,
        rows: [usize; N],
    ) -> Result<[Linear; N]> {
        let info = self.info(name)?;
        let total = rows
            .iter()
            .try_fold(0usize, |a, &r| a.checked_add(r))
            .ok_or_else(|| Error::overflow("fused rows", &rows))?;
        self.check_shape(info, &[total, inp])?;
        // Row starts; every partial sum is at most `total`, which was checked.
        let mut starts = [0usize; N];
        for i in 1..N {
            starts[i] = starts[i - 1] + rows[i - 1];
        }
        if quant_type(info.dtype).is_some_and(|t| t.fused.is_some()) {
            return try_array(|i| self.view_rows(info, starts[i], rows[i], inp));
        }
        // Dense: decoded once; a single block keeps the buffer, fused blocks are copied out.
        let mut w = self.decode(info)?;
        try_array(|i| {
            let w = if N == 1 {
                std::mem::take(&mut w)
            } else {
                // Within `w`: the shape was checked.
                crate::storage::try_copy(&w[starts[i] * inp..(starts[i] + rows[i]) * inp])?
            };
            Ok(Linear::Dense {
                w,
                out: rows[i],
                inp,
            })
        })
    }

    /// Rows `start..start + out` of the checked block-quantized matrix `info` (`[_, inp]`), as a
    /// view of the file's bytes.
    fn view_rows(&self, info: &TensorInfo, start: usize, out: usize, inp: usize) -> Result<Linear> {
        let row_bytes = info.dtype.storage_bytes(inp)?;
        let span = |r: usize| checked_product("tensor rows", &[r, row_bytes]);
        let begin = info.offset.saturating_add(span(start)?);
        let end = begin.saturating_add(span(out)?);
        let bytes = Bytes::slice_of(self.file, begin..end).ok_or_else(|| Error::InvalidGguf {
            offset: info.offset as u64,
            reason: format!("tensor {} runs past the end of the file", info.name),
        })?;
        if self.interleaved.binary_search(&info.offset).is_err() {
            return Ok(Linear::Quant(Tensor::from_quantized_bytes(
                info.dtype,
                bytes,
                [out, inp],
            )?));
        }
        let g = interleave::GROUP;
        if start % g == 0 && out % g == 0 {
            return Ok(Linear::Interleaved {
                dtype: info.dtype,
                bytes,
                out,
                inp,
            });
        }
        // Rows that split a group (no model cuts its fused tensors so): back to the file's layout.
        let matrix = self.g.tensor_bytes(self.file, info)?;
        let mut rows = crate::storage::try_vec(span(out)?, 0u8)?;
        let nb = inp / info.dtype.block_elems();
        interleave::deinterleave_rows(info.dtype, matrix, nb, start..start + out, &mut rows);
        Ok(Linear::Quant(Tensor::from_quantized_bytes(
            info.dtype,
            Bytes::from(rows),
            [out, inp],
        )?))
    }
}
