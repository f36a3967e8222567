//! Elementwise binary ops with NumPy broadcasting, and comparisons.

use super::kernels::{self, Arith};
use crate::error::Result;
use crate::storage::try_vec;
use crate::strided::for_each_row;
use crate::Tensor;

impl Tensor {
    /// The shared body of every binary op: broadcast both shapes, read each operand through its
    /// broadcast strides (stride 0 on stretched axes) and write a contiguous result.
    fn binary_op(
        &self,
        rhs: &Tensor,
        op: &'static str,
        fast: Option<Arith>,
        f: impl Fn(f32, f32) -> f32,
    ) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        let b = rhs.f32_storage(op)?;
        let shape = self.shape().broadcast(rhs.shape())?;
        let n = shape.checked_elem_count()?;
        let sa = self.shape().broadcast_strides(self.strides(), &shape)?;
        let sb = rhs.shape().broadcast_strides(rhs.strides(), &shape)?;
        let so = shape.strides();
        let mut out = try_vec(n, 0.0f32)?;
        for_each_row(
            shape.dims(),
            [&so, &sa, &sb],
            [0, self.offset(), rhs.offset()],
            |[o, ia, ib], n, [_, sa, sb]| {
                let y = &mut out[o..o + n];
                match (fast, sa, sb) {
                    (Some(k), 1, 1) => kernels::binary(k, &a[ia..ia + n], &b[ib..ib + n], y),
                    (Some(k), 1, 0) => kernels::binary_scalar_rhs(k, &a[ia..ia + n], b[ib], y),
                    _ => {
                        for (j, y) in y.iter_mut().enumerate() {
                            *y = f(a[ia + j * sa], b[ib + j * sb]);
                        }
                    }
                }
            },
        );
        Ok(Tensor::new_f32(out, shape))
    }

    /// `self + rhs`, broadcasting.
    pub fn add(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "add", Some(Arith::Add), |a, b| a + b)
    }

    /// `self - rhs`, broadcasting.
    pub fn sub(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "sub", Some(Arith::Sub), |a, b| a - b)
    }

    /// `self * rhs`, broadcasting.
    pub fn mul(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "mul", Some(Arith::Mul), |a, b| a * b)
    }

    /// `self / rhs`, broadcasting. Division by zero follows IEEE 754 (±inf or NaN): an op cannot
    /// know whether that is a bug or, say, a masked attention score.
    pub fn div(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "div", Some(Arith::Div), |a, b| a / b)
    }

    /// Elementwise maximum (NaN if either is NaN), broadcasting.
    pub fn maximum(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "maximum", None, |a, b| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.max(b)
            }
        })
    }

    /// Elementwise minimum (NaN if either is NaN), broadcasting.
    pub fn minimum(&self, rhs: &Tensor) -> Result<Tensor> {
        self.binary_op(rhs, "minimum", None, |a, b| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.min(b)
            }
        })
    }
}

macro_rules! comparison {
    ($($name:ident: $op:tt, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("`self ", $doc, " rhs` elementwise with broadcasting, as an f32 mask (1.0 true, 0.0 false), ready to `mul` with. NaN compares false except under `ne`.")]
                pub fn $name(&self, rhs: &Tensor) -> Result<Tensor> {
                    self.binary_op(rhs, stringify!($name), None, |a, b| if a $op b { 1.0 } else { 0.0 })
                }
            )*
        }
    };
}

comparison! {
    eq: ==, "==";
    ne: !=, "!=";
    lt: <, "<";
    le: <=, "<=";
    gt: >, ">";
    ge: >=, ">=";
}
