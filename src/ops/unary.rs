//! Elementwise unary ops.

use crate::error::Result;
use crate::storage::try_vec;
use crate::strided::for_each_row;
use crate::Tensor;

/// `sqrt(2 / pi)`, the GELU tanh-approximation constant.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

impl Tensor {
    /// Applies `f` to every element, writing a contiguous result.
    pub(crate) fn unary_op(&self, op: &'static str, f: impl Fn(f32) -> f32) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        let mut out = try_vec(self.elem_count(), 0.0f32)?;
        let mut pos = 0;
        for_each_row(
            self.dims(),
            [self.strides()],
            [self.offset()],
            |[o], n, [s]| {
                for (j, y) in out[pos..pos + n].iter_mut().enumerate() {
                    *y = f(a[o + j * s]);
                }
                pos += n;
            },
        );
        Ok(Tensor::new_f32(out, self.shape().clone()))
    }

    pub fn neg(&self) -> Result<Tensor> {
        self.unary_op("neg", |x| -x)
    }

    pub fn abs(&self) -> Result<Tensor> {
        self.unary_op("abs", f32::abs)
    }

    pub fn exp(&self) -> Result<Tensor> {
        self.unary_op("exp", f32::exp)
    }

    /// Natural logarithm (`-inf` at 0, NaN below).
    pub fn log(&self) -> Result<Tensor> {
        self.unary_op("log", f32::ln)
    }

    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary_op("sqrt", f32::sqrt)
    }

    pub fn relu(&self) -> Result<Tensor> {
        self.unary_op("relu", |x| if x > 0.0 { x } else { 0.0 })
    }

    /// `x * mul + add`.
    pub fn affine(&self, mul: f32, add: f32) -> Result<Tensor> {
        self.unary_op("affine", |x| x * mul + add)
    }

    /// SiLU / swish: `x * sigmoid(x) = x / (1 + exp(-x))` (LLaMA-family FFNs).
    pub fn silu(&self) -> Result<Tensor> {
        self.unary_op("silu", |x| x / (1.0 + (-x).exp()))
    }

    /// GELU, tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` — what Gemma and the
    /// GPT-2 lineage use; within 1e-3 of the erf form everywhere.
    pub fn gelu(&self) -> Result<Tensor> {
        self.unary_op("gelu", gelu_tanh)
    }

    /// `tanh(x)`, in (-1, 1).
    pub fn tanh(&self) -> Result<Tensor> {
        self.unary_op("tanh", f32::tanh)
    }

    /// Logistic sigmoid `1 / (1 + exp(-x))`, in (0, 1).
    pub fn sigmoid(&self) -> Result<Tensor> {
        self.unary_op("sigmoid", |x| 1.0 / (1.0 + (-x).exp()))
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
