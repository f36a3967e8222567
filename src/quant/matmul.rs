//! Fused quantized matmul: activations quantized once per row (to Q8_0, or Q8_K for the K
//! formats), integer block dots, scales applied per block. The weight bytes are read in place,
//! never expanded to f32.

use super::act::Q8Act;
use super::kernels;
use super::traits::{quant_type, FusedDot};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::{try_grow, try_vec};
use crate::{parallel, Shape, Tensor};

impl Tensor {
    /// `self @ weight^T` for a block-quantized `weight`, computed without dequantizing it.
    ///
    /// `self` is f32 `[..., in]`, `weight` is a quantized `[out, in]` with a fused kernel in the
    /// type-traits table (Q4_0, Q8_0, …); the result is `[..., out]`. Each activation row is
    /// quantized once (to Q8_0, or Q8_K for K formats), then every output element is a sum of
    /// per-block integer dot products with the block scales applied.
    ///
    /// Errors: [`Error::DTypeMismatch`] when `self` is not f32, [`Error::UnsupportedDType`] when
    /// `weight` has no fused kernel (plain dtypes, Q4_1, Q5_1), [`Error::ShapeMismatch`] for
    /// ranks, a different `in`, or an `in` that is not a whole number of activation blocks.
    pub fn quantized_matmul(&self, weight: &Tensor) -> Result<Tensor> {
        let fused = fused_kernel(weight.dtype())?;
        if self.dtype() != DType::F32 {
            return Err(Error::DTypeMismatch {
                op: OP,
                expected: DType::F32,
                actual: self.dtype(),
            });
        }
        if weight.rank() != 2 || self.rank() < 1 {
            return Err(Error::shape(
                OP,
                "self [..., in] and weight [out, in]",
                format!("self {} and weight {}", self.shape(), weight.shape()),
            ));
        }
        let (n_out, n_in) = (weight.dims()[0], weight.dims()[1]);
        let k = *self.dims().last().unwrap_or(&0);
        let block = fused.act.block_elems();
        if k != n_in || n_in % block != 0 {
            return Err(Error::shape(
                OP,
                format!("last dim {n_in} (a multiple of {block})"),
                format!("self {} and weight {}", self.shape(), weight.shape()),
            ));
        }
        // The output shape is checked before anything is allocated (`rows · out` wraps on wasm32
        // for `[65536, 32] @ [65536, 32]ᵀ`), and it comes from the dims, not from
        // `elem_count / in`, which is 0 rows for every `in = 0` input.
        let mut dims = self.dims().to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n_out;
        let shape = Shape::from(dims);
        let mut out = try_vec(shape.checked_elem_count()?, 0.0f32)?;
        let x = self.to_vec_f32()?;
        // With `in = 0` every dot is an empty sum: the zeros are the answer.
        if n_in > 0 {
            matmul_into(&x, weight, &mut MatmulScratch::default(), &mut out)?;
        }
        Ok(Tensor::new_f32(out, shape))
    }
}

/// Reusable buffers of [`matmul_into`], so a decode loop allocates nothing per token.
#[derive(Default, Debug)]
pub struct MatmulScratch {
    /// Prepared activations for the Q4_0 kernels.
    act: Q8Act,
    /// Quantized activation rows for the other formats.
    xq: Vec<u8>,
    /// Per-chunk `[rows, chunk]` blocks of a multi-row Q4_0 matmul before they are copied into place.
    blocks: Vec<f32>,
}

/// `out[r, o] = Σ x[r, :] · weight[o, :]` for a quantized `weight` `[out, in]` and contiguous f32
/// rows `x` (`rows × in`), writing into `out` (`rows × out`).
///
/// Work is split over threads by ranges of weight rows, so every weight byte is read by one
/// thread once per call (prefill and decode alike); each output element is one dot in the fixed
/// canonical order, so the bytes never depend on the split or the number of threads.
pub fn matmul_into(
    x: &[f32],
    weight: &Tensor,
    scratch: &mut MatmulScratch,
    out: &mut [f32],
) -> Result<()> {
    let fused = fused_kernel(weight.dtype())?;
    let (rows, n_out, n_in) = matmul_dims(x, weight, fused, out.len())?;
    if rows == 0 || n_out == 0 {
        return Ok(());
    }
    let w = weight.quantized_bytes()?;
    let w_row = weight.dtype().storage_bytes(n_in)?;
    let chunk = chunk_rows(n_out, n_out);
    if weight.dtype() == DType::Q4_0 {
        if rows == 1 {
            // One row straight into `out`: chunks of `out` are chunks of weight rows.
            scratch.act.prepare(x, n_in)?;
            let act = &scratch.act;
            parallel::for_each_chunk_mut(out, chunk, |c, o| {
                kernels::gemm_q4_0_q8_0(&w[c * chunk * w_row..], act, o);
            });
            return Ok(());
        }
        return q4_0_many(x, n_in, &[(w, n_out)], scratch, &mut [out]);
    }
    let row_bytes = fused.act.storage_bytes(n_in)?;
    let need = rows * row_bytes;
    let xq = &mut scratch.xq;
    try_grow(xq, need)?;
    for (xr, qr) in x
        .chunks_exact(n_in)
        .zip(xq.chunks_exact_mut(row_bytes.max(1)))
    {
        (fused.quantize_act)(xr, qr);
    }
    let xq = &xq[..need];
    parallel::for_each_chunk_mut(out, chunk * rows, |c, out_chunk| {
        for (i, y) in out_chunk.iter_mut().enumerate() {
            let flat = c * chunk * rows + i;
            let (r, o) = (flat / n_out, flat % n_out);
            let xr = &xq[r * row_bytes..(r + 1) * row_bytes];
            *y = (fused.dot)(&w[o * w_row..(o + 1) * w_row], xr);
        }
    });
    Ok(())
}

/// [`matmul_into`] for several weights that read the same `x` (an attention block's Q, K and V;
/// a feed-forward's gate and up): for Q4_0 weights of one width the activations are prepared
/// once and all the matrices' rows are one parallel job, so a decode step starts fewer jobs.
/// Other weights go one at a time. The bits are those of separate calls.
pub fn matmul_many(
    x: &[f32],
    weights: &[&Tensor],
    scratch: &mut MatmulScratch,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    if weights.len() != outs.len() {
        return Err(Error::shape(OP, weights.len(), outs.len()));
    }
    let mut n_in = None;
    let mut together = weights.len() <= MAX_MANY;
    for (w, out) in weights.iter().zip(outs.iter()) {
        let (_, _, i) = matmul_dims(x, w, fused_kernel(w.dtype())?, out.len())?;
        together &= w.dtype() == DType::Q4_0 && n_in.is_none_or(|n| n == i);
        n_in = Some(i);
    }
    if !together || x.is_empty() {
        for (w, out) in weights.iter().zip(outs.iter_mut()) {
            matmul_into(x, w, scratch, out)?;
        }
        return Ok(());
    }
    let mut ws = [(&[][..], 0usize); MAX_MANY];
    for (slot, t) in ws.iter_mut().zip(weights) {
        *slot = (t.quantized_bytes()?, t.dims()[0]);
    }
    q4_0_many(x, n_in.unwrap_or(0), &ws[..weights.len()], scratch, outs)
}

/// Most weights [`matmul_many`] runs as one job.
const MAX_MANY: usize = 4;

/// Q4_0 weights `ws` (bytes, rows) of width `n_in` against `x`: one prepared activation, one
/// parallel job over every matrix's chunks of weight rows. Each chunk fills a row-major
/// `[rows, width]` block of `blocks`; the blocks' row runs are then copied into place (no
/// scattered writes). Shapes are checked by the callers.
fn q4_0_many(
    x: &[f32],
    n_in: usize,
    ws: &[(&[u8], usize)],
    scratch: &mut MatmulScratch,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    let rows = x.len() / n_in;
    let w_row = DType::Q4_0.storage_bytes(n_in)?;
    let total: usize = ws.iter().map(|w| w.1).sum();
    let chunk = chunk_rows(total, ws.iter().map(|w| w.1).max().unwrap_or(1));
    // Chunk `c` belongs to the matrix `m` with first[m] <= c < first[m + 1].
    let mut first = [0usize; MAX_MANY + 1];
    for (m, w) in ws.iter().enumerate() {
        first[m + 1] = first[m] + w.1.div_ceil(chunk);
    }
    let n_chunks = first[ws.len()];
    let len = n_chunks
        .checked_mul(chunk)
        .and_then(|n| n.checked_mul(rows))
        .ok_or_else(|| Error::overflow("matmul blocks", &[n_chunks, chunk, rows]))?;
    scratch.act.prepare(x, n_in)?;
    let blocks = &mut scratch.blocks;
    try_grow(blocks, len)?;
    let act = &scratch.act;
    let locate = |c: usize| {
        let m = first[1..=ws.len()].iter().position(|&f| c < f).unwrap_or(0);
        let j = c - first[m];
        (m, j, chunk.min(ws[m].1 - j * chunk))
    };
    parallel::for_each_chunk_mut(&mut blocks[..len], chunk * rows, |c, block| {
        let (m, j, width) = locate(c);
        kernels::gemm_q4_0_q8_0(
            &ws[m].0[j * chunk * w_row..],
            act,
            &mut block[..width * rows],
        );
    });
    for (c, block) in blocks[..len].chunks_exact(chunk * rows).enumerate() {
        let (m, j, width) = locate(c);
        let n_out = ws[m].1;
        for (r, seg) in block[..width * rows].chunks_exact(width).enumerate() {
            let at = r * n_out + j * chunk;
            outs[m][at..at + width].copy_from_slice(seg);
        }
    }
    Ok(())
}

const OP: &str = "quantized_matmul";

/// `(rows, out, in)` of `x · weightᵀ` into `out_len` outputs, or a shape error: weight `[out,
/// in]`, `x` whole rows of `in`, `in` whole activation blocks, `out_len == rows · out`.
fn matmul_dims(
    x: &[f32],
    weight: &Tensor,
    fused: FusedDot,
    out_len: usize,
) -> Result<(usize, usize, usize)> {
    let (n_out, n_in) = match weight.dims() {
        [o, i] => (*o, *i),
        _ => return Err(Error::shape(OP, "weight [out, in]", weight.shape())),
    };
    let rows = x.len().checked_div(n_in).unwrap_or(0);
    // `rows · out` is checked: wrapped, it would let a short `out` through.
    if rows * n_in != x.len()
        || rows.checked_mul(n_out) != Some(out_len)
        || n_in % fused.act.block_elems() != 0
    {
        return Err(Error::shape(
            OP,
            format!("x [rows, {n_in}] and out [rows, {n_out}]"),
            format!("{} inputs and {} outputs", x.len(), out_len),
        ));
    }
    Ok((rows, n_out, n_in))
}

/// Weight rows per parallel task for `total` rows: all of `single` on one thread, else 16
/// chunks per thread, so the chunk still running when the others finish (and they wait for it)
/// is short.
fn chunk_rows(total: usize, single: usize) -> usize {
    match parallel::num_threads() {
        1 => single.max(1),
        t => total.div_ceil(16 * t).max(16),
    }
}

/// The fused kernel for weights of `dtype`, or [`Error::UnsupportedDType`].
fn fused_kernel(dtype: DType) -> Result<FusedDot> {
    quant_type(dtype)
        .and_then(|t| t.fused)
        .ok_or(Error::UnsupportedDType { op: OP, dtype })
}
