//! `Tensor`: a shape and strides over a shared `Storage`, plus constructors, accessors, views
//! and copies. Math lives in [`crate::ops`], dtype conversion in [`crate::convert`].

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::storage::{check_len, try_copy, try_vec, Bytes, Element, Storage};
use crate::strided;
use half::{bf16, f16};
use std::fmt;
use std::sync::Arc;

/// Where a tensor's data lives. kopitiam-wasm computes on the CPU (or the wasm VM) only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
}

/// A CPU tensor: a [`Shape`] plus a strided view into a shared, ref-counted [`Storage`].
///
/// `clone()` and every view (`transpose`, `narrow`, `broadcast_to`, `permute`, contiguous
/// `reshape`) are O(rank): they share the storage and only change offset, shape and strides.
/// Quantized tensors always have canonical strides and offset 0, because a ggml block cannot be
/// addressed at a finer grain than the whole block.
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    /// In elements, into `storage`.
    offset: usize,
    shape: Shape,
    /// In elements, one per dimension; 0 on broadcast axes.
    strides: Vec<usize>,
    dtype: DType,
}

impl Tensor {
    // ---------------------------------------------------------------- constructors

    /// Wraps storage in a contiguous view of `shape`. Callers have checked the sizes.
    pub(crate) fn from_storage(storage: Storage, shape: Shape) -> Tensor {
        let strides = shape.strides();
        let dtype = storage.dtype();
        Tensor {
            storage: Arc::new(storage),
            offset: 0,
            shape,
            strides,
            dtype,
        }
    }

    fn from_elements<T: Element>(data: Vec<T>, shape: impl Into<Shape>) -> Result<Self> {
        let shape = shape.into();
        let n = shape.checked_elem_count()?;
        check_len(&shape, T::DTYPE, n, data.len())?;
        Ok(Self::from_storage(T::into_storage(data), shape))
    }

    /// Builds a contiguous f32 tensor; `data` must hold exactly `shape.elem_count()` elements.
    pub fn from_f32(data: Vec<f32>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_elements(data, shape)
    }

    /// Builds a tensor from raw IEEE 754 binary16 bits; values are decoded by [`Tensor::to_dtype`].
    pub fn from_f16(data: Vec<u16>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_elements(data.into_iter().map(f16::from_bits).collect(), shape)
    }

    /// Builds a tensor from raw bfloat16 bits.
    pub fn from_bf16(data: Vec<u16>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_elements(data.into_iter().map(bf16::from_bits).collect(), shape)
    }

    pub fn from_i8(data: Vec<i8>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_elements(data, shape)
    }

    /// Builds an i32 tensor, the dtype of token ids and indices (see [`Tensor::gather_rows`]).
    pub fn from_i32(data: Vec<i32>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_elements(data, shape)
    }

    /// Builds a block-quantized tensor from raw ggml block bytes (as stored in GGUF).
    ///
    /// The last dimension must be a whole number of blocks ([`Error::PartialQuantizedBlock`]),
    /// and `bytes` must be exactly the size the dtype table gives ([`Error::StorageTooSmall`]
    /// when short, [`Error::LengthMismatch`] when long).
    pub fn from_quantized(dtype: DType, bytes: Vec<u8>, shape: impl Into<Shape>) -> Result<Self> {
        Self::from_quantized_bytes(dtype, bytes.into(), shape)
    }

    /// [`Tensor::from_quantized`] over a shared byte view (e.g. a weight inside a loaded GGUF
    /// file): no copy is made.
    pub fn from_quantized_bytes(
        dtype: DType,
        bytes: Bytes,
        shape: impl Into<Shape>,
    ) -> Result<Self> {
        let shape = shape.into();
        if !dtype.is_quantized() {
            return Err(Error::UnsupportedDType {
                op: "from_quantized",
                dtype,
            });
        }
        let last = shape.dims().last().copied().unwrap_or(1);
        if last % dtype.block_elems() != 0 {
            return Err(Error::PartialQuantizedBlock {
                dtype,
                dim: last,
                block_elems: dtype.block_elems(),
            });
        }
        let n = shape.checked_elem_count()?;
        let needed = dtype.storage_bytes(n)?;
        check_len(&shape, dtype, needed, bytes.len())?;
        Ok(Self::from_storage(
            Storage::Quantized { dtype, bytes },
            shape,
        ))
    }

    /// A tensor of f32 zeros.
    ///
    /// # Panics
    /// Like `vec![0.0; n]`, when the element count overflows or cannot be allocated; use
    /// [`Tensor::try_zeros`] for sizes that come from untrusted input.
    pub fn zeros(shape: impl Into<Shape>) -> Self {
        match Self::try_zeros(shape) {
            Ok(t) => t,
            Err(e) => panic!("Tensor::zeros: {e}"),
        }
    }

    /// [`Tensor::zeros`] that reports overflow and allocation failure as errors.
    pub fn try_zeros(shape: impl Into<Shape>) -> Result<Self> {
        let shape = shape.into();
        let n = shape.checked_elem_count()?;
        Ok(Self::from_storage(Storage::F32(try_vec(n, 0.0)?), shape))
    }

    // ---------------------------------------------------------------- accessors

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn device(&self) -> Device {
        Device::Cpu
    }

    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    pub fn elem_count(&self) -> usize {
        self.shape.elem_count()
    }

    /// This view's element strides; not necessarily the canonical strides of `shape()`.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Element offset of this view into its storage.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Whether both tensors view the same buffer.
    pub fn shares_storage_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Whether the elements sit in storage in row-major order without gaps. Axes of size 1 may
    /// have any stride (where they step does not matter), so `narrow` to one row stays contiguous.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&d, &s) in self.dims().iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(d);
        }
        true
    }

    /// Whether some element is reachable through two indices (a `broadcast_to` view). Such views
    /// are read-only: ops only ever read them and write into fresh tensors.
    pub fn is_broadcast(&self) -> bool {
        self.dims()
            .iter()
            .zip(&self.strides)
            .any(|(&d, &s)| d > 1 && s == 0)
    }

    // ---------------------------------------------------------------- checks used by ops

    /// Rejects quantized tensors for ops that address single elements.
    pub(crate) fn require_elementwise(&self, op: &'static str) -> Result<()> {
        if self.dtype.is_quantized() {
            return Err(Error::QuantizedElementAccess {
                op,
                dtype: self.dtype,
            });
        }
        Ok(())
    }

    /// Requires exactly `dtype` (quantized input gets the more helpful `QuantizedElementAccess`).
    pub(crate) fn require_dtype(&self, op: &'static str, dtype: DType) -> Result<()> {
        self.require_elementwise(op)?;
        if self.dtype != dtype {
            return Err(Error::DTypeMismatch {
                op,
                expected: dtype,
                actual: self.dtype,
            });
        }
        Ok(())
    }

    /// The whole f32 buffer behind this view, after checking the dtype. Index it with
    /// `offset()` and `strides()`.
    pub(crate) fn f32_storage(&self, op: &'static str) -> Result<&[f32]> {
        self.require_dtype(op, DType::F32)?;
        Ok(f32::slice(&self.storage).unwrap_or(&[]))
    }

    pub(crate) fn new_f32(data: Vec<f32>, shape: Shape) -> Tensor {
        debug_assert_eq!(data.len(), shape.elem_count());
        Self::from_storage(Storage::F32(data), shape)
    }

    fn check_axis(&self, op: &'static str, axis: usize) -> Result<()> {
        if axis >= self.rank() {
            return Err(Error::AxisOutOfRange {
                op,
                axis,
                rank: self.rank(),
            });
        }
        Ok(())
    }

    fn view(&self, shape: Shape, strides: Vec<usize>, offset: usize) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            offset,
            shape,
            strides,
            dtype: self.dtype,
        }
    }

    // ---------------------------------------------------------------- views (zero-copy)

    /// Swaps two dimensions. Zero-copy.
    pub fn transpose(&self, dim0: usize, dim1: usize) -> Result<Tensor> {
        self.require_elementwise("transpose")?;
        self.check_axis("transpose", dim0)?;
        self.check_axis("transpose", dim1)?;
        let mut dims = self.dims().to_vec();
        let mut strides = self.strides.clone();
        dims.swap(dim0, dim1);
        strides.swap(dim0, dim1);
        Ok(self.view(dims.into(), strides, self.offset))
    }

    /// Reorders all dimensions: result dim `i` is input dim `perm[i]`. Zero-copy.
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        self.require_elementwise("permute")?;
        let rank = self.rank();
        let mut seen = vec![false; rank];
        if perm.len() != rank {
            return Err(Error::shape(
                "permute",
                format!("a permutation of {rank} axes"),
                format!("{perm:?}"),
            ));
        }
        for &p in perm {
            self.check_axis("permute", p)?;
            if std::mem::replace(&mut seen[p], true) {
                return Err(Error::shape(
                    "permute",
                    format!("a permutation of {rank} axes"),
                    format!("{perm:?}"),
                ));
            }
        }
        let dims: Vec<usize> = perm.iter().map(|&p| self.dims()[p]).collect();
        let strides = perm.iter().map(|&p| self.strides[p]).collect();
        Ok(self.view(dims.into(), strides, self.offset))
    }

    /// The sub-view `[start, start + len)` along `dim`. Zero-copy.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        self.require_elementwise("narrow")?;
        self.check_axis("narrow", dim)?;
        let size = self.dims()[dim];
        match start.checked_add(len) {
            Some(end) if end <= size => {}
            _ => {
                return Err(Error::NarrowOutOfRange {
                    dim,
                    start,
                    len,
                    size,
                })
            }
        }
        let mut dims = self.dims().to_vec();
        dims[dim] = len;
        let shape = Shape::from(dims);
        // An empty view (`len == 0`, or another dimension is 0) keeps the old offset so it never
        // points past the storage: `[0, 5]` narrowed to columns `2..5` holds no element at 2.
        let offset = if shape.elem_count() == 0 {
            self.offset
        } else {
            self.offset + start * self.strides[dim]
        };
        Ok(self.view(shape, self.strides.clone(), offset))
    }

    /// A read-only view at `shape` (NumPy rules); stretched axes get stride 0. Zero-copy.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        self.require_elementwise("broadcast_to")?;
        let shape = shape.into();
        shape.checked_elem_count()?;
        let strides = self.shape.broadcast_strides(&self.strides, &shape)?;
        Ok(self.view(shape, strides, self.offset))
    }

    /// Reinterprets the elements as `dims` (same count). Zero-copy when contiguous, otherwise a
    /// contiguous copy is made first.
    pub fn reshape(&self, dims: impl Into<Shape>) -> Result<Tensor> {
        self.require_elementwise("reshape")?;
        let shape = dims.into();
        let n = shape.checked_elem_count()?;
        if n != self.elem_count() {
            return Err(Error::shape("reshape", &self.shape, &shape));
        }
        let src = self.contiguous()?;
        let strides = shape.strides();
        Ok(src.view(shape, strides, src.offset))
    }

    // ---------------------------------------------------------------- copies

    /// `self` if already contiguous (a cheap `Arc` clone), else a contiguous copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy()
    }

    /// A fresh contiguous copy with its own storage, whatever the layout of `self`.
    pub fn copy(&self) -> Result<Tensor> {
        let storage = match &*self.storage {
            Storage::F32(v) => Storage::F32(self.gather(v)?),
            Storage::F16(v) => Storage::F16(self.gather(v)?),
            Storage::BF16(v) => Storage::BF16(self.gather(v)?),
            Storage::I8(v) => Storage::I8(self.gather(v)?),
            Storage::I32(v) => Storage::I32(self.gather(v)?),
            // Quantized views are always canonical with offset 0, and the blocks are immutable:
            // the copy shares them.
            Storage::Quantized { dtype, bytes } => Storage::Quantized {
                dtype: *dtype,
                bytes: bytes.clone(),
            },
        };
        Ok(Self::from_storage(storage, self.shape.clone()))
    }

    /// This view's elements in row-major order, from the typed buffer `data` behind it.
    pub(crate) fn gather<T: Copy + Send + Sync + Default>(&self, data: &[T]) -> Result<Vec<T>> {
        let n = self.elem_count();
        if self.is_contiguous() {
            return try_copy(&data[self.offset..self.offset + n]);
        }
        let mut out = try_vec(n, T::default())?;
        strided::copy_strided(data, self.offset, self.dims(), &self.strides, &mut out);
        Ok(out)
    }

    /// Maps this view's elements (stored in `src`) into a new contiguous buffer one innermost
    /// row at a time: `f(row, out_row)` always sees a contiguous row — borrowed in place when the
    /// row's stride is 1, gathered into a scratch buffer otherwise. Conversions, unary ops and
    /// last-axis ops all go through here.
    pub(crate) fn map_rows<S: Copy, D: Copy + Default>(
        &self,
        src: &[S],
        mut f: impl FnMut(&[S], &mut [D]),
    ) -> Result<Vec<D>> {
        let mut out = try_vec(self.elem_count(), D::default())?;
        let mut pos = 0;
        let mut scratch = Vec::new();
        strided::for_each_row(
            self.dims(),
            [&self.strides],
            [self.offset],
            |[o], n, [s]| {
                let dst = &mut out[pos..pos + n];
                if s == 1 {
                    f(&src[o..o + n], dst);
                } else {
                    scratch.clear();
                    scratch.extend((0..n).map(|j| src[o + j * s]));
                    f(&scratch, dst);
                }
                pos += n;
            },
        );
        Ok(out)
    }

    fn to_vec_of<T: Element + Default>(&self, op: &'static str) -> Result<Vec<T>> {
        self.require_dtype(op, T::DTYPE)?;
        self.gather(T::slice(&self.storage).unwrap_or(&[]))
    }

    /// The elements in row-major order. Needs f32; convert others with [`Tensor::to_dtype`].
    pub fn to_vec_f32(&self) -> Result<Vec<f32>> {
        self.to_vec_of::<f32>("to_vec_f32")
    }

    /// The elements in row-major order. Needs i32 (e.g. the output of [`Tensor::argmax`]).
    pub fn to_vec_i32(&self) -> Result<Vec<i32>> {
        self.to_vec_of::<i32>("to_vec_i32")
    }

    /// The elements as f16 bits, row-major. Needs f16.
    pub fn to_vec_f16_bits(&self) -> Result<Vec<u16>> {
        Ok(self
            .to_vec_of::<f16>("to_vec_f16_bits")?
            .into_iter()
            .map(f16::to_bits)
            .collect())
    }

    /// The elements as bf16 bits, row-major. Needs bf16.
    pub fn to_vec_bf16_bits(&self) -> Result<Vec<u16>> {
        Ok(self
            .to_vec_of::<bf16>("to_vec_bf16_bits")?
            .into_iter()
            .map(bf16::to_bits)
            .collect())
    }

    /// The elements in row-major order. Needs i8.
    pub fn to_vec_i8(&self) -> Result<Vec<i8>> {
        self.to_vec_of::<i8>("to_vec_i8")
    }

    /// The raw block bytes of a quantized tensor.
    pub fn quantized_bytes(&self) -> Result<&[u8]> {
        match &*self.storage {
            Storage::Quantized { bytes, .. } => Ok(bytes),
            _ => Err(Error::UnsupportedDType {
                op: "quantized_bytes",
                dtype: self.dtype,
            }),
        }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor[{}; {}, strides={:?}, offset={}]",
            self.dtype, self.shape, self.strides, self.offset
        )
    }
}
