//! Q4_0 rows interleaved four at a time ("Q4_0×4"): the layout relaxed-SIMD builds put a
//! model's Q4_0 matrices in at load, in place.
//!
//! A relaxed `i8×i7` dot multiplies bytes pairwise and sums neighbours within each lane. If the
//! bytes of lane `i` come from weight row `i` and the activation's four bytes are splat over all
//! lanes, one instruction advances four rows' dots at once and leaves them in separate lanes: no
//! horizontal sums, no transposes. (The kernel uses the i16-pair form and widens once per block:
//! in Chromium on this machine it measured faster than the accumulating i32 form, decode 91 →
//! 106 tok/s.) ggml's `q4_0_4x4` repack is the native analogue.
//!
//! Layout: rows `4g..4g + 4` form group `g`, which takes the same bytes as those four rows did
//! (`4 · nb · 18`). For each block `b` of the group, 72 bytes:
//! - `d[4]`: the four rows' f16 scales, row order;
//! - `v[4][16]`: `v[k][4i + m] = qs_i[4k + m]`, the quant bytes of row `i`, four at a time. A
//!   byte keeps Q4_0's nibble pair: low nibble element `j`, high nibble element `j + 16`.
//!
//! The kernels keep the canonical f32 order per output (block `b` into accumulator `b % 4`), so
//! an interleaved matrix gives the same bits as its rows in the file's layout.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::try_vec;
use std::ops::Range;

/// Rows per group.
pub const GROUP: usize = 4;

/// Bytes of one block of a group (four scales, four rows' quants).
pub const GROUP_BLOCK: usize = GROUP * Q4_BYTES;

const Q4_BYTES: usize = DType::Q4_0.block_bytes();

/// Whether this build interleaves Q4_0 matrices at load: relaxed-SIMD builds, whose dot reads
/// the layout directly. Elsewhere the layout only exists in tests.
pub const ENABLED: bool = cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd"));

/// Interleaves `rows` (whole Q4_0 rows of `nb` blocks each, a multiple of [`GROUP`] of them) in
/// place. Errors when the length is not whole groups or the four-row buffer cannot be had.
pub fn interleave_q4_0(rows: &mut [u8], nb: usize) -> Result<()> {
    let group = check_groups(rows.len(), nb)?;
    let mut tmp = try_vec(group, 0u8)?;
    let row = nb * Q4_BYTES;
    for g in rows.chunks_exact_mut(group) {
        tmp.copy_from_slice(g);
        for (b, out) in g.chunks_exact_mut(GROUP_BLOCK).enumerate() {
            for i in 0..GROUP {
                let src = &tmp[i * row + b * Q4_BYTES..][..Q4_BYTES];
                out[2 * i..2 * i + 2].copy_from_slice(&src[..2]);
                for k in 0..4 {
                    let at = 2 * GROUP + 16 * k + 4 * i;
                    out[at..at + 4].copy_from_slice(&src[2 + 4 * k..2 + 4 * k + 4]);
                }
            }
        }
    }
    Ok(())
}

/// Rows `rows` of an interleaved `matrix` (from its first group) of `nb`-block rows, in the
/// file's layout, into `out` (`rows.len() · nb · 18` bytes). Rows past the matrix are left.
pub fn deinterleave_rows(matrix: &[u8], nb: usize, rows: Range<usize>, out: &mut [u8]) {
    let group = nb * GROUP_BLOCK;
    for (r, dst) in rows.zip(out.chunks_exact_mut(nb * Q4_BYTES)) {
        let Some(g) = matrix.get(r / GROUP * group..(r / GROUP + 1) * group) else {
            return;
        };
        let lane = r % GROUP;
        for (blk, dst) in g
            .chunks_exact(GROUP_BLOCK)
            .zip(dst.chunks_exact_mut(Q4_BYTES))
        {
            dst[..2].copy_from_slice(&blk[2 * lane..2 * lane + 2]);
            for k in 0..4 {
                let at = 2 * GROUP + 16 * k + 4 * lane;
                dst[2 + 4 * k..2 + 4 * k + 4].copy_from_slice(&blk[at..at + 4]);
            }
        }
    }
}

/// Bytes per group of `nb`-block rows, when `len` is a whole number of groups.
fn check_groups(len: usize, nb: usize) -> Result<usize> {
    let group = nb
        .checked_mul(GROUP_BLOCK)
        .ok_or_else(|| Error::overflow("Q4_0×4 group", &[nb, GROUP_BLOCK]))?;
    if group == 0 || len % group != 0 {
        return Err(Error::shape(
            "interleave_q4_0",
            format!("whole groups of {GROUP} rows of {nb} Q4_0 blocks"),
            format!("{len} bytes"),
        ));
    }
    Ok(group)
}
