//! Fused quantized matmul: activations quantized to Q8_0 once per row, integer block dots,
//! both scales applied per block. The weight bytes are read in place, never expanded to f32.

use super::blocks::{read_f16, QK8_0};
use super::quantize::quantize_row_q8_0;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::try_vec;
use crate::{parallel, Shape, Tensor};

/// Σ over blocks of `d_w · d_x · Σ (q4 − 8) · q8`: one Q4_0 row against one Q8_0 row.
pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w
        .chunks_exact(DType::Q4_0.block_bytes())
        .zip(x.chunks_exact(DType::Q8_0.block_bytes()))
    {
        let qx = &xb[2..];
        let mut isum = 0i32;
        for j in 0..QK8_0 / 2 {
            let lo = (wb[2 + j] & 0x0F) as i32 - 8;
            let hi = (wb[2 + j] >> 4) as i32 - 8;
            isum += lo * (qx[j] as i8) as i32 + hi * (qx[j + QK8_0 / 2] as i8) as i32;
        }
        sum += read_f16(wb) * read_f16(xb) * isum as f32;
    }
    sum
}

/// Σ over blocks of `d_w · d_x · Σ q8_w · q8_x`: one Q8_0 row against one Q8_0 row.
pub fn vec_dot_q8_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w
        .chunks_exact(DType::Q8_0.block_bytes())
        .zip(x.chunks_exact(DType::Q8_0.block_bytes()))
    {
        let isum: i32 = wb[2..]
            .iter()
            .zip(&xb[2..])
            .map(|(&a, &b)| (a as i8) as i32 * (b as i8) as i32)
            .sum();
        sum += read_f16(wb) * read_f16(xb) * isum as f32;
    }
    sum
}

impl Tensor {
    /// `self @ weight^T` for a block-quantized `weight`, computed without dequantizing it.
    ///
    /// `self` is f32 `[..., in]`, `weight` is Q4_0 or Q8_0 `[out, in]`; the result is
    /// `[..., out]`. Each activation row is quantized to Q8_0 once, then every output element is
    /// a sum of per-block integer dot products with both block scales applied.
    ///
    /// Errors: [`Error::DTypeMismatch`] when `self` is not f32, [`Error::UnsupportedDType`] when
    /// `weight` is not Q4_0/Q8_0, [`Error::ShapeMismatch`] for ranks, a different `in` or an `in`
    /// that is not a multiple of 32.
    pub fn quantized_matmul(&self, weight: &Tensor) -> Result<Tensor> {
        const OP: &str = "quantized_matmul";
        let dot: fn(&[u8], &[u8]) -> f32 = match weight.dtype() {
            DType::Q4_0 => vec_dot_q4_0_q8_0,
            DType::Q8_0 => vec_dot_q8_0_q8_0,
            dtype => return Err(Error::UnsupportedDType { op: OP, dtype }),
        };
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
        if k != n_in || n_in % QK8_0 != 0 {
            return Err(Error::shape(
                OP,
                format!("last dim {n_in} (a multiple of 32)"),
                format!("self {} and weight {}", self.shape(), weight.shape()),
            ));
        }
        let rows = self.elem_count() / k.max(1);
        let x = self.to_vec_f32()?;
        let row_bytes = DType::Q8_0.storage_bytes(k)?;
        let mut xq = try_vec(rows * row_bytes, 0u8)?;
        for (xr, qr) in x
            .chunks_exact(k.max(1))
            .zip(xq.chunks_exact_mut(row_bytes.max(1)))
        {
            quantize_row_q8_0(xr, qr);
        }
        let w = weight.quantized_bytes()?;
        let w_row = weight.dtype().storage_bytes(n_in)?;
        let mut out = try_vec(rows * n_out, 0.0f32)?;
        parallel::for_each_chunk_mut(&mut out, n_out, |r, out_row| {
            let xr = &xq[r * row_bytes..(r + 1) * row_bytes];
            for (o, y) in out_row.iter_mut().enumerate() {
                *y = dot(&w[o * w_row..(o + 1) * w_row], xr);
            }
        });
        let mut dims = self.dims().to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n_out;
        Ok(Tensor::new_f32(out, Shape::from(dims)))
    }
}
