//! Softmax and the normalisations.

use super::kernels;
use crate::error::{Error, Result};
use crate::Tensor;

impl Tensor {
    /// Softmax along `axis`: `exp(x - max(x)) / sum(exp(x - max(x)))`.
    ///
    /// Subtracting the max is not optional: real logits reach the thousands, `exp(1000)` is
    /// `inf` in f32 and `inf / inf` is NaN. With it every exponent is <= 0.
    pub fn softmax(&self, axis: usize) -> Result<Tensor> {
        // Not `axis + 1 == rank`: a JavaScript axis of 2^32 - 1 is `usize::MAX` on wasm32.
        if self.rank().checked_sub(1) == Some(axis) && self.dtype() == crate::DType::F32 {
            return self.softmax_last_axis();
        }
        let shifted = self.sub(&self.max(axis, true)?)?;
        let e = shifted.exp()?;
        e.div(&e.sum(axis, true)?)
    }

    /// The same steps as the three-op softmax, fused per row of the last axis: max, `exp(x - max)`,
    /// a sequential f64 sum rounded to f32, then division — so the bits are identical.
    fn softmax_last_axis(&self) -> Result<Tensor> {
        self.last_dim_op("softmax", |x, y| {
            // `exp_sum` subtracts and exponentiates as `sub` and `Tensor::exp` do.
            y.copy_from_slice(x);
            let s = kernels::exp_sum(y, kernels::max(x)) as f32;
            for v in y.iter_mut() {
                *v /= s;
            }
        })
    }

    /// Calls `f(row, out_row)` for every vector along the last dimension.
    fn last_dim_op(&self, op: &'static str, f: impl Fn(&[f32], &mut [f32])) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        Ok(Tensor::new_f32(self.map_rows(a, f)?, self.shape().clone()))
    }

    /// `weight` as a dense vector of exactly `hidden` f32 values.
    fn norm_param(&self, op: &'static str, p: &Tensor, name: &str) -> Result<Vec<f32>> {
        let hidden = self.dims().last().copied().unwrap_or(1);
        if p.elem_count() != hidden {
            return Err(Error::shape(
                op,
                format!("{name} with {hidden} elements"),
                p.shape(),
            ));
        }
        p.require_dtype(op, crate::DType::F32)?;
        p.to_vec_f32()
    }

    /// RMSNorm over the last dimension: `x * (1 / sqrt(mean(x²) + eps)) * weight`, computed as
    /// ggml does (see [`rms_norm_row`]). `weight` must have exactly `hidden` elements.
    pub fn rms_norm(&self, weight: &Tensor, eps: f32) -> Result<Tensor> {
        self.require_dtype("rms_norm", crate::DType::F32)?;
        let w = self.norm_param("rms_norm", weight, "weight")?;
        self.last_dim_op("rms_norm", |x, y| rms_norm_row(x, &w, eps, y))
    }

    /// LayerNorm: `(x - mean) / sqrt(var + eps) * weight + bias` over the last dimension, with
    /// the population variance (divide by N).
    pub fn layer_norm(&self, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor> {
        self.require_dtype("layer_norm", crate::DType::F32)?;
        let w = self.norm_param("layer_norm", weight, "weight")?;
        let b = self.norm_param("layer_norm", bias, "bias")?;
        self.last_dim_op("layer_norm", |x, y| {
            let n = x.len() as f64;
            let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + eps as f64).sqrt();
            for (i, y) in y.iter_mut().enumerate() {
                *y = ((x[i] as f64 - mean) * inv) as f32 * w[i] + b[i];
            }
        })
    }
}

/// One RMSNorm row, with ggml's numerics: squares in f32 summed in f64, `mean` rounded to f32,
/// `scale = 1 / sqrtf(mean + eps)`, `y = (x · scale) · w`. The model's forward pass calls this
/// directly on its scratch buffers.
pub fn rms_norm_row(x: &[f32], w: &[f32], eps: f32, y: &mut [f32]) {
    let scale = rms_scale(x, eps);
    for ((y, &v), &w) in y.iter_mut().zip(x).zip(w) {
        *y = (v * scale) * w;
    }
}

/// [`rms_norm_row`] with `y = x`: the same bits, no second buffer.
pub fn rms_norm_in_place(x: &mut [f32], w: &[f32], eps: f32) {
    let scale = rms_scale(x, eps);
    for (v, &w) in x.iter_mut().zip(w) {
        *v = (*v * scale) * w;
    }
}

/// `1 / sqrtf(mean(x²) + eps)`, the factor of [`rms_norm_row`].
pub fn rms_scale(x: &[f32], eps: f32) -> f32 {
    let sum = kernels::sum_squares(x);
    let mean = (sum / x.len().max(1) as f64) as f32;
    1.0 / (mean + eps).sqrt()
}
