//! Data movement by index: embedding lookup (`gather_rows`), `concat` and `flip`.

use crate::error::{Error, Result};
use crate::quant;
use crate::storage::{try_vec, try_with_capacity, Element, Storage};
use crate::{DType, Shape, Tensor};
use half::{bf16, f16};

impl Tensor {
    /// Picks whole rows of a `[vocab, hidden]` table by i32 ids: the result is
    /// `indices.shape() + [hidden]`, in f32.
    ///
    /// The table may be f32 or block-quantized (rows are dequantized one at a time, so a Q4_0
    /// embedding is never expanded as a whole). An id outside `[0, vocab)` is
    /// [`Error::IndexOutOfRange`], never a panic.
    pub fn gather_rows(&self, indices: &Tensor) -> Result<Tensor> {
        const OP: &str = "gather_rows";
        indices.require_dtype(OP, DType::I32)?;
        if self.rank() != 2 {
            return Err(Error::shape(OP, "a [vocab, hidden] table", self.shape()));
        }
        if self.dtype() != DType::F32 && !self.dtype().is_quantized() {
            return Err(Error::DTypeMismatch {
                op: OP,
                expected: DType::F32,
                actual: self.dtype(),
            });
        }
        let (vocab, hidden) = (self.dims()[0], self.dims()[1]);
        let ids = indices.to_vec_i32()?;
        let mut out_dims = indices.dims().to_vec();
        out_dims.push(hidden);
        let out_shape = Shape::from(out_dims);
        let mut out = try_vec(out_shape.checked_elem_count()?, 0.0f32)?;
        let table = if self.dtype().is_quantized() {
            None
        } else {
            Some(self.contiguous()?)
        };
        let row_bytes = self.dtype().storage_bytes(hidden)?;
        let row = |id: i32| {
            usize::try_from(id)
                .ok()
                .filter(|&r| r < vocab)
                .ok_or(Error::IndexOutOfRange {
                    op: OP,
                    index: id as i64,
                    size: vocab,
                })
        };
        // Every id is checked, also when rows are empty (hidden 0) and the copy loop never runs.
        ids.iter().try_for_each(|&id| row(id).map(drop))?;
        for (&id, y) in ids.iter().zip(out.chunks_exact_mut(hidden.max(1))) {
            let r = row(id)?;
            match &table {
                Some(t) => {
                    let data = t.f32_storage(OP)?;
                    let start = t.offset() + r * hidden;
                    y.copy_from_slice(&data[start..start + hidden]);
                }
                None => {
                    let bytes = self.quantized_bytes()?;
                    quant::dequantize_row(
                        self.dtype(),
                        &bytes[r * row_bytes..(r + 1) * row_bytes],
                        y,
                    )?;
                }
            }
        }
        Ok(Tensor::new_f32(out, out_shape))
    }

    /// Joins tensors along `dim`. Any non-quantized dtype (this is data movement, not maths);
    /// all must share the dtype and every dimension except `dim`.
    pub fn concat(tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        const OP: &str = "concat";
        let first = tensors.first().ok_or_else(|| Error::InvalidArgument {
            op: OP,
            reason: "needs at least one tensor".into(),
        })?;
        for t in tensors {
            t.require_dtype(OP, first.dtype())?;
            if dim >= t.rank() {
                return Err(Error::AxisOutOfRange {
                    op: OP,
                    axis: dim,
                    rank: t.rank(),
                });
            }
            let same = t.rank() == first.rank()
                && t.dims()
                    .iter()
                    .zip(first.dims())
                    .enumerate()
                    .all(|(i, (a, b))| i == dim || a == b);
            if !same {
                return Err(Error::shape(
                    OP,
                    format!("{} except along dim {dim}", first.shape()),
                    t.shape(),
                ));
            }
        }
        let mut dims = first.dims().to_vec();
        dims[dim] = tensors.iter().try_fold(0usize, |acc, t| {
            let d = t.dims()[dim];
            acc.checked_add(d).ok_or(Error::SizeOverflow {
                what: OP,
                size: acc as f64 + d as f64,
            })
        })?;
        let shape = Shape::from(dims);
        shape.checked_elem_count()?;
        let storage = match first.dtype() {
            DType::F32 => concat_typed::<f32>(tensors, dim)?,
            DType::F16 => concat_typed::<f16>(tensors, dim)?,
            DType::BF16 => concat_typed::<bf16>(tensors, dim)?,
            DType::I8 => concat_typed::<i8>(tensors, dim)?,
            DType::I32 => concat_typed::<i32>(tensors, dim)?,
            dtype => return Err(Error::QuantizedElementAccess { op: OP, dtype }),
        };
        Ok(Tensor::from_storage(storage, shape))
    }
}

/// Interleaves each input's contiguous `[outer, dims[dim] * inner]` chunks.
fn concat_typed<T: Element + Default>(tensors: &[Tensor], dim: usize) -> Result<Storage> {
    let outer: usize = tensors[0].dims()[..dim].iter().product();
    let parts: Vec<Vec<T>> = tensors
        .iter()
        .map(|t| t.gather(T::slice(t.storage()).unwrap_or(&[])))
        .collect::<Result<_>>()?;
    let total = parts.iter().map(Vec::len).sum();
    let mut out = try_with_capacity(total)?;
    for o in 0..outer {
        for (t, p) in tensors.iter().zip(&parts) {
            let chunk = t.dims()[dim..].iter().product::<usize>();
            out.extend_from_slice(&p[o * chunk..(o + 1) * chunk]);
        }
    }
    Ok(T::into_storage(out))
}

impl Tensor {
    /// Reverses the order along `dim` (a copy: strides are unsigned, so there is no reversed
    /// view). Any non-quantized dtype.
    pub fn flip(&self, dim: usize) -> Result<Tensor> {
        const OP: &str = "flip";
        if dim >= self.rank() {
            return Err(Error::AxisOutOfRange {
                op: OP,
                axis: dim,
                rank: self.rank(),
            });
        }
        let storage = match self.dtype() {
            DType::F32 => self.flip_typed::<f32>(dim)?,
            DType::F16 => self.flip_typed::<f16>(dim)?,
            DType::BF16 => self.flip_typed::<bf16>(dim)?,
            DType::I8 => self.flip_typed::<i8>(dim)?,
            DType::I32 => self.flip_typed::<i32>(dim)?,
            dtype => return Err(Error::QuantizedElementAccess { op: OP, dtype }),
        };
        Ok(Tensor::from_storage(storage, self.shape().clone()))
    }

    fn flip_typed<T: Element + Default>(&self, dim: usize) -> Result<Storage> {
        let x = self.gather(T::slice(self.storage()).unwrap_or(&[]))?;
        let d = self.dims()[dim];
        let inner: usize = self.dims()[dim + 1..].iter().product();
        let mut out = try_with_capacity(x.len())?;
        for block in x.chunks_exact((d * inner).max(1)) {
            for i in (0..d).rev() {
                out.extend_from_slice(&block[i * inner..(i + 1) * inner]);
            }
        }
        Ok(T::into_storage(out))
    }
}
