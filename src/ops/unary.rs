//! Elementwise unary ops.

use super::kernels::{self, Unary};
use crate::error::Result;
use crate::Tensor;

/// `sqrt(2 / pi)`, the GELU tanh-approximation constant.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

impl Tensor {
    /// Applies `k` to every element through the vector kernel, writing a contiguous result.
    pub(crate) fn unary_op(&self, op: &'static str, k: Unary) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        let out = self.map_rows(a, |x, y| kernels::unary(k, x, y))?;
        Ok(Tensor::new_f32(out, self.shape().clone()))
    }

    pub fn neg(&self) -> Result<Tensor> {
        self.unary_op("neg", Unary::Neg)
    }

    pub fn abs(&self) -> Result<Tensor> {
        self.unary_op("abs", Unary::Abs)
    }

    pub fn exp(&self) -> Result<Tensor> {
        self.unary_op("exp", Unary::Exp)
    }

    /// Natural logarithm (`-inf` at 0, NaN below).
    pub fn log(&self) -> Result<Tensor> {
        self.unary_op("log", Unary::Log)
    }

    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary_op("sqrt", Unary::Sqrt)
    }

    pub fn relu(&self) -> Result<Tensor> {
        self.unary_op("relu", Unary::Relu)
    }

    /// `x * mul + add`.
    pub fn affine(&self, mul: f32, add: f32) -> Result<Tensor> {
        self.unary_op("affine", Unary::Affine(mul, add))
    }

    /// SiLU / swish: `x * sigmoid(x) = x / (1 + exp(-x))` (LLaMA-family FFNs).
    pub fn silu(&self) -> Result<Tensor> {
        self.unary_op("silu", Unary::Silu)
    }

    /// GELU, tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` — what Gemma and the
    /// GPT-2 lineage use; within 1e-3 of the erf form everywhere.
    pub fn gelu(&self) -> Result<Tensor> {
        self.unary_op("gelu", Unary::Gelu)
    }

    /// `tanh(x)`, in (-1, 1).
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary_op("tanh", Unary::Tanh)
    }

    /// Logistic sigmoid `1 / (1 + exp(-x))`, in (0, 1).
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary_op("sigmoid", Unary::Sigmoid)
    }

    /// Alias of [`Tensor::sigmoid`] under Tesseract's name.
    pub fn logistic(&self) -> Result<Tensor> {
        self.sigmoid()
    }
}

/// GELU, tanh form, on one value (shared by [`Tensor::gelu`] and the model's FFN).
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}
