//! Activations prepared once per matmul for the Q4_0 kernels.
//!
//! A Q4_0 weight row is read once per activation row, but the work that depends only on the
//! activations — quantizing to Q8_0, decoding the block scales, and the `8·Σx` that takes the
//! Q4_0 offset out of the per-weight products — is done here once and shared by every weight row.

use super::kernels::quantize_row_q8_0_sums;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::parallel;
use crate::quant::blocks::f16_to_f32;
use crate::shape::checked_product;
use crate::storage::try_grow as grow;

/// Elements per Q8_0 block.
const QK: usize = 32;

/// Quantized activation rows plus the side tables the Q4_0 inner loops read.
#[derive(Default, Debug)]
pub struct Q8Act {
    rows: usize,
    blocks: usize,
    /// `[rows][blocks]` Q8_0 blocks (ggml's 34-byte layout; what the scalar twin reads).
    q8: Vec<u8>,
    /// `[rows][blocks]` block scales as f32 (a row's scales load four at a time).
    dx: Vec<f32>,
    /// `[blocks][rows]` the same scales, block-major (four rows' scales load at once).
    dx_t: Vec<f32>,
    /// `[rows][blocks]` `8·Σx` of each block: `Σ nibble·x − 8·Σx` is the exact `Σ (nibble − 8)·x`,
    /// one subtract per block instead of one per weight.
    sx8: Vec<i32>,
    /// `[blocks][rows]` the same sums, block-major (four rows' sums load at once).
    sx8_t: Vec<i32>,
    /// `[rows][blocks][32]` each block's quants widened to i16: the operand the SIMD builds'
    /// i16-multiply kernels take (`i32x4_dot_i16x8`: `kernels::x4`, relaxed Q8_0). Filled only
    /// in SIMD builds, the readers.
    wide: Vec<i16>,
    /// Rows of `wide` the last `prepare` filled (none when no kernel of its call reads them).
    wide_rows: usize,
}

/// Whether this build reads [`Q8Act`]'s widened quants.
const WIDE: bool = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));

// The tables are read by the SIMD kernels only; the scalar twin reads the Q8_0 rows.
#[cfg_attr(
    not(all(target_arch = "wasm32", target_feature = "simd128")),
    allow(dead_code)
)]
impl Q8Act {
    /// Quantizes `x` (`rows × n_in`, `n_in` a multiple of 32) and fills the side tables. Buffers
    /// grow once and are reused, so a decode loop allocates nothing.
    pub fn prepare(&mut self, x: &[f32], n_in: usize) -> Result<()> {
        self.prepare_with(x, n_in, true)
    }

    /// [`Q8Act::prepare`], the widened quants only with `wide` (where a kernel of the call reads
    /// them, `kernels::reads_wide`): the relaxed build's Q4_0 and Q5_0 kernels do not, and
    /// filling them for every matmul of a prompt was serial work on two threads (section profile,
    /// Q4_0 prefill at 196–220 GOP/s before, 229–239 with the tables filled per thread and the
    /// widened quants only where read).
    pub(crate) fn prepare_with(&mut self, x: &[f32], n_in: usize, wide: bool) -> Result<()> {
        if n_in == 0 || n_in % QK != 0 || x.len() % n_in != 0 {
            return Err(Error::shape(
                "Q8Act::prepare",
                "rows × n_in with n_in a multiple of 32",
                format!("{} values, n_in {n_in}", x.len()),
            ));
        }
        let (rows, blocks) = (x.len() / n_in, n_in / QK);
        let nb = rows * blocks;
        let row_bytes = blocks * DType::Q8_0.block_bytes();
        let wide = wide && WIDE;
        self.reserve(rows, n_in, wide)?;
        self.rows = rows;
        self.blocks = blocks;
        self.wide_rows = 0;
        let tables = RowTables {
            dx: self.dx.as_mut_ptr(),
            sx8: self.sx8.as_mut_ptr(),
            wide: wide.then_some(self.wide.as_mut_ptr()),
            blocks,
        };
        // The rows quantize apart, so a prompt's are spread over the threads with their side
        // tables (on one, the others waited at every matmul of a prompt).
        parallel::for_each_row(&mut self.q8[..rows * row_bytes], row_bytes, |r, q| {
            // SAFETY: row `r` is this call's alone (its row of `q8`), and the tables were grown
            // to `rows` rows above.
            unsafe { tables.quantize_row(r, &x[r * n_in..(r + 1) * n_in], q) };
        });
        for (r, (dx, sx8)) in self.dx[..nb]
            .chunks_exact(blocks)
            .zip(self.sx8[..nb].chunks_exact(blocks))
            .enumerate()
        {
            for b in 0..blocks {
                self.dx_t[b * rows + r] = dx[b];
                self.sx8_t[b * rows + r] = sx8[b];
            }
        }
        if wide {
            self.wide_rows = rows;
        }
        Ok(())
    }

    /// Grows the buffers to `rows` rows of `n_in` values (the widened quants only with `wide`),
    /// zero-filled: a [`Q8Act::prepare_with`] of up to that many rows then writes no fresh pages.
    pub(crate) fn reserve(&mut self, rows: usize, n_in: usize, wide: bool) -> Result<()> {
        let blocks = n_in / QK;
        let nb = checked_product("Q8_0 activations", &[rows, blocks])?;
        grow(
            &mut self.q8,
            checked_product("Q8_0 activations", &[nb, DType::Q8_0.block_bytes()])?,
        )?;
        grow(&mut self.dx, nb)?;
        grow(&mut self.dx_t, nb)?;
        grow(&mut self.sx8, nb)?;
        grow(&mut self.sx8_t, nb)?;
        if wide && WIDE {
            grow(
                &mut self.wide,
                checked_product("Q8_0 activations", &[nb, QK])?,
            )?;
        }
        Ok(())
    }

    /// Lengths of the buffers (tests: whether a call grew one).
    #[cfg(test)]
    pub(crate) fn buffer_lens(&self) -> [usize; 6] {
        let (q8, dx, dx_t) = (self.q8.len(), self.dx.len(), self.dx_t.len());
        [
            q8,
            dx,
            dx_t,
            self.sx8.len(),
            self.sx8_t.len(),
            self.wide.len(),
        ]
    }

    /// Activation rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Q8_0 blocks per row.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Row `r` as Q8_0 blocks (empty past the last row).
    pub fn q8_row(&self, r: usize) -> &[u8] {
        let n = self.blocks * DType::Q8_0.block_bytes();
        match r < self.rows {
            true => &self.q8[r * n..(r + 1) * n],
            false => &[],
        }
    }

    pub(crate) fn q8(&self) -> &[u8] {
        &self.q8[..self.rows * self.blocks * DType::Q8_0.block_bytes()]
    }

    pub(crate) fn dx(&self) -> &[f32] {
        &self.dx[..self.rows * self.blocks]
    }

    pub(crate) fn dx_t(&self) -> &[f32] {
        &self.dx_t[..self.rows * self.blocks]
    }

    pub(crate) fn sx8(&self) -> &[i32] {
        &self.sx8[..self.rows * self.blocks]
    }

    pub(crate) fn sx8_t(&self) -> &[i32] {
        &self.sx8_t[..self.rows * self.blocks]
    }

    /// Row `r`'s quants widened to i16 (SIMD builds): 32 a block. Only after a `prepare` that
    /// filled them; a kernel reading them otherwise is a bug that `kernels::reads_wide` let
    /// through, and stops here rather than reading another call's rows.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub(crate) fn wide_row(&self, r: usize) -> &[i16] {
        assert!(r < self.wide_rows, "widened quants not prepared");
        let n = self.blocks * QK;
        &self.wide[r * n..(r + 1) * n]
    }
}

/// The row-major side tables of a [`Q8Act`], for the threads quantizing its rows to fill each
/// row's entries beside its quants.
struct RowTables {
    dx: *mut f32,
    sx8: *mut i32,
    wide: Option<*mut i16>,
    blocks: usize,
}

// SAFETY: `quantize_row`'s callers write disjoint rows, and the tables outlive the parallel loop
// (`prepare_with` holds them borrowed throughout).
unsafe impl Sync for RowTables {}

impl RowTables {
    /// Quantizes row `r`, `x`, into its Q8_0 blocks `q8` and fills its block scales, `8·Σx` and
    /// widened quants.
    ///
    /// # Safety
    /// Row `r` must exist in every table, and no other thread may access it meanwhile.
    unsafe fn quantize_row(&self, r: usize, x: &[f32], q8: &mut [u8]) {
        let n = self.blocks;
        let dx = core::slice::from_raw_parts_mut(self.dx.add(r * n), n);
        let sx8 = core::slice::from_raw_parts_mut(self.sx8.add(r * n), n);
        quantize_row_q8_0_sums(x, q8, sx8);
        let mut wide = self
            .wide
            .map(|w| core::slice::from_raw_parts_mut(w.add(r * n * QK), n * QK));
        for (b, xb) in q8.chunks_exact(DType::Q8_0.block_bytes()).enumerate() {
            dx[b] = f16_to_f32(u16::from_le_bytes([xb[0], xb[1]]));
            sx8[b] *= 8;
            if let Some(wide) = wide.as_deref_mut() {
                let quants = xb[2..].iter().map(|&q| (q as i8) as i16);
                wide[b * QK..(b + 1) * QK]
                    .iter_mut()
                    .zip(quants)
                    .for_each(|(v, q)| *v = q);
            }
        }
    }
}
