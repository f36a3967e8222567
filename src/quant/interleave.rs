//! Q4_0, Q5_0 and Q8_0 rows interleaved four at a time ("×4"): the layout relaxed-SIMD builds
//! put a model's matrices of those formats in at load, in place.
//!
//! A relaxed `i8×i7` dot multiplies bytes pairwise and sums neighbours within each lane. If the
//! bytes of lane `i` come from weight row `i` and the activation's four bytes are splat over all
//! lanes, one instruction advances four rows' dots at once and leaves them in separate lanes: no
//! horizontal sums, no transposes. (The kernel uses the i16-pair form and widens once per block:
//! in Chromium on this machine it measured faster than the accumulating i32 form, decode 91 →
//! 106 tok/s.) Q8_0's quants are signed, so there the activation takes the 7-bit side: its
//! sign-split halves (`Q8Act::split_row`), two dots a vector, widened every vector (a full i8
//! pair already reaches 32,512). ggml's `q4_0_4x4` repack is the native analogue.
//!
//! Layout: rows `4g..4g + 4` form group `g`, which takes the same bytes as those four rows did
//! (`4 · nb · block_bytes`). For each block `b` of the group:
//! - `d[4]`: the four rows' f16 scales, row order;
//! - `v[c][16]`: `v[k][4i + m] = qs_i[4k + m]`, the quant bytes of row `i`, four at a time:
//!   `c = 4` for Q4_0 and Q5_0, whose bytes keep the nibble pair (low nibble element `j`, high
//!   nibble element `j + 16`), `c = 8` for Q8_0 (one byte an element);
//! - Q5_0 only, `h[16]`: the fifth bits as bit planes over `v`'s lanes. Bit `2k + t` of byte
//!   `4i + m` is the fifth bit of the element that lane's nibble in `v[k]` holds: `4k + m` of
//!   row `i` for the low nibble (`t = 0`), `16 + 4k + m` for the high (`t = 1`). So one
//!   16-bit shift and one mask put plane `2k + t`'s bits at value 16 in every byte, ready to
//!   add to the nibbles.
//!
//! The kernels keep the canonical f32 order per output (block `b` into accumulator `b % 4`), so
//! an interleaved matrix gives the same bits as its rows in the file's layout.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::try_vec;
use std::ops::Range;

/// Rows per group.
pub const GROUP: usize = 4;

/// Offset of the quant bytes `v` in a group block (after the four scales).
pub const QS: usize = 2 * GROUP;

/// Offset of the Q5_0 fifth-bit masks `h` in a group block (after `v`).
pub const Q5_HIGH: usize = QS + 64;

/// Whether this build interleaves Q4_0, Q5_0 and Q8_0 matrices at load: relaxed-SIMD builds, whose
/// dots read the layout directly. Elsewhere the layout only exists in tests.
pub const ENABLED: bool = cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd"));

/// Whether `dtype` has a ×4 layout.
pub fn supports(dtype: DType) -> bool {
    matches!(dtype, DType::Q4_0 | DType::Q5_0 | DType::Q8_0)
}

/// Bytes of one block of a group of `dtype` rows (four rows' blocks).
pub const fn group_block(dtype: DType) -> usize {
    GROUP * dtype.block_bytes()
}

/// Interleaves `rows` (whole `dtype` rows of `nb` blocks each, a multiple of [`GROUP`] of them)
/// in place. Errors when `dtype` has no ×4 layout, the length is not whole groups, or the
/// four-row buffer cannot be had.
pub fn interleave(dtype: DType, rows: &mut [u8], nb: usize) -> Result<()> {
    let group = check_groups(dtype, rows.len(), nb)?;
    let mut tmp = try_vec(group, 0u8)?;
    let (bb, row) = (dtype.block_bytes(), nb * dtype.block_bytes());
    for g in rows.chunks_exact_mut(group) {
        tmp.copy_from_slice(g);
        for (b, out) in g.chunks_exact_mut(GROUP * bb).enumerate() {
            let src: [&[u8]; GROUP] = core::array::from_fn(|i| &tmp[i * row + b * bb..][..bb]);
            pack_block(dtype, src, out);
        }
    }
    Ok(())
}

/// Rows `rows` of an interleaved `dtype` `matrix` (from its first group) of `nb`-block rows, in
/// the file's layout, into `out` (`rows.len() · nb · block_bytes` bytes). Rows past the matrix
/// are left, and so is all of `out` for a `dtype` without a ×4 layout (whose blocks may be
/// shorter than the offsets read here).
pub fn deinterleave_rows(
    dtype: DType,
    matrix: &[u8],
    nb: usize,
    rows: Range<usize>,
    out: &mut [u8],
) {
    if !supports(dtype) {
        return;
    }
    let (bb, gb) = (dtype.block_bytes(), group_block(dtype));
    let group = nb * gb;
    for (r, dst) in rows.zip(out.chunks_exact_mut(nb * bb)) {
        let Some(g) = matrix.get(r / GROUP * group..(r / GROUP + 1) * group) else {
            return;
        };
        for (blk, dst) in g.chunks_exact(gb).zip(dst.chunks_exact_mut(bb)) {
            unpack_block(dtype, blk, r % GROUP, dst);
        }
    }
}

/// Offset of the quant bytes in a file-layout block: after `d`, and for Q5_0 `qh`.
fn qs_in_block(dtype: DType) -> usize {
    if dtype == DType::Q5_0 {
        6
    } else {
        2
    }
}

/// Quant bytes per row in a block (nibble pairs for Q4_0 and Q5_0) over four: the `v` vectors of
/// a group block.
pub const fn chunks(dtype: DType) -> usize {
    match dtype {
        DType::Q8_0 => 8,
        _ => 4,
    }
}

/// One group block `out` from the same block of four rows in the file's layout.
fn pack_block(dtype: DType, src: [&[u8]; GROUP], out: &mut [u8]) {
    let qs = qs_in_block(dtype);
    for (i, s) in src.iter().enumerate() {
        out[2 * i..2 * i + 2].copy_from_slice(&s[..2]);
        for k in 0..chunks(dtype) {
            let at = QS + 16 * k + 4 * i;
            out[at..at + 4].copy_from_slice(&s[qs + 4 * k..qs + 4 * k + 4]);
        }
    }
    if dtype == DType::Q5_0 {
        let qh = src.map(|s| u32::from_le_bytes([s[2], s[3], s[4], s[5]]));
        for (lane, byte) in out[Q5_HIGH..Q5_HIGH + 16].iter_mut().enumerate() {
            let (h, m) = (qh[lane / 4], lane % 4);
            *byte = (0..8).fold(0, |acc, plane| {
                acc | ((((h >> fifth_bit(plane, m)) & 1) as u8) << plane)
            });
        }
    }
}

/// Which bit of a row's `qh` bit plane `plane` holds in lane `4i + m` (see the module docs).
fn fifth_bit(plane: usize, m: usize) -> usize {
    let (k, high) = (plane / 2, plane % 2);
    16 * high + 4 * k + m
}

/// Row `lane`'s block in the file's layout, from one group block.
fn unpack_block(dtype: DType, blk: &[u8], lane: usize, dst: &mut [u8]) {
    let qs = qs_in_block(dtype);
    dst[..2].copy_from_slice(&blk[2 * lane..2 * lane + 2]);
    for k in 0..chunks(dtype) {
        let at = QS + 16 * k + 4 * lane;
        dst[qs + 4 * k..qs + 4 * k + 4].copy_from_slice(&blk[at..at + 4]);
    }
    if dtype == DType::Q5_0 {
        let mut qh = 0u32;
        for m in 0..4 {
            let byte = blk[Q5_HIGH + 4 * lane + m];
            for plane in 0..8 {
                qh |= (((byte >> plane) & 1) as u32) << fifth_bit(plane, m);
            }
        }
        dst[2..6].copy_from_slice(&qh.to_le_bytes());
    }
}

/// Bytes per group of `nb`-block `dtype` rows, when `len` is a whole number of groups.
fn check_groups(dtype: DType, len: usize, nb: usize) -> Result<usize> {
    if !supports(dtype) {
        return Err(Error::UnsupportedDType {
            op: "interleave",
            dtype,
        });
    }
    let group = nb
        .checked_mul(group_block(dtype))
        .ok_or_else(|| Error::overflow("×4 group", &[nb, group_block(dtype)]))?;
    if group == 0 || len % group != 0 {
        return Err(Error::shape(
            "interleave",
            format!("whole groups of {GROUP} rows of {nb} {dtype} blocks"),
            format!("{len} bytes"),
        ));
    }
    Ok(group)
}
