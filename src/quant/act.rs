//! Activations prepared once per matmul for the Q4_0 kernels.
//!
//! A Q4_0 weight row is read once per activation row, but the work that depends only on the
//! activations — quantizing to Q8_0, decoding the block scales, and the `8·Σx` that takes the
//! Q4_0 offset out of the per-weight products — is done here once and shared by every weight row.

use super::kernels::quantize_row_q8_0;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::parallel;
use crate::quant::blocks::f16_to_f32;
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
        grow(&mut self.q8, rows * row_bytes)?;
        grow(&mut self.dx, nb)?;
        grow(&mut self.dx_t, nb)?;
        grow(&mut self.sx8, nb)?;
        grow(&mut self.sx8_t, nb)?;
        if WIDE {
            grow(&mut self.wide, nb * QK)?;
        }
        self.rows = rows;
        self.blocks = blocks;
        // The rows quantize apart, so a prompt's are spread over the threads (on one, the
        // others waited at every matmul of a prompt); the side tables follow.
        let per = parallel::rows_per_task(rows);
        parallel::for_each_chunk_mut(
            &mut self.q8[..rows * row_bytes],
            per * row_bytes,
            |c, q8| {
                let xs = x[c * per * n_in..].chunks_exact(n_in);
                for (q, xr) in q8.chunks_exact_mut(row_bytes).zip(xs) {
                    quantize_row_q8_0(xr, q);
                }
            },
        );
        for r in 0..rows {
            let q8 = &self.q8[r * row_bytes..(r + 1) * row_bytes];
            for (b, xb) in q8.chunks_exact(DType::Q8_0.block_bytes()).enumerate() {
                let d = f16_to_f32(u16::from_le_bytes([xb[0], xb[1]]));
                self.dx[r * blocks + b] = d;
                self.dx_t[b * rows + r] = d;
                let sum: i32 = xb[2..].iter().map(|&q| (q as i8) as i32).sum();
                self.sx8[r * blocks + b] = 8 * sum;
                self.sx8_t[b * rows + r] = 8 * sum;
                if WIDE {
                    let at = (r * blocks + b) * QK;
                    for (v, &q) in self.wide[at..at + QK].iter_mut().zip(&xb[2..]) {
                        *v = (q as i8) as i16;
                    }
                }
            }
        }
        Ok(())
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

    /// Row `r`'s quants widened to i16 (SIMD builds): 32 a block.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub(crate) fn wide_row(&self, r: usize) -> &[i16] {
        let n = self.blocks * QK;
        &self.wide[r * n..(r + 1) * n]
    }
}
