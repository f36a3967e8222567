//! The integer linear layer of Tesseract's "fast" models: int8 activations against int8
//! weights with a bias column, exact int32 sums, then one float scale per output.

use crate::error::{Error, Result};
use crate::quant::kernels::gemm_i8;
use crate::storage::{try_vec, Element};
use crate::{DType, Shape, Tensor};
use std::borrow::Cow;

/// Activations are quantized as `x · 127`, so the bias (an int8 weight like any other) is
/// multiplied by the same 127 before it joins the integer sum.
const UNIT: i32 = i8::MAX as i32;

impl Tensor {
    /// `y[r][o] = (Σ_j w[o][j] · x[r][j] + w[o][k] · 127) · scales[o]` for `self` = x `[m, k]`
    /// i8, `weight` `[n, k + 1]` i8 (last column the bias) and `scales` `[n]` f32.
    ///
    /// The sum is an exact i32 (|w·x| ≤ 128², so fewer than 2^17 terms and the bias cannot
    /// overflow); it becomes f32 once, then is multiplied by the row's scale — Tesseract's
    /// `MatrixDotVector` in integer mode, bit for bit, whichever kernel (scalar, SIMD128 or relaxed SIMD) runs.
    pub fn linear_i8(&self, weight: &Tensor, scales: &Tensor) -> Result<Tensor> {
        const OP: &str = "linear_i8";
        self.require_dtype(OP, DType::I8)?;
        weight.require_dtype(OP, DType::I8)?;
        scales.require_dtype(OP, DType::F32)?;
        let ok = self.rank() == 2
            && weight.rank() == 2
            && weight.dims()[1] == self.dims()[1] + 1
            && scales.dims() == [weight.dims()[0]]
            && self.dims()[1] < 1 << 17;
        if !ok {
            return Err(Error::shape(
                OP,
                "x [m, k < 2^17], weight [n, k + 1], scales [n]",
                format!(
                    "x {}, weight {}, scales {}",
                    self.shape(),
                    weight.shape(),
                    scales.shape()
                ),
            ));
        }
        let (m, k, n) = (self.dims()[0], self.dims()[1], weight.dims()[0]);
        // Weights are large and multiplied once per timestep: read them in place.
        let (x, w, s) = (self.i8_data()?, weight.i8_data()?, scales.to_vec_f32()?);
        let shape = Shape::from([m, n]);
        let mut sums = try_vec(shape.checked_elem_count()?, 0i32)?;
        if k >= 16 {
            gemm_i8(&x, k, &w, k + 1, &mut sums);
        } else if k > 0 {
            // Short rows (a 3×3 convolution's nine inputs) would run the kernels' scalar tails
            // only: zero-padded to one vector they take the SIMD dots, with the same sums.
            let pad = |src: &[i8], rows: usize, stride: usize| -> Result<Vec<i8>> {
                let mut v = try_vec(crate::shape::checked_product(OP, &[rows, 16])?, 0i8)?;
                for (d, r) in v.chunks_exact_mut(16).zip(src.chunks(stride)) {
                    d[..k].copy_from_slice(&r[..k]);
                }
                Ok(v)
            };
            gemm_i8(&pad(&x, m, k)?, 16, &pad(&w, n, k + 1)?, 16, &mut sums);
        }
        let mut out = try_vec(sums.len(), 0.0f32)?;
        for (yr, sr) in out
            .chunks_exact_mut(n.max(1))
            .zip(sums.chunks_exact(n.max(1)))
        {
            for (((y, &sum), wr), &scale) in yr
                .iter_mut()
                .zip(sr)
                .zip(w.chunks_exact(k + 1))
                .zip(s.iter())
            {
                *y = (sum + wr[k] as i32 * UNIT) as f32 * scale;
            }
        }
        Ok(Tensor::new_f32(out, shape))
    }

    /// f32 in [-1, 1] to int8 the way Tesseract stores activations between integer layers:
    /// `clamp(round(x · 127), -127, 127)`, rounding half away from zero (in f32, as its
    /// `IntCastRounded` does).
    pub fn quantize_unit_i8(&self) -> Result<Tensor> {
        let a = self.f32_storage("quantize_unit_i8")?;
        let out = self.map_rows(a, |x, y: &mut [i8]| {
            for (y, &v) in y.iter_mut().zip(x) {
                *y = quantize_unit(v);
            }
        })?;
        Tensor::from_i8(out, self.shape().clone())
    }
}

impl Tensor {
    /// The i8 elements in row-major order, borrowed when the view is contiguous.
    fn i8_data(&self) -> Result<Cow<'_, [i8]>> {
        match (self.is_contiguous(), i8::slice(self.storage())) {
            (true, Some(all)) => Ok(Cow::Borrowed(
                &all[self.offset()..self.offset() + self.elem_count()],
            )),
            _ => self.to_vec_i8().map(Cow::Owned),
        }
    }
}

/// One value of [`Tensor::quantize_unit_i8`] (NaN becomes 0).
#[inline]
pub fn quantize_unit(v: f32) -> i8 {
    let x = v * UNIT as f32;
    let r = if x >= 0.0 {
        (x + 0.5) as i32
    } else {
        -((-x + 0.5) as i32)
    };
    r.clamp(-UNIT, UNIT) as i8
}
