//! The crate's one error type.
//!
//! Every public function returns [`Result`]; no public function panics on bad input, because in
//! wasm a panic kills the whole instance. Each variant carries what the caller needs to fix the
//! call, and [`Error::code`] gives a stable name that the JavaScript layer exposes as `err.code`.

use crate::{DType, Shape};

/// Everything that can go wrong in kopitiam-wasm.
#[derive(Debug, Clone, PartialEq, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that must agree do not (reshape sizes, matmul inner dimensions, op ranks,
    /// kernel parameters). `expected` and `actual` are human-readable descriptions because some
    /// requirements ("rank >= 2", "stride > 0") are not themselves shapes.
    #[error("{op}: shape mismatch: expected {expected}, got {actual}")]
    ShapeMismatch {
        op: &'static str,
        expected: String,
        actual: String,
    },

    /// NumPy right-aligned broadcasting failed.
    #[error("shapes {lhs} and {rhs} are not broadcastable")]
    NotBroadcastable { lhs: Shape, rhs: Shape },

    /// The operand has the wrong dtype for this op (e.g. a math op on i32 data).
    #[error("{op}: expected dtype {expected}, got {actual}")]
    DTypeMismatch {
        op: &'static str,
        expected: DType,
        actual: DType,
    },

    /// The op has no implementation for this dtype (e.g. converting f32 to a quantized format).
    #[error("{op}: dtype {dtype} is not supported")]
    UnsupportedDType { op: &'static str, dtype: DType },

    /// Block-quantized data cannot be addressed per element: dequantize with
    /// `to_dtype(DType::F32)` first.
    #[error(
        "{op}: {dtype} is block-quantized and has no per-element access; call to_dtype(F32) first"
    )]
    QuantizedElementAccess { op: &'static str, dtype: DType },

    /// A quantized tensor's last dimension must hold whole blocks.
    #[error("{dtype} needs the last dimension to be a multiple of {block_elems}, got {dim}")]
    PartialQuantizedBlock {
        dtype: DType,
        dim: usize,
        block_elems: usize,
    },

    /// The buffer holds fewer bytes or elements than the shape needs.
    #[error("storage too small for {dtype} {shape}: need {needed}, have {available}")]
    StorageTooSmall {
        dtype: DType,
        shape: Shape,
        needed: usize,
        available: usize,
    },

    /// The buffer holds more elements or bytes than the shape describes.
    #[error("data length {actual} does not match shape {shape} ({expected} needed)")]
    LengthMismatch {
        shape: Shape,
        expected: usize,
        actual: usize,
    },

    /// An axis argument is not smaller than the tensor's rank.
    #[error("{op}: axis {axis} out of range for rank {rank}")]
    AxisOutOfRange {
        op: &'static str,
        axis: usize,
        rank: usize,
    },

    /// `narrow` asked for a range outside the dimension.
    #[error(
        "narrow: range {start}..{start}+{len} out of bounds for dimension {dim} of size {size}"
    )]
    NarrowOutOfRange {
        dim: usize,
        start: usize,
        len: usize,
        size: usize,
    },

    /// An index (e.g. a token id for `gather_rows`) is outside `[0, size)`.
    #[error("{op}: index {index} out of range for size {size}")]
    IndexOutOfRange {
        op: &'static str,
        index: i64,
        size: usize,
    },

    /// A size computation does not fit `usize` (4 GiB on wasm32). `size` is the real figure,
    /// computed in f64 so that it can be reported even though it cannot be represented.
    #[error("{what}: {size} does not fit the address space")]
    SizeOverflow { what: &'static str, size: f64 },

    /// The allocator refused a buffer (in wasm: the 4 GiB memory limit or the browser's cap).
    /// `u64`, so a request above 4 GiB reports its real size.
    #[error("could not allocate {bytes} bytes")]
    AllocationFailed { bytes: u64 },

    /// An argument that is neither a shape nor a dtype is invalid (e.g. an empty `concat` list).
    #[error("{op}: {reason}")]
    InvalidArgument { op: &'static str, reason: String },

    /// A GGUF file is malformed or truncated; `offset` is the byte where reading failed.
    #[error("invalid GGUF at byte {offset}: {reason}")]
    InvalidGguf { offset: u64, reason: String },

    /// A Tesseract `.traineddata` file is malformed, truncated or of a kind this crate cannot
    /// run; `offset` is the file byte where reading failed.
    #[error("invalid traineddata at byte {offset}: {reason}")]
    InvalidTraineddata { offset: u64, reason: String },

    /// An image given to the OCR is empty, inconsistent with its stated size, or undecodable.
    #[error("invalid image: {reason}")]
    InvalidImage { reason: String },

    /// A metadata key or tensor the model needs is missing or has the wrong type.
    #[error("missing or mistyped GGUF entry {key:?}: {reason}")]
    MissingMetadata { key: String, reason: String },

    /// The file is a valid GGUF but describes a model this crate cannot run.
    #[error("unsupported model: {reason}")]
    UnsupportedModel { reason: String },

    /// The sequence would exceed the context length the KV cache was sized for.
    #[error("context full: {needed} tokens needed, the context holds {capacity}")]
    ContextFull { needed: usize, capacity: usize },

    /// Bytes given as a saved session are not one, or were damaged.
    #[error("invalid saved session: {reason}")]
    InvalidSession { reason: String },

    /// A saved session belongs to another model file, or does not fit this context.
    #[error("saved session does not fit: {reason}")]
    SessionMismatch { reason: String },
}

impl Error {
    /// Stable machine-readable name of the variant; JavaScript sees it as `err.code`.
    pub fn code(&self) -> &'static str {
        self.into()
    }

    /// Every code [`Error::code`] can return, in declaration order (the README and the
    /// TypeScript union are checked against this list).
    pub const CODES: &'static [&'static str] = <Error as strum::VariantNames>::VARIANTS;

    /// [`Error::SizeOverflow`] for a product of `factors` that does not fit `usize`.
    pub(crate) fn overflow(what: &'static str, factors: &[usize]) -> Self {
        Error::SizeOverflow {
            what,
            size: factors.iter().map(|&f| f as f64).product(),
        }
    }

    /// [`Error::AllocationFailed`] for `n` elements of `T`, with the byte count in `u64`.
    pub(crate) fn alloc<T>(n: usize) -> Self {
        Error::AllocationFailed {
            bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        }
    }

    /// Shorthand for the common `ShapeMismatch` built from two displayable descriptions.
    pub(crate) fn shape(
        op: &'static str,
        expected: impl std::fmt::Display,
        actual: impl std::fmt::Display,
    ) -> Self {
        Error::ShapeMismatch {
            op,
            expected: expected.to_string(),
            actual: actual.to_string(),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
