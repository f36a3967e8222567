//! Reductions along one axis: `sum` (f64 accumulation), `max`, `argmax`.

use crate::error::{Error, Result};
use crate::storage::{try_vec, Element};
use crate::strided::for_each_row;
use crate::{Shape, Tensor};

impl Tensor {
    /// Calls `f(row_values)` once per slice along `axis`, in the output's row-major order, and
    /// collects the results. The reduced axis is moved last as a view, so each slice is one row
    /// of the row loop and needs no index maths.
    fn reduce_op<T: Element + Default>(
        &self,
        op: &'static str,
        axis: usize,
        keepdim: bool,
        f: impl Fn(&mut dyn Iterator<Item = f32>) -> Result<T>,
    ) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        if axis >= self.rank() {
            return Err(Error::AxisOutOfRange {
                op,
                axis,
                rank: self.rank(),
            });
        }
        let mut dims: Vec<usize> = self.dims().to_vec();
        let mut strides: Vec<usize> = self.strides().to_vec();
        let len = dims.remove(axis);
        let stride = strides.remove(axis);
        let n_out = Shape::from(dims.clone()).checked_elem_count()?;
        let mut out: Vec<T> = try_vec(n_out, T::default())?;
        if len == 0 {
            // Empty slices: let `f` decide (sum is 0, max/argmax are errors).
            for y in out.iter_mut() {
                *y = f(&mut std::iter::empty())?;
            }
        } else {
            dims.push(len);
            strides.push(stride);
            let mut pos = 0;
            let mut err = None;
            for_each_row(&dims, [&strides], [self.offset()], |[o], n, [s]| {
                if err.is_none() {
                    match f(&mut (0..n).map(|j| a[o + j * s])) {
                        Ok(v) => out[pos] = v,
                        Err(e) => err = Some(e),
                    }
                }
                pos += 1;
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        let mut out_dims = self.dims().to_vec();
        if keepdim {
            out_dims[axis] = 1;
        } else {
            out_dims.remove(axis);
        }
        Ok(Tensor::from_storage(T::into_storage(out), out_dims.into()))
    }

    /// Sum along `axis`, accumulated in f64 so long rows keep their low-order bits. With
    /// `keepdim` the axis stays with length 1, ready to broadcast back against `self`.
    pub fn sum(&self, axis: usize, keepdim: bool) -> Result<Tensor> {
        self.reduce_op("sum", axis, keepdim, |row| {
            Ok(row.fold(0.0f64, |acc, v| acc + v as f64) as f32)
        })
    }

    /// Maximum along `axis`. NaN propagates (a NaN anywhere in the slice gives NaN).
    pub fn max(&self, axis: usize, keepdim: bool) -> Result<Tensor> {
        self.reduce_op("max", axis, keepdim, |row| {
            let mut best: Option<f32> = None;
            for v in row {
                best = Some(match best {
                    None => v,
                    Some(b) if b.is_nan() || v.is_nan() => f32::NAN,
                    Some(b) => b.max(v),
                });
            }
            best.ok_or_else(|| empty_axis("max"))
        })
    }

    /// Index of the maximum along `axis` as an I32 tensor (token ids for greedy decoding).
    ///
    /// Ties go to the first (lowest) index: the running best is replaced only on a strict `>`.
    /// NaN never wins, since every comparison with NaN is false. An all-NaN slice gives 0.
    pub fn argmax(&self, axis: usize, keepdim: bool) -> Result<Tensor> {
        self.reduce_op("argmax", axis, keepdim, |row| {
            let mut best = f32::NEG_INFINITY;
            let mut best_i: Option<usize> = None;
            for (i, v) in row.enumerate() {
                if best_i.is_none() {
                    best_i = Some(0);
                }
                if v > best {
                    best = v;
                    best_i = Some(i);
                }
            }
            let i = best_i.ok_or_else(|| empty_axis("argmax"))?;
            i32::try_from(i).map_err(|_| Error::SizeOverflow {
                what: "argmax index",
                size: i as f64,
            })
        })
    }
}

fn empty_axis(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        reason: "cannot reduce an axis of length 0".into(),
    }
}
