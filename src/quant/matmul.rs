//! Fused quantized matmul: activations quantized once per row (to Q8_0, or Q8_K for the K
//! formats), integer block dots, scales applied per block. The weight bytes are read in place,
//! never expanded to f32.

use super::act::Q8Act;
use super::kernels;
use super::traits::{quant_type, FusedDot};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::try_vec;
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
        const OP: &str = "quantized_matmul";
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
        let rows = self.elem_count() / k.max(1);
        let x = self.to_vec_f32()?;
        let mut out = try_vec(rows * n_out, 0.0f32)?;
        matmul_into(&x, weight, &mut MatmulScratch::default(), &mut out)?;
        let mut dims = self.dims().to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n_out;
        Ok(Tensor::new_f32(out, Shape::from(dims)))
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
    out_t: Vec<f32>,
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
    const OP: &str = "quantized_matmul";
    let fused = fused_kernel(weight.dtype())?;
    let (n_out, n_in) = match weight.dims() {
        [o, i] => (*o, *i),
        _ => return Err(Error::shape(OP, "weight [out, in]", weight.shape())),
    };
    let rows = x.len().checked_div(n_in).unwrap_or(0);
    if rows * n_in != x.len() || out.len() != rows * n_out || n_in % fused.act.block_elems() != 0 {
        return Err(Error::shape(
            OP,
            format!("x [rows, {n_in}] and out [rows, {n_out}]"),
            format!("{} inputs and {} outputs", x.len(), out.len()),
        ));
    }
    if rows == 0 || n_out == 0 {
        return Ok(());
    }
    let w = weight.quantized_bytes()?;
    let w_row = weight.dtype().storage_bytes(n_in)?;
    // Weight rows per task: 16 per thread, so the last chunk left when one thread finishes
    // (everyone else waits for it) is short.
    let threads = parallel::num_threads();
    let chunk = if threads == 1 {
        n_out
    } else {
        n_out.div_ceil(16 * threads).max(16)
    };
    if weight.dtype() == DType::Q4_0 {
        scratch.act.prepare(x, n_in)?;
        let act = &scratch.act;
        let gemm = |c: usize, o: &mut [f32]| {
            kernels::gemm_q4_0_q8_0(&w[c * chunk * w_row..], act, o);
        };
        if rows == 1 {
            parallel::for_each_chunk_mut(out, chunk, gemm);
        } else {
            // Each chunk of weight rows fills its own row-major `[rows, chunk]` block; the blocks'
            // row segments are then copied into place (whole runs, no scattered writes).
            let blocks = &mut scratch.out_t;
            if blocks.len() < out.len() {
                blocks
                    .try_reserve_exact(out.len() - blocks.len())
                    .map_err(|_| Error::AllocationFailed {
                        bytes: out.len() * 4,
                    })?;
                blocks.resize(out.len(), 0.0);
            }
            let blocks = &mut blocks[..out.len()];
            parallel::for_each_chunk_mut(blocks, chunk * rows, gemm);
            for (c, block) in blocks.chunks(chunk * rows).enumerate() {
                let width = block.len() / rows;
                for (r, seg) in block.chunks_exact(width).enumerate() {
                    let at = r * n_out + c * chunk;
                    out[at..at + width].copy_from_slice(seg);
                }
            }
        }
        return Ok(());
    }
    let row_bytes = fused.act.storage_bytes(n_in)?;
    let need = rows * row_bytes;
    let xq = &mut scratch.xq;
    if xq.len() < need {
        xq.try_reserve_exact(need - xq.len())
            .map_err(|_| Error::AllocationFailed { bytes: need })?;
        xq.resize(need, 0);
    }
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

/// The fused kernel for weights of `dtype`, or [`Error::UnsupportedDType`].
fn fused_kernel(dtype: DType) -> Result<FusedDot> {
    quant_type(dtype)
        .and_then(|t| t.fused)
        .ok_or(Error::UnsupportedDType {
            op: "quantized_matmul",
            dtype,
        })
}
