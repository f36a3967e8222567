//! GGUF v3: a hardened reader and a writer.
//!
//! Layout (all little-endian; see `shared/spec/gemma3-gguf.md` §1):
//!
//! ```text
//! "GGUF" | version u32 = 3 | tensor_count u64 | kv_count u64
//! kv_count × (key: string | value type i32 | value)
//! tensor_count × (name: string | n_dims u32 | ne[n_dims] u64 | ggml type i32 | offset u64)
//! zero padding to `alignment` | data section (each tensor at data_start + offset)
//! ```
//!
//! A *string* is a u64 byte length followed by UTF-8 bytes (no NUL). An array value is an
//! element type (i32), a u64 count and the elements back to back.
//!
//! The reader treats the file as hostile: every read goes through a bounds-checked cursor that
//! reports the byte offset where it failed, every count is checked against the bytes that remain
//! *before* anything is allocated for it, all size arithmetic is checked (wasm32 has a 32-bit
//! `usize`), and no input can make it panic. The data section is bounds-checked but never copied:
//! [`GgufFile::tensor_bytes`] borrows a tensor's bytes from the caller's buffer.

use crate::storage::try_with_capacity;
use crate::{DType, Error, Result, Shape};
use std::collections::HashSet;

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// The only GGUF version this crate reads and writes.
pub const GGUF_VERSION: u32 = 3;
/// Data alignment when the file has no `general.alignment` key.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// The metadata key that overrides [`DEFAULT_ALIGNMENT`] (must be a `U32` power of two).
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// ggml's `GGML_MAX_NAME`: tensor names must be shorter than this many bytes.
pub const MAX_TENSOR_NAME_BYTES: usize = 64;
/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: usize = 4;

/// Smallest possible KV pair: key length (8) + a 1-byte key + value type (4) + a 1-byte value.
const MIN_KV_BYTES: u64 = 8 + 1 + 4 + 1;
/// Smallest possible tensor info: name length (8) + n_dims (4) + type (4) + offset (8).
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 4 + 8;

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/// A metadata value. The variants are GGUF's value types (ids 0..=12).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Array(Array),
}

/// An array of strings held compactly: one byte buffer plus end offsets. A 262 144-token
/// vocabulary takes ~3 MB this way instead of ~10 MB as separate `String`s (in wasm, memory
/// once touched stays resident, so even a transient copy counts).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StrArray {
    bytes: String,
    ends: Vec<usize>,
}

impl StrArray {
    pub fn new() -> StrArray {
        StrArray::default()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.bytes.get(start..end)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }

    /// Appends `s`, reporting [`Error::AllocationFailed`] instead of aborting.
    pub fn push(&mut self, s: &str) -> Result<()> {
        self.bytes
            .try_reserve(s.len())
            .map_err(|_| Error::AllocationFailed {
                bytes: self.bytes.len() as u64 + s.len() as u64,
            })?;
        self.bytes.push_str(s);
        try_push(&mut self.ends, self.bytes.len())
    }

    /// The concatenated text and each string's end offset in it, for a caller that keeps the
    /// text as its own arena instead of copying it.
    pub(crate) fn into_parts(self) -> (String, Vec<usize>) {
        (self.bytes, self.ends)
    }

    /// All strings as owned `String`s.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

impl<S: AsRef<str>> FromIterator<S> for StrArray {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> StrArray {
        let mut a = StrArray::new();
        for s in iter {
            a.bytes.push_str(s.as_ref());
            a.ends.push(a.bytes.len());
        }
        a
    }
}

impl From<Vec<String>> for StrArray {
    fn from(v: Vec<String>) -> StrArray {
        v.into_iter().collect()
    }
}

impl From<Vec<&str>> for StrArray {
    fn from(v: Vec<&str>) -> StrArray {
        v.into_iter().collect()
    }
}

/// A metadata array: one element type, no nesting (ggml rejects arrays of arrays).
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(StrArray),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// GGUF value type ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl Ty {
    fn from_id(id: i32) -> Option<Ty> {
        Some(match id {
            0 => Ty::U8,
            1 => Ty::I8,
            2 => Ty::U16,
            3 => Ty::I16,
            4 => Ty::U32,
            5 => Ty::I32,
            6 => Ty::F32,
            7 => Ty::Bool,
            8 => Ty::String,
            9 => Ty::Array,
            10 => Ty::U64,
            11 => Ty::I64,
            12 => Ty::F64,
            _ => return None,
        })
    }

    fn id(self) -> i32 {
        self as i32
    }

    fn name(self) -> &'static str {
        match self {
            Ty::U8 => "u8",
            Ty::I8 => "i8",
            Ty::U16 => "u16",
            Ty::I16 => "i16",
            Ty::U32 => "u32",
            Ty::I32 => "i32",
            Ty::F32 => "f32",
            Ty::Bool => "bool",
            Ty::String => "string",
            Ty::Array => "array",
            Ty::U64 => "u64",
            Ty::I64 => "i64",
            Ty::F64 => "f64",
        }
    }

    /// Bytes one element needs at least: the exact size for fixed-size types, the u64 length
    /// prefix for strings, element type + count for arrays.
    fn min_bytes(self) -> u64 {
        match self {
            Ty::U8 | Ty::I8 | Ty::Bool => 1,
            Ty::U16 | Ty::I16 => 2,
            Ty::U32 | Ty::I32 | Ty::F32 => 4,
            Ty::U64 | Ty::I64 | Ty::F64 | Ty::String => 8,
            Ty::Array => 4 + 8,
        }
    }
}

impl Value {
    fn ty(&self) -> Ty {
        match self {
            Value::U8(_) => Ty::U8,
            Value::I8(_) => Ty::I8,
            Value::U16(_) => Ty::U16,
            Value::I16(_) => Ty::I16,
            Value::U32(_) => Ty::U32,
            Value::I32(_) => Ty::I32,
            Value::F32(_) => Ty::F32,
            Value::Bool(_) => Ty::Bool,
            Value::String(_) => Ty::String,
            Value::U64(_) => Ty::U64,
            Value::I64(_) => Ty::I64,
            Value::F64(_) => Ty::F64,
            Value::Array(_) => Ty::Array,
        }
    }

    /// The GGUF value type id (0..=12).
    pub fn type_id(&self) -> u32 {
        self.ty() as u32
    }

    /// A short name for messages: `"u32"`, `"string"`, `"array<f32>"`, …
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Array(a) => a.type_name(),
            v => v.ty().name(),
        }
    }

    /// The value as a `u32` if it is an integer that fits (`U8`, `U16`, `U32`, `U64`, `I8`,
    /// `I16`, `I32`, `I64`; negative values do not fit).
    pub fn as_u32(&self) -> Option<u32> {
        match *self {
            Value::U8(v) => Some(u32::from(v)),
            Value::U16(v) => Some(u32::from(v)),
            Value::U32(v) => Some(v),
            Value::U64(v) => u32::try_from(v).ok(),
            Value::I8(v) => u32::try_from(v).ok(),
            Value::I16(v) => u32::try_from(v).ok(),
            Value::I32(v) => u32::try_from(v).ok(),
            Value::I64(v) => u32::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a `u64` if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) => Some(v),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => self.as_u32().map(u64::from),
        }
    }

    /// The value as an `i64` if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(i64::from(v)),
            Value::I16(v) => Some(i64::from(v)),
            Value::I32(v) => Some(i64::from(v)),
            Value::I64(v) => Some(v),
            Value::U64(v) => i64::try_from(v).ok(),
            _ => self.as_u32().map(i64::from),
        }
    }

    /// The value as an `f32`: `F32`, or `F64` narrowed (rounded to nearest).
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(v) => Some(v),
            Value::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

impl Array {
    fn elem_ty(&self) -> Ty {
        match self {
            Array::U8(_) => Ty::U8,
            Array::I8(_) => Ty::I8,
            Array::U16(_) => Ty::U16,
            Array::I16(_) => Ty::I16,
            Array::U32(_) => Ty::U32,
            Array::I32(_) => Ty::I32,
            Array::F32(_) => Ty::F32,
            Array::Bool(_) => Ty::Bool,
            Array::String(_) => Ty::String,
            Array::U64(_) => Ty::U64,
            Array::I64(_) => Ty::I64,
            Array::F64(_) => Ty::F64,
        }
    }

    /// The GGUF value type id of the elements.
    pub fn elem_type_id(&self) -> u32 {
        self.elem_ty() as u32
    }

    /// `"array<u8>"`, `"array<string>"`, …
    pub fn type_name(&self) -> &'static str {
        match self {
            Array::U8(_) => "array<u8>",
            Array::I8(_) => "array<i8>",
            Array::U16(_) => "array<u16>",
            Array::I16(_) => "array<i16>",
            Array::U32(_) => "array<u32>",
            Array::I32(_) => "array<i32>",
            Array::F32(_) => "array<f32>",
            Array::Bool(_) => "array<bool>",
            Array::String(_) => "array<string>",
            Array::U64(_) => "array<u64>",
            Array::I64(_) => "array<i64>",
            Array::F64(_) => "array<f64>",
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Array::U8(v) => v.len(),
            Array::I8(v) => v.len(),
            Array::U16(v) => v.len(),
            Array::I16(v) => v.len(),
            Array::U32(v) => v.len(),
            Array::I32(v) => v.len(),
            Array::F32(v) => v.len(),
            Array::Bool(v) => v.len(),
            Array::String(v) => v.len(),
            Array::U64(v) => v.len(),
            Array::I64(v) => v.len(),
            Array::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------------------------------------
// Tensor infos and the parsed file
// ---------------------------------------------------------------------------------------------

/// One tensor-info record, validated against the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: `dims[0]` = `ne[0]` is the innermost (contiguous) dimension.
    pub dims: Vec<usize>,
    pub dtype: DType,
    /// Absolute byte offset of the tensor data in the file (data_start + relative offset).
    pub offset: usize,
    pub nbytes: usize,
}

impl TensorInfo {
    /// Row-major shape for `Tensor` (outermost first) = dims reversed.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }

    /// Number of elements (saturating; exact for infos produced by [`GgufFile::parse`], which
    /// checks the product for overflow).
    pub fn numel(&self) -> usize {
        self.dims.iter().fold(1usize, |a, &d| a.saturating_mul(d))
    }
}

/// The parsed header, metadata and tensor infos of a GGUF file.
#[derive(Debug, Clone)]
pub struct GgufFile {
    pub version: u32,
    pub alignment: usize,
    /// Absolute offset where the data section starts.
    pub data_offset: usize,
    /// In file order.
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
}

fn invalid(offset: usize, reason: impl Into<String>) -> Error {
    Error::InvalidGguf {
        offset: offset as u64,
        reason: reason.into(),
    }
}

fn missing(key: &str, reason: impl Into<String>) -> Error {
    Error::MissingMetadata {
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// Rounds `x` up to a multiple of `align` (a non-zero power of two); `None` on overflow.
fn pad_to(x: usize, align: usize) -> Option<usize> {
    let mask = align.checked_sub(1)?;
    Some(x.checked_add(mask)? & !mask)
}

/// The element count of `dims`, or `None` unless the product with zero dims counted as 1, times
/// the dtype's block bytes, fits in `usize` — the rule the reader applies, so that everything the
/// writer accepts reads back, and no partial product of a tensor's dims can overflow.
fn dims_numel(dims: &[usize], dtype: DType) -> Option<usize> {
    let bound = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d.max(1)))?;
    byte_bound(bound, dtype)?;
    Some(if dims.contains(&0) { 0 } else { bound })
}

/// Bytes of `bound` elements of `dtype` (whole blocks, rounded up), if that fits `usize`. The
/// element count times the *block* size would be the wrong test: a 640 × 262144 Q8_0 embedding
/// (178 MB) would "overflow" a 32-bit address space.
fn byte_bound(bound: usize, dtype: DType) -> Option<usize> {
    bound
        .div_ceil(dtype.block_elems())
        .checked_mul(dtype.block_bytes())
}

fn is_valid_alignment(a: usize) -> bool {
    a.is_power_of_two() && u32::try_from(a).is_ok()
}

/// Items whose in-memory size is several times their minimum size in the file (KV pairs, tensor
/// infos, strings of an array) get at most this much capacity up front and grow only as items
/// are actually read, so a hostile count costs memory in proportion to the bytes behind it.
const GROW_CAP: usize = 1024;

/// A vector for `n` bounds-checked items, reserved up to [`GROW_CAP`].
fn growing_vec<T>(n: usize) -> Result<Vec<T>> {
    try_with_capacity(n.min(GROW_CAP))
}

/// `v.push(x)`, reporting [`Error::AllocationFailed`] instead of aborting when growth fails.
fn try_push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(1)
            .map_err(|_| Error::alloc::<T>(v.capacity().saturating_mul(2)))?;
    }
    v.push(x);
    Ok(())
}

impl GgufFile {
    /// Parses header, metadata and tensor infos from the whole file's bytes (the data section is
    /// only bounds-checked, never copied).
    ///
    /// Every malformed or truncated input is an [`Error::InvalidGguf`] naming the byte offset
    /// where reading failed; [`Error::AllocationFailed`] if the allocator refuses the (already
    /// bounds-checked) metadata arrays.
    pub fn parse(bytes: &[u8]) -> Result<GgufFile> {
        let mut c = Cursor::new(bytes);

        let magic: [u8; 4] = c.array("magic")?;
        if magic != GGUF_MAGIC {
            return Err(invalid(
                0,
                format!("bad magic {magic:#04x?} (expected \"GGUF\" = [0x47, 0x47, 0x55, 0x46]): not a GGUF file"),
            ));
        }
        let version = c.u32("version")?;
        if version != GGUF_VERSION {
            let reason = if version == 1 || version == 2 {
                format!(
                    "GGUF version {version} is not supported; only version 3 is read \
                     (re-convert the model with a current llama.cpp)"
                )
            } else if version & 0xFFFF == 0 {
                format!(
                    "GGUF version {version:#010x} looks byte-swapped: the file is big-endian, \
                     only little-endian GGUF is supported"
                )
            } else {
                format!("GGUF version {version} is not supported; only version 3 is read")
            };
            return Err(invalid(4, reason));
        }

        let tensor_count = c.count("tensor count", MIN_TENSOR_INFO_BYTES)?;
        let kv_count = c.count("metadata count", MIN_KV_BYTES)?;

        // ---- metadata ----
        let mut metadata: Vec<(String, Value)> = growing_vec(kv_count)?;
        let mut keys: HashSet<String> = HashSet::new();
        let mut alignment = DEFAULT_ALIGNMENT;
        for i in 0..kv_count {
            let key_pos = c.position();
            let key = c.string("metadata key")?;
            if key.is_empty() {
                return Err(invalid(key_pos, format!("metadata key #{i} is empty")));
            }
            if keys.contains(&key) {
                return Err(invalid(key_pos, format!("duplicate metadata key {key:?}")));
            }
            let ty_pos = c.position();
            let ty_id = c.i32("metadata value type")?;
            let ty = Ty::from_id(ty_id).ok_or_else(|| {
                invalid(
                    ty_pos,
                    format!(
                        "unknown metadata value type id {ty_id} for key {key:?} (valid: 0..=12)"
                    ),
                )
            })?;
            let value = c.value(ty, &key)?;
            if key == ALIGNMENT_KEY {
                alignment = match value {
                    Value::U32(a) if a.is_power_of_two() => {
                        usize::try_from(a).map_err(|_| invalid(ty_pos, "alignment too large"))?
                    }
                    Value::U32(a) => {
                        return Err(invalid(
                            ty_pos,
                            format!("{ALIGNMENT_KEY} = {a} is not a non-zero power of two"),
                        ))
                    }
                    ref other => {
                        return Err(invalid(
                            ty_pos,
                            format!(
                                "{ALIGNMENT_KEY} must be of type u32, found {}",
                                other.type_name()
                            ),
                        ))
                    }
                };
            }
            keys.insert(key.clone());
            try_push(&mut metadata, (key, value))?;
        }
        drop(keys);

        // ---- tensor infos ----
        // Re-check now that the metadata has been consumed: each info needs 24 bytes at least.
        c.check_count(tensor_count, MIN_TENSOR_INFO_BYTES, "tensor infos")?;
        let mut tensors: Vec<TensorInfo> = growing_vec(tensor_count)?;
        // (relative offset, position of the offset field) per tensor.
        let mut rel_offsets: Vec<(u64, usize)> = growing_vec(tensor_count)?;
        let mut names: HashSet<String> = HashSet::new();
        for _ in 0..tensor_count {
            let name_pos = c.position();
            let name = c.string("tensor name")?;
            if name.len() >= MAX_TENSOR_NAME_BYTES {
                return Err(invalid(
                    name_pos,
                    format!(
                        "tensor name {name:?} is {} bytes; names must be shorter than {MAX_TENSOR_NAME_BYTES}",
                        name.len()
                    ),
                ));
            }
            if names.contains(&name) {
                return Err(invalid(name_pos, format!("duplicate tensor name {name:?}")));
            }
            let nd_pos = c.position();
            let n_dims = c.u32("tensor n_dims")?;
            let n_dims = usize::try_from(n_dims)
                .ok()
                .filter(|&n| n <= MAX_DIMS)
                .ok_or_else(|| {
                    invalid(
                        nd_pos,
                        format!("tensor {name:?} has {n_dims} dimensions; at most {MAX_DIMS} are allowed"),
                    )
                })?;
            let mut dims: Vec<usize> = try_with_capacity(n_dims)?;
            // Product with zero dims counted as 1: it must fit even when the element count is 0,
            // so that no partial product, in any order, overflows (see `dims_bound`).
            let mut bound: usize = 1;
            for d in 0..n_dims {
                let pos = c.position();
                let ne = c.u64("tensor dimension")?;
                if ne > i64::MAX as u64 {
                    return Err(invalid(
                        pos,
                        format!(
                            "dimension {d} of tensor {name:?} is negative ({})",
                            ne as i64
                        ),
                    ));
                }
                let ne = usize::try_from(ne).map_err(|_| {
                    invalid(
                        pos,
                        format!("dimension {d} of tensor {name:?} ({ne}) does not fit in memory"),
                    )
                })?;
                bound = bound.checked_mul(ne.max(1)).ok_or_else(|| {
                    invalid(
                        pos,
                        format!("element count of tensor {name:?} overflows at dimension {d}"),
                    )
                })?;
                dims.push(ne);
            }
            let ty_pos = c.position();
            let ty = c.i32("tensor type")?;
            let dtype = u32::try_from(ty)
                .ok()
                .and_then(DType::from_ggml_type)
                .ok_or_else(|| {
                    invalid(
                        ty_pos,
                        format!("tensor {name:?} has unknown or unsupported ggml type id {ty}"),
                    )
                })?;
            let ne0 = dims.first().copied().unwrap_or(1);
            if ne0 % dtype.block_elems() != 0 {
                return Err(invalid(
                    nd_pos,
                    format!(
                        "tensor {name:?}: ne[0] = {ne0} is not a multiple of the {dtype} block size {}",
                        dtype.block_elems()
                    ),
                ));
            }
            if byte_bound(bound, dtype).is_none() {
                return Err(invalid(
                    nd_pos,
                    format!("tensor {name:?}: byte size of {bound} {dtype} elements overflows"),
                ));
            }
            let numel = if dims.contains(&0) { 0 } else { bound };
            let nbytes = dtype.storage_bytes(numel).map_err(|e| {
                invalid(
                    nd_pos,
                    format!("tensor {name:?}: size of {numel} {dtype} elements: {e}"),
                )
            })?;
            let off_pos = c.position();
            let rel = c.u64("tensor data offset")?;
            // `alignment` fits in u32, so this widening is exact.
            if rel % alignment as u64 != 0 {
                return Err(invalid(
                    off_pos,
                    format!(
                        "tensor {name:?}: data offset {rel} is not a multiple of the alignment {alignment}"
                    ),
                ));
            }
            names.insert(name.clone());
            try_push(&mut rel_offsets, (rel, off_pos))?;
            try_push(
                &mut tensors,
                TensorInfo {
                    name,
                    dims,
                    dtype,
                    offset: 0, // set below, once data_offset is known
                    nbytes,
                },
            )?;
        }
        drop(names);

        // ---- data section ----
        let infos_end = c.position();
        let data_offset = pad_to(infos_end, alignment)
            .ok_or_else(|| invalid(infos_end, "data section offset overflows"))?;
        let file_len = bytes.len();
        for (t, &(rel, off_pos)) in tensors.iter_mut().zip(&rel_offsets) {
            let start = usize::try_from(rel)
                .ok()
                .and_then(|r| data_offset.checked_add(r))
                .ok_or_else(|| {
                    invalid(
                        off_pos,
                        format!("tensor {:?}: data offset {rel} is out of range", t.name),
                    )
                })?;
            let end = start.checked_add(t.nbytes).ok_or_else(|| {
                invalid(
                    off_pos,
                    format!("tensor {:?}: data range overflows", t.name),
                )
            })?;
            if end > file_len {
                return Err(invalid(
                    file_len,
                    format!(
                        "tensor {:?} data [{start}, {end}) extends past the end of the file \
                         ({file_len} bytes): the file is truncated or the offset is wrong",
                        t.name
                    ),
                ));
            }
            t.offset = start;
        }

        Ok(GgufFile {
            version,
            alignment,
            data_offset,
            metadata,
            tensors,
        })
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn require(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| missing(key, "key not present in the GGUF metadata"))
    }

    /// A `u32`; also accepts the other integer types when the value is non-negative and fits.
    pub fn get_u32(&self, key: &str) -> Result<u32> {
        let v = self.require(key)?;
        v.as_u32().ok_or_else(|| match v.as_i64() {
            Some(i) => missing(
                key,
                format!("value {i} ({}) does not fit in u32", v.type_name()),
            ),
            None => missing(key, format!("expected u32, found {}", v.type_name())),
        })
    }

    /// An `f32` (an `F64` value is narrowed).
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        let v = self.require(key)?;
        v.as_f32()
            .ok_or_else(|| missing(key, format!("expected f32, found {}", v.type_name())))
    }

    pub fn get_bool(&self, key: &str) -> Result<bool> {
        let v = self.require(key)?;
        v.as_bool()
            .ok_or_else(|| missing(key, format!("expected bool, found {}", v.type_name())))
    }

    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.require(key)?;
        v.as_str()
            .ok_or_else(|| missing(key, format!("expected string, found {}", v.type_name())))
    }

    pub fn get_str_array(&self, key: &str) -> Result<&StrArray> {
        match self.require(key)? {
            Value::Array(Array::String(v)) => Ok(v),
            v => Err(missing(
                key,
                format!("expected array<string>, found {}", v.type_name()),
            )),
        }
    }

    pub fn get_f32_array(&self, key: &str) -> Result<&[f32]> {
        match self.require(key)? {
            Value::Array(Array::F32(v)) => Ok(v),
            v => Err(missing(
                key,
                format!("expected array<f32>, found {}", v.type_name()),
            )),
        }
    }

    pub fn get_i32_array(&self, key: &str) -> Result<&[i32]> {
        match self.require(key)? {
            Value::Array(Array::I32(v)) => Ok(v),
            v => Err(missing(
                key,
                format!("expected array<i32>, found {}", v.type_name()),
            )),
        }
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<&str> {
        self.get_str("general.architecture")
    }

    /// The tensor info named `name`, if present.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The bytes of one tensor inside `file` (the same bytes given to `parse`).
    pub fn tensor_bytes<'a>(&self, file: &'a [u8], info: &TensorInfo) -> Result<&'a [u8]> {
        info.offset
            .checked_add(info.nbytes)
            .and_then(|end| file.get(info.offset..end))
            .ok_or_else(|| {
                invalid(
                    info.offset.min(file.len()),
                    format!(
                        "tensor {:?} data [{}, +{}) is outside the {}-byte buffer",
                        info.name,
                        info.offset,
                        info.nbytes,
                        file.len()
                    ),
                )
            })
    }
}

// ---------------------------------------------------------------------------------------------
// The cursor
// ---------------------------------------------------------------------------------------------

/// A bounds-checked little-endian reader over a byte slice. Every failed read is an
/// [`Error::InvalidGguf`] at the position where the read started.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    fn position(&self) -> usize {
        self.pos
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or_else(|| {
                invalid(
                    self.pos,
                    format!(
                        "unexpected end of file reading {what}: need {n} bytes, {} remain",
                        self.remaining()
                    ),
                )
            })?;
        self.pos += n; // cannot overflow: pos + n <= bytes.len()
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let pos = self.pos;
        let s = self.take(N, what)?;
        s.try_into()
            .map_err(|_| invalid(pos, format!("internal: short read of {what}")))
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        self.array::<1>(what).map(|[b]| b)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        self.array(what).map(i32::from_le_bytes)
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// Fails unless `count` items of at least `min_bytes` each fit in the bytes that remain.
    fn check_count(&self, count: usize, min_bytes: u64, what: &str) -> Result<()> {
        self.check_count_at(self.pos, count as u64, min_bytes, what)
    }

    fn check_count_at(&self, pos: usize, count: u64, min_bytes: u64, what: &str) -> Result<()> {
        let remaining = self.remaining() as u64;
        match count.checked_mul(min_bytes) {
            Some(need) if need <= remaining => Ok(()),
            need => Err(invalid(
                pos,
                format!(
                    "{what}: {count} items need at least {} bytes but only {remaining} remain",
                    need.map_or_else(|| "2^64 or more".to_string(), |n| n.to_string())
                ),
            )),
        }
    }

    /// A u64 count (tensor or KV count, array length) whose items take at least `min_bytes`
    /// each; rejected unless that many bytes remain, so it always fits in `usize`.
    fn count(&mut self, what: &str, min_bytes: u64) -> Result<usize> {
        let pos = self.pos;
        let n = self.u64(what)?;
        if n > i64::MAX as u64 {
            return Err(invalid(pos, format!("{what} {} is negative", n as i64)));
        }
        self.check_count_at(pos, n, min_bytes.max(1), what)?;
        usize::try_from(n).map_err(|_| invalid(pos, format!("{what} {n} is too large")))
    }

    /// Text bytes of the `n` length-prefixed strings ahead, read without moving: at most the
    /// bytes that remain. Stops at the first string that runs past the end, which the real
    /// read then reports.
    fn strings_len(&self, n: usize) -> usize {
        let (mut at, mut total) = (self.pos, 0usize);
        for _ in 0..n {
            let Some(len) = at.checked_add(8).and_then(|end| self.bytes.get(at..end)) else {
                break;
            };
            let len = u64::from_le_bytes(len.try_into().unwrap_or_default());
            match usize::try_from(len)
                .ok()
                .and_then(|l| l.checked_add(at + 8))
            {
                Some(end) if end <= self.bytes.len() => (at, total) = (end, total + (end - at - 8)),
                _ => break,
            }
        }
        total
    }

    /// A length-prefixed UTF-8 string, borrowed from the file.
    fn str(&mut self, what: &str) -> Result<&'a str> {
        let pos = self.pos;
        let len = self.u64(what)?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.remaining())
            .ok_or_else(|| {
                invalid(
                    pos,
                    format!(
                        "{what}: string length {len} exceeds the {} bytes that remain",
                        self.remaining()
                    ),
                )
            })?;
        let data_pos = self.pos;
        let raw = self.take(len, what)?;
        std::str::from_utf8(raw).map_err(|e| {
            invalid(
                data_pos + e.valid_up_to(),
                format!(
                    "{what}: invalid UTF-8 at byte {} of the string",
                    e.valid_up_to()
                ),
            )
        })
    }

    /// A length-prefixed UTF-8 string, copied.
    fn string(&mut self, what: &str) -> Result<String> {
        let s = self.str(what)?;
        let mut out = String::new();
        out.try_reserve_exact(s.len())
            .map_err(|_| Error::alloc::<u8>(s.len()))?;
        out.push_str(s);
        Ok(out)
    }

    /// `n` fixed-size little-endian elements, converted with `conv`.
    fn fixed<T, const N: usize>(&mut self, n: usize, conv: fn([u8; N]) -> T) -> Result<Vec<T>> {
        let pos = self.pos;
        let total = n
            .checked_mul(N)
            .ok_or_else(|| invalid(pos, "array byte size overflows"))?;
        let raw = self.take(total, "array elements")?;
        let mut out = try_with_capacity(n)?;
        for chunk in raw.chunks_exact(N) {
            let a: [u8; N] = chunk
                .try_into()
                .map_err(|_| invalid(pos, "internal: short array element"))?;
            out.push(conv(a));
        }
        Ok(out)
    }

    fn bool(&mut self, key: &str) -> Result<bool> {
        let pos = self.pos;
        match self.u8("bool")? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(invalid(
                pos,
                format!("value of {key:?}: bool byte {b} is neither 0 nor 1"),
            )),
        }
    }

    /// A value of type `ty` (already read) for metadata key `key`.
    fn value(&mut self, ty: Ty, key: &str) -> Result<Value> {
        Ok(match ty {
            Ty::U8 => Value::U8(self.u8("u8 value")?),
            Ty::I8 => Value::I8(self.array("i8 value").map(i8::from_le_bytes)?),
            Ty::U16 => Value::U16(self.array("u16 value").map(u16::from_le_bytes)?),
            Ty::I16 => Value::I16(self.array("i16 value").map(i16::from_le_bytes)?),
            Ty::U32 => Value::U32(self.u32("u32 value")?),
            Ty::I32 => Value::I32(self.i32("i32 value")?),
            Ty::F32 => Value::F32(self.array("f32 value").map(f32::from_le_bytes)?),
            Ty::Bool => Value::Bool(self.bool(key)?),
            Ty::String => Value::String(self.string("string value")?),
            Ty::U64 => Value::U64(self.u64("u64 value")?),
            Ty::I64 => Value::I64(self.array("i64 value").map(i64::from_le_bytes)?),
            Ty::F64 => Value::F64(self.array("f64 value").map(f64::from_le_bytes)?),
            Ty::Array => Value::Array(self.array_value(key)?),
        })
    }

    fn array_value(&mut self, key: &str) -> Result<Array> {
        let ty_pos = self.pos;
        let id = self.i32("array element type")?;
        let ty = Ty::from_id(id).ok_or_else(|| {
            invalid(
                ty_pos,
                format!("unknown array element type id {id} for key {key:?} (valid: 0..=12)"),
            )
        })?;
        if ty == Ty::Array {
            return Err(invalid(
                ty_pos,
                format!("nested arrays are not supported (key {key:?})"),
            ));
        }
        let n = self.count("array length", ty.min_bytes())?;
        Ok(match ty {
            Ty::U8 => Array::U8(self.fixed(n, u8::from_le_bytes)?),
            Ty::I8 => Array::I8(self.fixed(n, i8::from_le_bytes)?),
            Ty::U16 => Array::U16(self.fixed(n, u16::from_le_bytes)?),
            Ty::I16 => Array::I16(self.fixed(n, i16::from_le_bytes)?),
            Ty::U32 => Array::U32(self.fixed(n, u32::from_le_bytes)?),
            Ty::I32 => Array::I32(self.fixed(n, i32::from_le_bytes)?),
            Ty::F32 => Array::F32(self.fixed(n, f32::from_le_bytes)?),
            Ty::U64 => Array::U64(self.fixed(n, u64::from_le_bytes)?),
            Ty::I64 => Array::I64(self.fixed(n, i64::from_le_bytes)?),
            Ty::F64 => Array::F64(self.fixed(n, f64::from_le_bytes)?),
            Ty::Bool => {
                let mut v = try_with_capacity(n)?;
                for _ in 0..n {
                    v.push(self.bool(key)?);
                }
                Array::Bool(v)
            }
            Ty::String => {
                // Both sized exactly up front: growing by doubling would copy the arena (a
                // vocabulary's ~3 MB) several times, and in wasm every copy stays resident. The
                // count was checked against the bytes left, eight (a length) per string, so this
                // is still memory in proportion to the bytes behind it.
                let text = self.strings_len(n);
                let mut v = StrArray {
                    bytes: String::new(),
                    ends: try_with_capacity(n)?,
                };
                v.bytes
                    .try_reserve_exact(text)
                    .map_err(|_| Error::AllocationFailed { bytes: text as u64 })?;
                for _ in 0..n {
                    // Straight from the file into the arena: no String per element.
                    let item = self.str("array string")?;
                    v.push(item)?;
                }
                Array::String(v)
            }
            Ty::Array => {
                return Err(invalid(ty_pos, "nested arrays are not supported"));
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------------------------

struct PendingTensor {
    name: String,
    dtype: DType,
    /// ggml order (innermost first).
    ne: Vec<usize>,
    data: Vec<u8>,
}

/// Writes a GGUF v3 file: metadata in the given order, tensors in order, each tensor's data
/// padded to `alignment`, header/info section padded to `alignment` before the data.
///
/// When `alignment` is not [`DEFAULT_ALIGNMENT`] and no `general.alignment` key was added, the
/// writer appends `general.alignment = U32(alignment)` after the caller's metadata so that
/// readers find the data. A caller-supplied `general.alignment` must equal `alignment`.
pub struct GgufWriter {
    alignment: usize,
    metadata: Vec<(String, Value)>,
    tensors: Vec<PendingTensor>,
}

fn write_err(reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "gguf write",
        reason: reason.into(),
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_usize(out: &mut Vec<u8>, v: usize) -> Result<()> {
    let v = u64::try_from(v).map_err(|_| write_err("size does not fit in u64"))?;
    put_u64(out, v);
    Ok(())
}
fn put_str(out: &mut Vec<u8>, s: &str) -> Result<()> {
    put_usize(out, s.len())?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_value(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => put_u32(out, *x),
        Value::I32(x) => put_i32(out, *x),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_str(out, s)?,
        Value::U64(x) => put_u64(out, *x),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Array(a) => {
            put_i32(out, a.elem_ty().id());
            put_usize(out, a.len())?;
            match a {
                Array::U8(v) => out.extend_from_slice(v),
                Array::I8(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::U16(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::I16(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::U32(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::I32(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::F32(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::Bool(v) => v.iter().for_each(|&x| out.push(u8::from(x))),
                Array::String(v) => {
                    for s in v.iter() {
                        put_str(out, s)?;
                    }
                }
                Array::U64(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::I64(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                Array::F64(v) => v
                    .iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            }
        }
    }
    Ok(())
}

impl GgufWriter {
    /// A writer with the given data alignment (checked when writing: a non-zero power of two
    /// that fits in u32).
    pub fn new(alignment: usize) -> Self {
        GgufWriter {
            alignment,
            metadata: Vec::new(),
            tensors: Vec::new(),
        }
    }

    /// Appends a metadata entry (keys are checked for emptiness and uniqueness when writing).
    pub fn add_metadata(&mut self, key: impl Into<String>, value: Value) {
        self.metadata.push((key.into(), value));
    }

    /// `shape` is row-major (outermost first), like Tensor; stored reversed as ggml ne.
    ///
    /// `data` must be exactly the tensor's storage (`dtype.storage_bytes(numel)` bytes, raw ggml
    /// blocks for quantized types).
    pub fn add_tensor(
        &mut self,
        name: impl Into<String>,
        dtype: DType,
        shape: &[usize],
        data: Vec<u8>,
    ) -> Result<()> {
        let name = name.into();
        let arg = |reason: String| Error::InvalidArgument {
            op: "gguf add_tensor",
            reason,
        };
        if name.len() >= MAX_TENSOR_NAME_BYTES {
            return Err(arg(format!(
                "tensor name {name:?} is {} bytes; names must be shorter than {MAX_TENSOR_NAME_BYTES}",
                name.len()
            )));
        }
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(arg(format!("duplicate tensor name {name:?}")));
        }
        if shape.len() > MAX_DIMS {
            return Err(arg(format!(
                "tensor {name:?} has rank {}; GGUF allows at most {MAX_DIMS}",
                shape.len()
            )));
        }
        if shape
            .iter()
            .any(|&d| u64::try_from(d).map_or(true, |d| d > i64::MAX as u64))
        {
            return Err(arg(format!(
                "tensor {name:?}: a dimension exceeds i64::MAX"
            )));
        }
        let shape_ = Shape::new(shape.to_vec());
        let numel =
            dims_numel(shape, dtype).ok_or_else(|| Error::overflow("gguf tensor size", shape))?;
        let last = shape.last().copied().unwrap_or(1);
        if last % dtype.block_elems() != 0 {
            return Err(Error::PartialQuantizedBlock {
                dtype,
                dim: last,
                block_elems: dtype.block_elems(),
            });
        }
        let nbytes = dtype.storage_bytes(numel)?;
        if data.len() != nbytes {
            return Err(Error::LengthMismatch {
                shape: shape_,
                expected: nbytes,
                actual: data.len(),
            });
        }
        self.tensors.push(PendingTensor {
            name,
            dtype,
            ne: shape.iter().rev().copied().collect(),
            data,
        });
        Ok(())
    }

    /// Header, metadata, tensor infos and the padding up to the data section.
    fn header(&self) -> Result<Vec<u8>> {
        let align = self.alignment;
        if !is_valid_alignment(align) {
            return Err(write_err(format!(
                "alignment {align} is not a non-zero power of two that fits in u32"
            )));
        }
        let mut keys: HashSet<&str> = HashSet::new();
        let mut has_alignment_key = false;
        for (k, v) in &self.metadata {
            if k.is_empty() {
                return Err(write_err("empty metadata key"));
            }
            if !keys.insert(k.as_str()) {
                return Err(write_err(format!("duplicate metadata key {k:?}")));
            }
            if k == ALIGNMENT_KEY {
                has_alignment_key = true;
                match v {
                    Value::U32(a) if usize::try_from(*a).ok() == Some(align) => {}
                    _ => {
                        return Err(write_err(format!(
                            "{ALIGNMENT_KEY} = {v:?} disagrees with the writer's alignment {align} \
                             (it must be U32({align}))"
                        )))
                    }
                }
            }
        }
        let extra = if !has_alignment_key && align != DEFAULT_ALIGNMENT {
            let a = u32::try_from(align).map_err(|_| write_err("alignment too large"))?;
            Some((ALIGNMENT_KEY.to_string(), Value::U32(a)))
        } else {
            None
        };

        let mut out = Vec::new();
        out.extend_from_slice(&GGUF_MAGIC);
        put_u32(&mut out, GGUF_VERSION);
        put_usize(&mut out, self.tensors.len())?;
        put_usize(&mut out, self.metadata.len() + usize::from(extra.is_some()))?;
        for (k, v) in self.metadata.iter().chain(extra.iter()) {
            put_str(&mut out, k)?;
            put_i32(&mut out, v.ty().id());
            put_value(&mut out, v)?;
        }
        let mut offset = 0usize;
        for t in &self.tensors {
            put_str(&mut out, &t.name)?;
            let n_dims = u32::try_from(t.ne.len()).map_err(|_| write_err("too many dims"))?;
            put_u32(&mut out, n_dims);
            for &d in &t.ne {
                put_usize(&mut out, d)?;
            }
            let ty = i32::try_from(t.dtype.ggml_type()).map_err(|_| write_err("bad type id"))?;
            put_i32(&mut out, ty);
            put_usize(&mut out, offset)?;
            offset = pad_to(t.data.len(), align)
                .and_then(|p| offset.checked_add(p))
                .ok_or_else(|| Error::overflow("gguf data section", &[offset, t.data.len()]))?;
        }
        let data_offset =
            pad_to(out.len(), align).ok_or_else(|| Error::overflow("gguf header", &[out.len()]))?;
        out.resize(data_offset, 0);
        Ok(out)
    }

    /// The whole file in memory.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let header = self.header()?;
        let total = self
            .tensors
            .iter()
            .try_fold(header.len(), |acc, t| {
                pad_to(t.data.len(), self.alignment).and_then(|p| acc.checked_add(p))
            })
            .ok_or_else(|| Error::overflow("gguf file", &[header.len()]))?;
        let mut out = Vec::new();
        out.try_reserve_exact(total)
            .map_err(|_| Error::alloc::<u8>(total))?;
        out.extend_from_slice(&header);
        for t in &self.tensors {
            out.extend_from_slice(&t.data);
            let padded = pad_to(out.len(), self.alignment)
                .ok_or_else(|| Error::overflow("gguf file", &[out.len()]))?;
            out.resize(padded, 0);
        }
        Ok(out)
    }

    /// Streams the file to `w` (the header is built in memory, tensor data is written from the
    /// caller's buffers). Wrap `w` in a `BufWriter` for files.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> Result<()> {
        let io = |e: std::io::Error| write_err(e.to_string());
        let header = self.header()?;
        w.write_all(&header).map_err(io)?;
        const ZEROS: [u8; 256] = [0; 256];
        for t in &self.tensors {
            w.write_all(&t.data).map_err(io)?;
            let mut pad = pad_to(t.data.len(), self.alignment)
                .ok_or_else(|| Error::overflow("gguf file", &[t.data.len()]))?
                - t.data.len();
            while pad > 0 {
                let n = pad.min(ZEROS.len());
                w.write_all(ZEROS.get(..n).unwrap_or(&[])).map_err(io)?;
                pad -= n;
            }
        }
        w.flush().map_err(io)
    }
}
