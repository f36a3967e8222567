//! Shapes, canonical strides and NumPy broadcasting.

use crate::error::{Error, Result};
use std::fmt;

/// The dimensions of a tensor, outermost first. A rank-0 shape (`[]`) holds one element.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(Vec<usize>);

impl Shape {
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }

    /// The shape of a single scalar.
    pub fn scalar() -> Self {
        Shape(Vec::new())
    }

    #[inline]
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    #[inline]
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Size of dimension `axis`, or [`Error::AxisOutOfRange`].
    pub fn dim(&self, axis: usize) -> Result<usize> {
        self.0.get(axis).copied().ok_or(Error::AxisOutOfRange {
            op: "dim",
            axis,
            rank: self.rank(),
        })
    }

    /// Number of elements. Saturates instead of overflowing; tensors are only ever built from
    /// shapes that passed [`Shape::checked_elem_count`], so for them this is exact.
    pub fn elem_count(&self) -> usize {
        self.0.iter().fold(1usize, |a, &d| a.saturating_mul(d))
    }

    /// Number of elements, or [`Error::SizeOverflow`] when the product of the non-zero
    /// dimensions overflows `usize`. Zeros are skipped so that `[0, 2^40, 2^40]` is rejected
    /// too: then every partial product of an accepted shape's dimensions (row lengths, outer
    /// counts, strides) fits `usize`, and ops may multiply them freely.
    pub fn checked_elem_count(&self) -> Result<usize> {
        let n = self
            .0
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d.max(1)))
            .ok_or_else(|| Error::SizeOverflow {
                what: "element count",
                size: self.0.iter().map(|&d| d.max(1) as f64).product(),
            })?;
        Ok(if self.0.contains(&0) { 0 } else { n })
    }

    /// Row-major (C order) strides in elements: the last axis has stride 1.
    pub fn strides(&self) -> Vec<usize> {
        let mut strides = vec![0; self.rank()];
        let mut acc = 1usize;
        for (s, &d) in strides.iter_mut().zip(&self.0).rev() {
            *s = acc;
            acc = acc.saturating_mul(d);
        }
        strides
    }

    /// NumPy right-aligned broadcast: dimensions are compared from the right, each pair must be
    /// equal or contain a 1, and missing leading dimensions count as 1.
    pub fn broadcast(&self, other: &Shape) -> Result<Shape> {
        let rank = self.rank().max(other.rank());
        let mut dims = vec![0; rank];
        for (i, out) in dims.iter_mut().enumerate() {
            let a = dim_from_right(&self.0, rank - 1 - i);
            let b = dim_from_right(&other.0, rank - 1 - i);
            *out = match (a, b) {
                (a, b) if a == b => a,
                (1, b) => b,
                (a, 1) => a,
                _ => {
                    return Err(Error::NotBroadcastable {
                        lhs: self.clone(),
                        rhs: other.clone(),
                    })
                }
            };
        }
        Ok(Shape(dims))
    }

    /// Strides that read a tensor of this shape (with `strides`) at the broadcast shape `to`:
    /// stretched and missing axes get stride 0. `to` must be a broadcast of `self`.
    pub(crate) fn broadcast_strides(&self, strides: &[usize], to: &Shape) -> Result<Vec<usize>> {
        if to.rank() < self.rank() {
            return Err(Error::NotBroadcastable {
                lhs: self.clone(),
                rhs: to.clone(),
            });
        }
        let lead = to.rank() - self.rank();
        let mut out = vec![0; to.rank()];
        for (i, &d) in self.0.iter().enumerate() {
            let t = to.0[lead + i];
            out[lead + i] = if d == t {
                strides[i]
            } else if d == 1 {
                0
            } else {
                return Err(Error::NotBroadcastable {
                    lhs: self.clone(),
                    rhs: to.clone(),
                });
            };
        }
        Ok(out)
    }
}

/// The product of `factors`, or [`Error::SizeOverflow`] naming `what`.
pub(crate) fn checked_product(what: &'static str, factors: &[usize]) -> Result<usize> {
    factors
        .iter()
        .try_fold(1usize, |a, &f| a.checked_mul(f))
        .ok_or_else(|| Error::overflow(what, factors))
}

fn dim_from_right(dims: &[usize], k: usize) -> usize {
    if k < dims.len() {
        dims[dims.len() - 1 - k]
    } else {
        1
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}

impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(v.to_vec())
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Self {
        Shape(v.to_vec())
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape::scalar()
    }
}

impl From<usize> for Shape {
    fn from(d: usize) -> Self {
        Shape(vec![d])
    }
}

impl From<(usize, usize)> for Shape {
    fn from((a, b): (usize, usize)) -> Self {
        Shape(vec![a, b])
    }
}

impl From<(usize, usize, usize)> for Shape {
    fn from((a, b, c): (usize, usize, usize)) -> Self {
        Shape(vec![a, b, c])
    }
}

impl From<Shape> for Vec<usize> {
    fn from(s: Shape) -> Self {
        s.0
    }
}
