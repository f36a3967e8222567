//! Fused quantized matmul: activations quantized once per row (to Q8_0, or Q8_K for the K
//! formats), integer block dots, scales applied per block. The weight bytes are read in place,
//! never expanded to f32.

use super::act::Q8Act;
use super::traits::{quant_type, FusedDot};
use super::{kernels, legacy};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::checked_product;
use crate::storage::{try_grow, try_vec};
use crate::{parallel, Shape, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};

impl Tensor {
    /// `self @ weight^T` for a block-quantized `weight`, computed without dequantizing it.
    ///
    /// `self` is f32 `[..., in]`, `weight` is a quantized `[out, in]` with a fused kernel in the
    /// type-traits table (Q4_0, Q8_0, …); the result is `[..., out]`. Each activation row is
    /// quantized once (to Q8_0, or Q8_K for K formats), then every output element is a sum of
    /// per-block integer dot products with the block scales applied.
    ///
    /// Errors: [`Error::DTypeMismatch`] when `self` is not f32, [`Error::UnsupportedDType`] when
    /// `weight` has no fused kernel (plain dtypes, Q4_1, Q5_1), [`Error::ShapeMismatch`] for
    /// ranks, a different `in`, or an `in` that is not a whole number of activation blocks.
    pub fn quantized_matmul(&self, weight: &Tensor) -> Result<Tensor> {
        let fused = fused_kernel(weight.dtype())?;
        if self.dtype() != DType::F32 {
            return Err(Error::DTypeMismatch {
                op: OP,
                expected: DType::F32,
                actual: self.dtype(),
            });
        }
        if weight.rank() != 2 || self.rank() < 1 {
            return Err(Error::shape(
                OP,
                "self [..., in] and weight [out, in]",
                format!("self {} and weight {}", self.shape(), weight.shape()),
            ));
        }
        let (n_out, n_in) = (weight.dims()[0], weight.dims()[1]);
        let k = *self.dims().last().unwrap_or(&0);
        let block = fused.act.block_elems();
        if k != n_in || n_in % block != 0 {
            return Err(Error::shape(
                OP,
                format!("last dim {n_in} (a multiple of {block})"),
                format!("self {} and weight {}", self.shape(), weight.shape()),
            ));
        }
        // The output shape is checked before anything is allocated (`rows · out` wraps on wasm32
        // for `[65536, 32] @ [65536, 32]ᵀ`), and it comes from the dims, not from
        // `elem_count / in`, which is 0 rows for every `in = 0` input.
        let mut dims = self.dims().to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n_out;
        let shape = Shape::from(dims);
        let mut out = try_vec(shape.checked_elem_count()?, 0.0f32)?;
        let x = self.to_vec_f32()?;
        // With `in = 0` every dot is an empty sum: the zeros are the answer.
        if n_in > 0 {
            matmul_into(&x, weight, &mut MatmulScratch::default(), &mut out)?;
        }
        Ok(Tensor::new_f32(out, shape))
    }
}

/// Reusable buffers of [`matmul_into`], so a decode loop allocates nothing per token.
#[derive(Default, Debug)]
pub struct MatmulScratch {
    /// Prepared Q8_0 activations (Q4_0, Q8_0 and Q5_0 weights).
    act: Q8Act,
    /// Q8_K activation rows (the K formats).
    xq: Vec<u8>,
    /// Per-chunk `[rows, chunk]` blocks of a multi-row matmul before they are copied into place.
    /// One buffer a thread instead (a `thread_slot` each, behind a lock, reused by its chunks)
    /// gained ~3 % on one thread's steady prompts but ran two-thread prefill at 528 against 607
    /// tok/s in Chromium (medians of twenty prompts); unreused, 554: the slot-and-lock path cost.
    blocks: Vec<f32>,
}

/// `out[r, o] = Σ x[r, :] · weight[o, :]` for a quantized `weight` `[out, in]` and contiguous f32
/// rows `x` (`rows × in`), writing into `out` (`rows × out`).
///
/// Work is split over threads by ranges of weight rows, so every weight byte is read by one
/// thread once per call (prefill and decode alike); each output element is one dot in the fixed
/// canonical order, so the bytes never depend on the split or the number of threads.
pub fn matmul_into(
    x: &[f32],
    weight: &Tensor,
    scratch: &mut MatmulScratch,
    out: &mut [f32],
) -> Result<()> {
    matmul_weights(x, &[QWeight::try_from(weight)?], scratch, &mut [out])
}

/// [`matmul_into`] for several weights that read the same `x` (an attention block's Q, K and V;
/// a feed-forward's gate and up): when they pair with one activation format and share a width,
/// the activations are prepared once and all the matrices' rows are one parallel job, so a
/// decode step starts fewer jobs. Otherwise they go one at a time. The bits are those of
/// separate calls.
pub fn matmul_many(
    x: &[f32],
    weights: &[&Tensor],
    scratch: &mut MatmulScratch,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    if weights.len() != outs.len() {
        return Err(Error::shape(OP, weights.len(), outs.len()));
    }
    let mut ws = [QWeight::default(); MAX_MANY];
    if weights.len() > MAX_MANY {
        for (w, out) in weights.iter().zip(outs.iter_mut()) {
            matmul_into(x, w, scratch, out)?;
        }
        return Ok(());
    }
    for (q, w) in ws.iter_mut().zip(weights) {
        *q = QWeight::try_from(*w)?;
    }
    matmul_weights(x, &ws[..weights.len()], scratch, outs)
}

/// A quantized weight matrix `[rows, cols]` as the matmul reads it: a tensor's bytes, or a
/// model's matrix of a ×4 format interleaved at load (`interleaved`, see `interleave.rs`).
#[derive(Clone, Copy, Debug)]
pub struct QWeight<'a> {
    pub dtype: DType,
    pub bytes: &'a [u8],
    pub rows: usize,
    pub cols: usize,
    pub interleaved: bool,
}

impl Default for QWeight<'_> {
    fn default() -> Self {
        QWeight {
            dtype: DType::Q4_0,
            bytes: &[],
            rows: 0,
            cols: 0,
            interleaved: false,
        }
    }
}

impl<'a> TryFrom<&'a Tensor> for QWeight<'a> {
    type Error = Error;

    fn try_from(t: &'a Tensor) -> Result<QWeight<'a>> {
        fused_kernel(t.dtype())?;
        let [rows, cols] = *t.dims() else {
            return Err(Error::shape(OP, "weight [out, in]", t.shape()));
        };
        Ok(QWeight {
            dtype: t.dtype(),
            bytes: t.quantized_bytes()?,
            rows,
            cols,
            interleaved: false,
        })
    }
}

impl QWeight<'_> {
    /// Bytes per row, once the bytes are checked to be exactly `rows` of them (the kernels read
    /// through raw pointers) and an interleaved matrix to be whole groups of a ×4 format.
    fn row_bytes(&self) -> Result<usize> {
        let w_row = self.dtype.storage_bytes(self.cols)?;
        let groups_ok = !self.interleaved
            || (super::interleave::supports(self.dtype)
                && self.rows % super::interleave::GROUP == 0);
        if self.rows.checked_mul(w_row) != Some(self.bytes.len()) || !groups_ok {
            return Err(Error::shape(
                OP,
                format!("{} rows of {w_row} bytes", self.rows),
                format!(
                    "{} bytes (interleaved: {})",
                    self.bytes.len(),
                    self.interleaved
                ),
            ));
        }
        Ok(w_row)
    }
}

/// [`matmul_many`] over [`QWeight`]s: the Tensor API's matrices and a model's interleaved ones.
pub fn matmul_weights(
    x: &[f32],
    weights: &[QWeight],
    scratch: &mut MatmulScratch,
    outs: &mut [&mut [f32]],
) -> Result<()> {
    matmul_with(x, weights, scratch, outs, None)
}

/// [`matmul_weights`] of one matrix, which also returns the index of the first largest output
/// (NaN skipped, as `ops::kernels::argmax`; `None` when all are NaN): a decode step's LM head
/// and greedy pick. For one activation row each task finds its own outputs' while they are in
/// its core's cache; reading Gemma 3's 262,144 logits back after the matmul took 0.11–0.19 ms a
/// token (section profile), on two threads while the other thread waited.
pub fn matmul_argmax(
    x: &[f32],
    weight: QWeight,
    scratch: &mut MatmulScratch,
    out: &mut [f32],
) -> Result<Option<usize>> {
    let top = FirstMax::default();
    let row = weight.cols > 0
        && x.len() == weight.cols
        && out.len() == weight.rows
        && out.len() <= u32::MAX as usize;
    matmul_with(x, &[weight], scratch, &mut [&mut *out], row.then_some(&top))?;
    Ok(if row {
        top.index()
    } else {
        crate::ops::kernels::argmax(out)
    })
}

/// The first largest of values that tasks offer in any order, by index: one `fetch_max` over
/// `(value in an order-preserving key, !index)`, so an equal value at a lower index wins.
#[derive(Default)]
struct FirstMax(AtomicU64);

impl FirstMax {
    /// Offers the first largest of `values`, which are outputs `start..` (NaN skipped).
    fn offer(&self, start: usize, values: &[f32]) {
        if let Some(j) = crate::ops::kernels::argmax(values) {
            self.0
                .fetch_max(Self::key(values[j], start + j), Ordering::Relaxed);
        }
    }

    /// Above 0 for every non-NaN value: `−∞`'s key is `0x007f_ffff`; −0 counts as +0.
    fn key(v: f32, index: usize) -> u64 {
        let bits = if v == 0.0 { 0 } else { v.to_bits() };
        let ordered = if bits >> 31 == 1 {
            !bits
        } else {
            bits | 1 << 31
        };
        (u64::from(ordered) << 32) | u64::from(!(index as u32))
    }

    fn index(&self) -> Option<usize> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            k => Some(!(k as u32) as usize),
        }
    }
}

/// Task rows of a matmul that also finds its first maximum: cache-sized runs of outputs even on
/// one thread, where the matrix is otherwise one task.
const ARGMAX_TASK_ROWS: usize = 8192;

fn matmul_with(
    x: &[f32],
    weights: &[QWeight],
    scratch: &mut MatmulScratch,
    outs: &mut [&mut [f32]],
    top: Option<&FirstMax>,
) -> Result<()> {
    if weights.len() != outs.len() {
        return Err(Error::shape(OP, weights.len(), outs.len()));
    }
    let plan = plan(weights)?;
    for (w, out) in weights.iter().zip(outs.iter()) {
        matmul_dims(x, w.rows, w.cols, fused_kernel(w.dtype)?, out.len())?;
    }
    let Some((fused, n_in, ws)) = plan else {
        for (w, out) in weights.iter().zip(outs.iter_mut()) {
            matmul_weights(x, &[*w], scratch, &mut [&mut **out])?;
        }
        return Ok(());
    };
    // No rows, or `in = 0` (every dot an empty sum: the caller's zeros are the answer).
    if n_in == 0 || x.is_empty() {
        return Ok(());
    }
    let MatmulScratch {
        act: q8,
        xq,
        blocks,
    } = scratch;
    let jobs = &ws[..weights.len()];
    let acts = prepare_acts(x, n_in, fused, reads_wide(jobs), q8, xq)?;
    run_jobs(jobs, &acts, blocks, outs, top)
}

/// `weights` as the jobs of one parallel loop, with the activation format's kernel and the
/// width they share; `None` when they do not pair with one format and width (or are more than
/// [`MAX_MANY`]), and so go one at a time.
fn plan<'w>(weights: &[QWeight<'w>]) -> Result<Option<(FusedDot, usize, [Job<'w>; MAX_MANY])>> {
    let mut shared: Option<(FusedDot, usize)> = None;
    let mut together = weights.len() <= MAX_MANY;
    let mut ws = [Job::default(); MAX_MANY];
    for (i, w) in weights.iter().enumerate() {
        let fused = fused_kernel(w.dtype)?;
        together &= shared.is_none_or(|(f, n)| (f.act, n) == (fused.act, w.cols));
        shared = Some((fused, w.cols));
        if let Some(job) = ws.get_mut(i) {
            *job = Job {
                bytes: w.bytes,
                rows: w.rows,
                w_row: w.row_bytes()?,
                dtype: w.dtype,
                interleaved: w.interleaved,
                dot: fused.dot,
            };
        }
    }
    Ok(shared.filter(|_| together).map(|(f, n_in)| (f, n_in, ws)))
}

/// Whether a kernel of `jobs` reads the activations' widened quants.
fn reads_wide(jobs: &[Job]) -> bool {
    jobs.iter()
        .any(|j| kernels::reads_wide(j.dtype, j.interleaved))
}

impl MatmulScratch {
    /// Grows the buffers that [`matmul_weights`] over `weights` uses for any number of
    /// activation rows up to `rows`, zero-filled, so such a call writes no fresh pages: in
    /// wasm, memory once written stays resident, and a page's first write is a page fault. A
    /// session reserves its first prompt's buffers so (`Session::new`).
    pub fn reserve(&mut self, rows: usize, weights: &[QWeight]) -> Result<()> {
        let Some((fused, n_in, ws)) = plan(weights)? else {
            for w in weights {
                self.reserve(rows, &[*w])?;
            }
            return Ok(());
        };
        if rows == 0 || n_in == 0 {
            return Ok(());
        }
        let jobs = &ws[..weights.len()];
        if fused.act == DType::Q8_0 {
            self.act.reserve(rows, n_in, reads_wide(jobs))?;
        } else {
            let row_bytes = fused.act.storage_bytes(n_in)?;
            try_grow(&mut self.xq, checked_product(OP, &[rows, row_bytes])?)?;
        }
        // The tasks' rows, and so the blocks' padding, change with the activation rows.
        let mut most = 0;
        for r in 1..=rows {
            most = most.max(blocks_len(jobs, r, chunk_rows(jobs, r))?);
        }
        try_grow(&mut self.blocks, most)
    }
}

/// Most weights [`matmul_many`] runs as one job.
const MAX_MANY: usize = 4;

/// One weight matrix of a [`run_jobs`] call.
#[derive(Clone, Copy)]
struct Job<'a> {
    bytes: &'a [u8],
    rows: usize,
    /// Bytes per weight row.
    w_row: usize,
    dtype: DType,
    /// Rows interleaved four at a time (`interleave.rs`).
    interleaved: bool,
    dot: fn(&[u8], &[u8]) -> f32,
}

impl Default for Job<'_> {
    fn default() -> Self {
        Job {
            bytes: &[],
            rows: 0,
            w_row: 0,
            dtype: DType::Q4_0,
            interleaved: false,
            dot: kernels::vec_dot_q4_0_q8_0,
        }
    }
}

/// Activation rows quantized once for every weight of a call.
enum Acts<'a> {
    /// Q8_0 rows with the Q4_0 kernels' side tables.
    Q8_0(&'a Q8Act),
    /// Rows of another activation format, `row_bytes` each.
    Rows { bytes: &'a [u8], row_bytes: usize },
}

impl Acts<'_> {
    fn rows(&self) -> usize {
        match self {
            Acts::Q8_0(a) => a.rows(),
            Acts::Rows { bytes, row_bytes } => bytes.len() / row_bytes,
        }
    }

    fn row(&self, r: usize) -> &[u8] {
        match self {
            Acts::Q8_0(a) => a.q8_row(r),
            Acts::Rows { bytes, row_bytes } => &bytes[r * row_bytes..(r + 1) * row_bytes],
        }
    }
}

/// Quantizes `x` (`rows × n_in`) once to the activation format of `fused`: Q8_0 with the Q4_0
/// side tables into `q8` (the widened quants with `wide`), any other format (Q8_K) as plain rows
/// into `xq`.
fn prepare_acts<'s>(
    x: &[f32],
    n_in: usize,
    fused: FusedDot,
    wide: bool,
    q8: &'s mut Q8Act,
    xq: &'s mut Vec<u8>,
) -> Result<Acts<'s>> {
    if fused.act == DType::Q8_0 {
        q8.prepare_with(x, n_in, wide)?;
        return Ok(Acts::Q8_0(q8));
    }
    let row_bytes = fused.act.storage_bytes(n_in)?;
    let rows = x.len() / n_in;
    let need = rows * row_bytes;
    try_grow(xq, need)?;
    parallel::for_each_row(&mut xq[..need], row_bytes, |r, qr| {
        (fused.quantize_act)(&x[r * n_in..(r + 1) * n_in], qr)
    });
    Ok(Acts::Rows {
        bytes: &xq[..need],
        row_bytes,
    })
}

/// `width` weight rows of `job` (its bytes from `w`) against every activation row, into the
/// row-major `[rows, width]` `block`. Q4_0 has a tiled kernel; the other formats run each weight
/// row against all activation rows while it is in cache.
fn job_block(job: &Job, w: &[u8], acts: &Acts, block: &mut [f32], width: usize) {
    match (job.dtype, acts) {
        (DType::Q4_0, Acts::Q8_0(act)) if job.interleaved => {
            return kernels::gemm_q4_0x4_q8_0(w, act, block)
        }
        (DType::Q5_0, Acts::Q8_0(act)) if job.interleaved => {
            return kernels::gemm_q5_0x4_q8_0(w, act, block)
        }
        (DType::Q8_0, Acts::Q8_0(act)) if job.interleaved => {
            return kernels::gemm_q8_0x4_q8_0(w, act, block)
        }
        (DType::Q4_0, Acts::Q8_0(act)) => return kernels::gemm_q4_0_q8_0(w, act, block),
        (DType::Q8_0, Acts::Q8_0(act)) => return kernels::gemm_q8_0_q8_0(w, act, block),
        (DType::Q5_0, Acts::Q8_0(act))
            if act.rows() >= 4 && q5_0_block(w, act, block, width).is_some() =>
        {
            return
        }
        (DType::Q4_K | DType::Q5_K | DType::Q6_K, Acts::Rows { bytes, row_bytes })
            if job.interleaved =>
        {
            return kernels::gemm_kx4_q8_k(job.dtype, w, bytes, *row_bytes, block);
        }
        (DType::Q4_K | DType::Q5_K | DType::Q6_K, Acts::Rows { bytes, row_bytes }) => {
            return kernels::gemm_k_q8_k(job.dtype, w, bytes, *row_bytes, block);
        }
        _ => {}
    }
    let rows = acts.rows();
    for (o, wr) in w.chunks_exact(job.w_row.max(1)).take(width).enumerate() {
        for r in 0..rows {
            block[r * width + o] = (job.dot)(wr, acts.row(r));
        }
    }
}

/// Q5_0 weight rows against four or more activation rows: re-encoded as Q8_0 eight rows at a
/// time (exact, see `q5_0_to_q8_0`) for the tiled Q8_0 kernel, the results scattered into their
/// columns of `block`. `None` (nothing written) when the buffers cannot be allocated.
fn q5_0_block(w: &[u8], act: &Q8Act, block: &mut [f32], width: usize) -> Option<()> {
    const GROUP: usize = 8;
    let rows = act.rows();
    let w_row = DType::Q5_0.storage_bytes(act.blocks() * 32).ok()?;
    let q8_row = DType::Q8_0.storage_bytes(act.blocks() * 32).ok()?;
    let mut q8 = try_vec(GROUP * q8_row, 0u8).ok()?;
    let mut out = try_vec(GROUP * rows, 0.0f32).ok()?;
    for o0 in (0..width).step_by(GROUP) {
        let g = GROUP.min(width - o0);
        legacy::q5_0_to_q8_0(&w[o0 * w_row..(o0 + g) * w_row], &mut q8[..g * q8_row]);
        kernels::gemm_q8_0_q8_0(&q8[..g * q8_row], act, &mut out[..g * rows]);
        for (r, seg) in out[..g * rows].chunks_exact(g).enumerate() {
            block[r * width + o0..r * width + o0 + g].copy_from_slice(seg);
        }
    }
    Some(())
}

/// Weights `jobs` against prepared `acts`: one parallel job over every matrix's chunks of weight
/// rows. A lone matrix with one activation row writes straight into `out` (its chunks are runs
/// of `out`), each offered to `top` when given (which only such a call gets); otherwise each
/// chunk fills a row-major `[rows, width]` block of `blocks` and the blocks' row runs are
/// copied into place (no scattered writes). Shapes are checked by the callers.
fn run_jobs(
    jobs: &[Job],
    acts: &Acts,
    blocks: &mut Vec<f32>,
    outs: &mut [&mut [f32]],
    top: Option<&FirstMax>,
) -> Result<()> {
    let rows = acts.rows();
    let mut chunk = chunk_rows(jobs, rows);
    if let ([job], [out], 1) = (jobs, &mut *outs, rows) {
        if top.is_some() {
            chunk = chunk.min(ARGMAX_TASK_ROWS);
        }
        parallel::for_each_chunk_mut(out, chunk, |c, o| {
            let width = o.len();
            job_block(job, &job.bytes[c * chunk * job.w_row..], acts, o, width);
            if let Some(top) = top {
                top.offer(c * chunk, o);
            }
        });
        return Ok(());
    }
    // Chunk `c` belongs to the matrix `m` with first[m] <= c < first[m + 1].
    let mut first = [0usize; MAX_MANY + 1];
    for (m, j) in jobs.iter().enumerate() {
        first[m + 1] = first[m] + j.rows.div_ceil(chunk);
    }
    let len = blocks_len(jobs, rows, chunk)?;
    try_grow(blocks, len)?;
    let locate = |c: usize| {
        let m = first[1..=jobs.len()]
            .iter()
            .position(|&f| c < f)
            .unwrap_or(0);
        let j = c - first[m];
        (m, j, chunk.min(jobs[m].rows - j * chunk))
    };
    let dests = Dests::new(outs);
    parallel::for_each_chunk_mut(&mut blocks[..len], chunk * rows, |c, block| {
        let (m, j, width) = locate(c);
        let job = &jobs[m];
        let block = &mut block[..width * rows];
        job_block(job, &job.bytes[j * chunk * job.w_row..], acts, block, width);
        // SAFETY: chunk `c` is the only one over columns `j·chunk..` of matrix `m`.
        unsafe { dests.put(m, j * chunk, job.rows, block, width) };
    });
    Ok(())
}

/// Floats of [`run_jobs`]'s blocks for `jobs` against `rows` activation rows in tasks of
/// `chunk` weight rows: none for a lone matrix and row (written in place).
fn blocks_len(jobs: &[Job], rows: usize, chunk: usize) -> Result<usize> {
    if jobs.len() == 1 && rows == 1 {
        return Ok(0);
    }
    let n_chunks: usize = jobs.iter().map(|j| j.rows.div_ceil(chunk.max(1))).sum();
    checked_product("matmul blocks", &[n_chunks, chunk, rows])
}

/// [`run_jobs`]'s outputs for its chunks to write into from any thread: each chunk copies its
/// block into place while the block is still in its core's cache, where a copy after the loop
/// ran on one thread while the others waited.
struct Dests {
    parts: [(*mut f32, usize); MAX_MANY],
}

// SAFETY: `put` writes only the columns of the chunk calling it, which no other chunk has, and
// the outputs outlive the parallel loop (`run_jobs` holds their borrow throughout).
unsafe impl Sync for Dests {}

impl Dests {
    fn new(outs: &mut [&mut [f32]]) -> Dests {
        let mut parts = [(core::ptr::null_mut(), 0); MAX_MANY];
        for (p, o) in parts.iter_mut().zip(outs.iter_mut()) {
            *p = (o.as_mut_ptr(), o.len());
        }
        Dests { parts }
    }

    /// Copies the row-major `[rows, width]` `block` into columns `col..col + width` of the
    /// `n_out`-wide output `m`.
    ///
    /// # Safety
    /// No other thread may write those columns meanwhile.
    unsafe fn put(&self, m: usize, col: usize, n_out: usize, block: &[f32], width: usize) {
        let (base, len) = self.parts[m];
        for (r, seg) in block.chunks_exact(width).enumerate() {
            let at = r * n_out + col;
            assert!(at + width <= len, "matmul block outside its output");
            // SAFETY: in bounds (checked above); the caller owns these columns.
            unsafe { core::ptr::copy_nonoverlapping(seg.as_ptr(), base.add(at), width) };
        }
    }
}

const OP: &str = "quantized_matmul";

/// `(rows, out, in)` of `x · weightᵀ` into `out_len` outputs, or a shape error: weight `[out,
/// in]`, `x` whole rows of `in`, `in` whole activation blocks, `out_len == rows · out`.
fn matmul_dims(
    x: &[f32],
    n_out: usize,
    n_in: usize,
    fused: FusedDot,
    out_len: usize,
) -> Result<(usize, usize, usize)> {
    let rows = x.len().checked_div(n_in).unwrap_or(0);
    // `rows · out` is checked: wrapped, it would let a short `out` through.
    if rows * n_in != x.len()
        || rows.checked_mul(n_out) != Some(out_len)
        || n_in % fused.act.block_elems() != 0
    {
        return Err(Error::shape(
            OP,
            format!("x [rows, {n_in}] and out [rows, {n_out}]"),
            format!("{} inputs and {} outputs", x.len(), out_len),
        ));
    }
    Ok((rows, n_out, n_in))
}

/// Weight rows per parallel task over `jobs` against `act_rows` activation rows, for this
/// build's threads ([`task_rows`]).
fn chunk_rows(jobs: &[Job], act_rows: usize) -> usize {
    task_rows(jobs, act_rows, parallel::num_threads())
}

/// [`chunk_rows`] for `t` threads: a whole matrix on one thread ([`SERIAL_TASK_ROWS`] for a
/// tile's four or more rows), or when the work is under [`MIN_SPLIT_WORK`]; else one task per
/// [`MIN_TASK_BYTES`] of work, kept to one to sixteen a thread and to a multiple of the thread
/// count, so that the threads get equal shares and the task still running when the others
/// finish is short. With several matrices a task stays within one, so the count (up to that
/// one) is the one whose tasks share out most evenly ([`span`]; a lone matrix skips the search,
/// whose cost grows with the tasks). Whole interleaving groups either way, so an interleaved
/// matrix's chunks start at a group.
fn task_rows(jobs: &[Job], act_rows: usize, t: usize) -> usize {
    let group = super::interleave::GROUP;
    let whole = jobs.iter().map(|j| j.rows).max().unwrap_or(1).max(1);
    let work = jobs
        .iter()
        .map(|j| j.rows.saturating_mul(j.w_row))
        .fold(0usize, usize::saturating_add)
        .saturating_mul(act_rows);
    if t <= 1 && act_rows >= 4 {
        return whole.min(SERIAL_TASK_ROWS).next_multiple_of(group);
    }
    if t <= 1 || work < MIN_SPLIT_WORK {
        return whole.next_multiple_of(group);
    }
    let most = (work / MIN_TASK_BYTES).clamp(t, 16 * t) / t * t;
    let total: usize = jobs.iter().map(|j| j.rows).sum();
    let rows_for = |tasks: usize| total.div_ceil(tasks).max(16).next_multiple_of(group);
    if jobs.len() == 1 {
        return rows_for(most);
    }
    (t..=most)
        .step_by(t)
        .map(rows_for)
        .min_by_key(|&r| (span(jobs, r, t), r))
        .unwrap_or_else(|| rows_for(most))
}

/// The largest share of weight bytes any of `t` threads reads when `jobs` are cut into tasks of
/// `rows` rows (each matrix's last one shorter) and each task goes to the thread that is free
/// first, as the team hands them out (at most 64 threads modelled).
fn span(jobs: &[Job], rows: usize, t: usize) -> usize {
    let mut loads = [0usize; 64];
    let loads = &mut loads[..t.clamp(1, 64)];
    for j in jobs {
        for start in (0..j.rows).step_by(rows.max(1)) {
            let n = rows.min(j.rows - start);
            if let Some(least) = loads.iter_mut().min() {
                *least = least.saturating_add(n.saturating_mul(j.w_row));
            }
        }
    }
    loads.iter().copied().max().unwrap_or(0)
}

/// Weight rows per task of a prompt's matmul on one thread: each task's `[rows, width]` block
/// (106 KB for a 106-token prompt) is written and copied into place while it is in the L2, where a
/// whole feed-forward matrix's (868 KB) was written with an 8 KB row stride. Gemma 3 270M Q4_0's
/// one-thread prefill in Chromium on the Intel Xeon host of 2026-12-07, three A/Bs of six or four
/// alternating fresh engines: 324.7 → 342.7, 345.1 → 348.6 and 344.3 → 353.6 tok/s (the prompt
/// again: 339.6 → 355.2, 354.0 → 357.5, 352.6 → 364.9); 128 rows ran alike, 512 between.
const SERIAL_TASK_ROWS: usize = 256;

/// The work (weight bytes × activation rows) that earns a parallel matmul another task. Measured
/// in Chromium on two threads, a token's layer matvecs (0.4–1.5 MB each): in sixteen 46 KB tasks
/// a thread as slow as on one thread; in four to eleven 128 KB tasks a loop 1.5× faster; in one
/// task a thread (this limit) faster again, gate/up 1.01 → 0.76 and down 0.54 → 0.41 ms a token
/// (section profile, medians of 20 interleaved runs): each task has a fixed cost to claim, start
/// streaming and report. The LM head (94 MB) keeps sixteen tasks a thread: halves of it ran
/// slower (2.34 → 2.53 ms), a late helper then holding the leader up longer.
const MIN_TASK_BYTES: usize = 1 << 20;

/// Work (weight bytes × activation rows) below which a matmul is not split: one matrix then runs
/// on the calling thread, several are a task each. A decode step's attention-output and down
/// matvecs (0.37 and 0.74 MB) and its q/k/v (0.55 MB together) are split. Measured in Chromium
/// on a 2-core host with two threads, against a 1 MiB limit (those three on one thread or a task
/// each): attention output 2.17 → 1.56 ms a token, down 2.89 → 2.06, q/k/v 1.93 → 1.69 (section
/// profile); decode faster in 7 of 8 interleaved runs (medians 39.6 → 44.3 tok/s). That needs
/// the leader to spin out the helper's last chunk (see `parallel`'s `back_off`): while it slept
/// instead, the split lost its gain to waiting.
const MIN_SPLIT_WORK: usize = 256 << 10;

/// The fused kernel for weights of `dtype`, or [`Error::UnsupportedDType`].
fn fused_kernel(dtype: DType) -> Result<FusedDot> {
    quant_type(dtype)
        .and_then(|t| t.fused)
        .ok_or(Error::UnsupportedDType { op: OP, dtype })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of a row offered in any order give the row's first largest (the scalar `argmax`):
    /// ±0 one value, −∞ above nothing only, NaN never, a tie to the lower index.
    #[test]
    fn first_max_of_runs_offered_in_any_order_is_the_rows() {
        let (nan, inf) = (f32::NAN, f32::INFINITY);
        let rows: [&[f32]; 6] = [
            &[-0.0, 0.0, -1.0, 0.0, -0.0, -2.0],
            &[-inf, nan, -inf, nan],
            &[nan, nan, nan],
            &[3.0, 1.0, 5.0, 5.0, 2.0, 5.0, nan, 4.0],
            &[-7.0, -3.0, nan, -3.0, -inf, -9.0],
            &[1.0, inf, 2.0, inf, nan],
        ];
        for x in rows {
            let want = crate::ops::kernels::scalar::argmax(x);
            for run in 1..=x.len() {
                let (fwd, back) = (FirstMax::default(), FirstMax::default());
                let starts: Vec<usize> = (0..x.len()).step_by(run).collect();
                for &s in &starts {
                    fwd.offer(s, &x[s..(s + run).min(x.len())]);
                }
                for &s in starts.iter().rev() {
                    back.offer(s, &x[s..(s + run).min(x.len())]);
                }
                assert_eq!(
                    (fwd.index(), back.index()),
                    (want, want),
                    "{x:?}, runs of {run}"
                );
            }
        }
    }

    /// A Q4_0 `[out, n_in]` matrix of varied scales and nibbles.
    fn q4_0(out: usize, n_in: usize, seed: usize) -> Vec<u8> {
        let blocks = out * n_in / 32;
        let mut bytes = Vec::with_capacity(blocks * 18);
        for b in 0..blocks {
            let scale = half::f16::from_f32(0.01 + ((b + seed) % 7) as f32 * 0.003);
            bytes.extend(scale.to_le_bytes());
            bytes.extend((0..16).map(|i| ((b * 31 + i * 17 + seed) % 256) as u8));
        }
        bytes
    }

    /// After `reserve(rows, ..)` no matmul of one to `rows` activation rows grows a buffer (a
    /// session reserves so that its first prompt writes no fresh pages), and the outputs are
    /// a fresh scratch's bits, on one to three threads, for a group of three matrices sharing
    /// a width and for a lone one. Four rows: one thread takes three rows' matrices whole, so
    /// their blocks (3 × 512 × 3 floats) outgrow four rows' 256-row tasks (4 × 256 × 4).
    #[test]
    fn reserve_leaves_nothing_to_grow_for_up_to_its_rows() {
        let n_in = 64;
        let mats = [512, 16, 16].map(|out| (q4_0(out, n_in, out), out));
        let ws = mats.each_ref().map(|(bytes, out)| QWeight {
            dtype: DType::Q4_0,
            bytes,
            rows: *out,
            cols: n_in,
            interleaved: false,
        });
        let lens = |s: &MatmulScratch| (s.act.buffer_lens(), s.xq.len(), s.blocks.len());
        for t in 1..=3 {
            with_threads(t, || {
                for (group, rows) in [(&ws[..], 4), (&ws[..], 40), (&ws[..1], 40)] {
                    let mut s = MatmulScratch::default();
                    s.reserve(rows, group).unwrap();
                    let held = lens(&s);
                    for r in 1..=rows {
                        let x: Vec<f32> = (0..r * n_in)
                            .map(|i| (i * 7919 % 113) as f32 / 50.0 - 1.0)
                            .collect();
                        let run = |s: &mut MatmulScratch| {
                            let mut outs: Vec<Vec<f32>> =
                                group.iter().map(|w| vec![0.0; r * w.rows]).collect();
                            let mut views: Vec<&mut [f32]> =
                                outs.iter_mut().map(|o| o.as_mut_slice()).collect();
                            matmul_weights(&x, group, s, &mut views).unwrap();
                            outs.concat()
                                .iter()
                                .map(|v| v.to_bits())
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(run(&mut s), run(&mut MatmulScratch::default()));
                        assert_eq!(lens(&s), held, "{t} threads, {r} rows");
                    }
                }
            });
        }
    }

    /// `f` on `t` threads: natively a rayon pool of that size; in wasm (no pool) one only.
    fn with_threads(t: usize, f: impl FnOnce() + Send) {
        #[cfg(not(target_arch = "wasm32"))]
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(f);
        #[cfg(target_arch = "wasm32")]
        if t == 1 {
            f()
        }
    }

    fn job(rows: usize, w_row: usize) -> Job<'static> {
        Job {
            rows,
            w_row,
            ..Job::default()
        }
    }

    /// Hand-scheduled: the thread free first takes the next task, ties to the lower thread.
    #[test]
    fn span_is_the_busiest_threads_bytes_when_tasks_go_to_the_first_free() {
        // q, k, v of a decoded token (1024 + 256 + 256 rows): 768-row tasks are 768, 256 | 256,
        // 256, 256 — thread 0 takes 768, thread 1 the other three.
        let qkv = [job(1024, 10), job(256, 10), job(256, 10)];
        assert_eq!(span(&qkv, 768, 2), 7680);
        // 384-row tasks: 384, 384, 256 | 256 | 256 — loads 384 / 384 → 640 / 768 → 896 / 768.
        assert_eq!(span(&qkv, 384, 2), 8960);
        // Rows of another width weigh by their bytes.
        assert_eq!(span(&[job(64, 1), job(64, 3)], 64, 2), 192);
        assert_eq!(span(&[job(100, 1)], 16, 3), 36);
    }

    /// On two and three threads the chosen tasks leave no thread more than one 16-row task above
    /// an even share, and a lone small matrix gets one task a thread; one thread takes a decoded
    /// row's matrices whole and a prompt's in tasks of at most SERIAL_TASK_ROWS. (Four threads
    /// do not hold the bound for a decoded token's q/k/v: under 1 MiB of work gives four tasks of
    /// 384 rows, five pieces in all, so one thread reads 640 rows against an even 384. Not
    /// measured on a machine with four cores.)
    #[test]
    fn task_rows_pick_an_even_split() {
        let qkv = [job(1024, 360), job(256, 360), job(256, 360)];
        // Worked by hand: 768-row tasks give 768 | 256 + 256 + 256 rows.
        assert_eq!(task_rows(&qkv, 1, 2), 768);
        for t in 2..=3 {
            let r = task_rows(&qkv, 1, t);
            let ideal = (1536usize * 360).div_ceil(t);
            assert!(
                span(&qkv, r, t) <= ideal + 16 * 360,
                "{t} threads, rows {r}"
            );
            let down = [job(640, 1152)];
            let even = 640usize.div_ceil(t).next_multiple_of(4);
            assert_eq!(task_rows(&down, 1, t), even, "{t} threads");
        }
        assert_eq!(task_rows(&qkv, 1, 1), 1024);
        assert_eq!(task_rows(&qkv, 3, 1), 1024);
        assert_eq!(task_rows(&qkv, 106, 1), SERIAL_TASK_ROWS);
        assert_eq!(task_rows(&[job(200, 360)], 106, 1), 200);
        assert_eq!(task_rows(&[job(202, 360)], 106, 1), 204);
    }
}
