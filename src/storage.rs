//! The flat, typed buffers that tensors view. Shared by `Arc`, never resized after creation.

use crate::dtype::DType;
use crate::error::{Error, Result};
use half::{bf16, f16};
use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// An immutable, cheaply cloned byte range of a shared buffer.
///
/// A model file is loaded into one allocation and every quantized weight is a `Bytes` view into
/// it, so the weights are never copied (nor expanded) after loading.
#[derive(Clone)]
pub struct Bytes {
    buf: Arc<Vec<u8>>,
    start: usize,
    len: usize,
}

impl Bytes {
    /// A view of `range` inside `buf`, or `None` when the range is out of bounds.
    pub fn slice_of(buf: &Arc<Vec<u8>>, range: Range<usize>) -> Option<Bytes> {
        (range.start <= range.end && range.end <= buf.len()).then(|| Bytes {
            buf: buf.clone(),
            start: range.start,
            len: range.end - range.start,
        })
    }

    /// Whether both views share one underlying buffer.
    pub fn shares_buffer_with(&self, other: &Bytes) -> bool {
        Arc::ptr_eq(&self.buf, &other.buf)
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        let len = v.len();
        Bytes {
            buf: Arc::new(v),
            start: 0,
            len,
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes)", self.len)
    }
}

/// Element data of one or more tensors. Views hold an `Arc<Storage>` plus offset and strides,
/// so a view never copies these bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I8(Vec<i8>),
    I32(Vec<i32>),
    /// Raw ggml blocks (`dtype.block_bytes()` bytes per `dtype.block_elems()` elements), exactly
    /// as they sit in a GGUF file; usually a view into the loaded file.
    Quantized {
        dtype: DType,
        bytes: Bytes,
    },
}

impl Storage {
    /// Quantized storage for `numel` elements. The byte count must match the dtype table exactly.
    pub fn new_quantized(dtype: DType, bytes: Vec<u8>, numel: usize) -> Result<Self> {
        if !dtype.is_quantized() {
            return Err(Error::UnsupportedDType {
                op: "from_quantized",
                dtype,
            });
        }
        let needed = dtype.storage_bytes(numel)?;
        check_len(&crate::Shape::from(numel), dtype, needed, bytes.len())?;
        Ok(Storage::Quantized {
            dtype,
            bytes: bytes.into(),
        })
    }

    pub fn dtype(&self) -> DType {
        match self {
            Storage::F32(_) => DType::F32,
            Storage::F16(_) => DType::F16,
            Storage::BF16(_) => DType::BF16,
            Storage::I8(_) => DType::I8,
            Storage::I32(_) => DType::I32,
            Storage::Quantized { dtype, .. } => *dtype,
        }
    }

    /// Number of elements the buffer holds (blocks × block size for quantized data).
    pub fn elem_count(&self) -> usize {
        match self {
            Storage::F32(v) => v.len(),
            Storage::F16(v) => v.len(),
            Storage::BF16(v) => v.len(),
            Storage::I8(v) => v.len(),
            Storage::I32(v) => v.len(),
            Storage::Quantized { dtype, bytes } => {
                bytes.len() / dtype.block_bytes() * dtype.block_elems()
            }
        }
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        match self {
            Storage::Quantized { bytes, .. } => bytes.len(),
            other => other.elem_count() * other.dtype().block_bytes(),
        }
    }
}

/// Errors unless a buffer of `actual` units is exactly the `needed` units a shape requires.
pub(crate) fn check_len(
    shape: &crate::Shape,
    dtype: DType,
    needed: usize,
    actual: usize,
) -> Result<()> {
    if actual < needed {
        Err(Error::StorageTooSmall {
            dtype,
            shape: shape.clone(),
            needed,
            available: actual,
        })
    } else if actual > needed {
        Err(Error::LengthMismatch {
            shape: shape.clone(),
            expected: needed,
            actual,
        })
    } else {
        Ok(())
    }
}

/// Room for `n` more elements in `v`, or [`Error::AllocationFailed`] instead of an abort when
/// the allocator says no (sizes here can come from files and from JavaScript callers). Every
/// fallible allocation below goes through this.
pub(crate) fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> Result<()> {
    v.try_reserve_exact(n)
        .map_err(|_| Error::alloc::<T>(v.len().saturating_add(n)))
}

/// A `Vec` of `n` copies of `fill`, or [`Error::AllocationFailed`].
pub(crate) fn try_vec<T: Clone>(n: usize, fill: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, fill);
    Ok(v)
}

/// Grows `v` to at least `n` elements (new ones `T::default()`), or [`Error::AllocationFailed`].
/// Scratch buffers call this every time and allocate only the first time a size is seen.
pub(crate) fn try_grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) -> Result<()> {
    if v.len() < n {
        try_reserve(v, n - v.len())?;
        v.resize(n, T::default());
    }
    Ok(())
}

/// Appends `rows` rows of `width` values to `v`, row `i` zeroed and then passed to `fill(i, row)`,
/// a few rows a task over the threads ([`parallel::for_each_row`]); or
/// [`Error::AllocationFailed`]. For buffers that grow into fresh memory (a prompt's KV-cache
/// rows, a longer prompt's scratch), whose first write to each page costs a page fault: a
/// zero-fill on one thread before the real writes kept the other threads waiting.
///
/// [`parallel::for_each_row`]: crate::parallel::for_each_row
#[cfg(feature = "llm")]
pub(crate) fn try_extend_rows(
    v: &mut Vec<f32>,
    rows: usize,
    width: usize,
    fill: impl Fn(usize, &mut [f32]) + Sync + Send,
) -> Result<()> {
    let n = rows
        .checked_mul(width)
        .ok_or_else(|| Error::overflow("buffer rows", &[rows, width]))?;
    try_reserve(v, n)?;
    let len = v.len();
    crate::parallel::for_each_row(&mut v.spare_capacity_mut()[..n], width, |i, row| {
        for x in row.iter_mut() {
            x.write(0.0);
        }
        // SAFETY: every element of `row` was written just above.
        let row = unsafe { &mut *(row as *mut [std::mem::MaybeUninit<f32>] as *mut [f32]) };
        fill(i, row);
    });
    // SAFETY: the loop wrote all `n` elements after `len` (its rows cover them: `n` is whole
    // rows of `width`), and `try_reserve` made room for them.
    unsafe { v.set_len(len + n) };
    Ok(())
}

/// An empty `Vec` with room for `n` elements, or [`Error::AllocationFailed`].
pub(crate) fn try_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_reserve(&mut v, n)?;
    Ok(v)
}

/// `v` replaced by a copy of `s`, reusing its buffer, or [`Error::AllocationFailed`].
pub(crate) fn try_refill<T: Clone>(v: &mut Vec<T>, s: &[T]) -> Result<()> {
    v.clear();
    try_reserve(v, s.len())?;
    v.extend_from_slice(s);
    Ok(())
}

/// A copy of `s` in a new `Vec`, or [`Error::AllocationFailed`]: `to_vec()` for buffers whose
/// size came from a file or from JavaScript (tensor data, logits, weight bytes).
pub(crate) fn try_copy<T: Clone>(s: &[T]) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_refill(&mut v, s)?;
    Ok(v)
}

/// A plain (non-quantized) element type with its own `Storage` variant.
pub trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn slice(storage: &Storage) -> Option<&[Self]>;
    fn into_storage(data: Vec<Self>) -> Storage;
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn slice(storage: &Storage) -> Option<&[Self]> {
                match storage {
                    Storage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_storage(data: Vec<Self>) -> Storage {
                Storage::$variant(data)
            }
        }
    };
}

element!(f32, F32);
element!(f16, F16);
element!(bf16, BF16);
element!(i8, I8);
element!(i32, I32);

#[cfg(test)]
mod tests {
    use super::*;

    /// `try_extend_rows` keeps what `v` held and appends exactly the rows a plain loop makes,
    /// each zeroed before `fill` sees it, in a team of threads too; no rows, or rows of no
    /// values, append nothing.
    #[test]
    #[cfg(feature = "llm")]
    fn extend_rows_appends_what_a_plain_loop_does() {
        let fill = |i: usize, row: &mut [f32]| {
            assert!(row.iter().all(|&x| x == 0.0), "row {i} not zeroed");
            for (j, x) in row.iter_mut().enumerate().skip(1) {
                *x = (i * 100 + j) as f32;
            }
        };
        let (rows, width) = (37, 5);
        let mut want = vec![7.0, 8.0];
        for i in 0..rows {
            let mut row = vec![0.0; width];
            fill(i, &mut row);
            want.extend(row);
        }
        let mut got = vec![7.0, 8.0];
        crate::parallel::with_team(|| try_extend_rows(&mut got, rows, width, fill)).unwrap();
        assert_eq!(got, want);
        try_extend_rows(&mut got, 0, width, fill).unwrap();
        try_extend_rows(&mut got, rows, 0, fill).unwrap();
        assert_eq!(got, want);
        assert!(try_extend_rows(&mut got, usize::MAX, 2, fill).is_err());
    }
}
