//! The other 32-element ggml blocks: Q4_1, Q5_0, Q5_1 (dequantizers) and the Q5_0 · Q8_0 dot.
//!
//! All share Q4_0's nibble order: byte `qs[j]` holds element `j` (low nibble) and `j + 16`
//! (high nibble). The 5-bit formats add `qh`, a little-endian u32 whose bit `e` is bit 4 of
//! element `e`. The `_1` formats are affine (`q·d + m`, `q` unsigned); the `_0` ones are
//! symmetric (`(q − 2^(bits−1))·d`).

use crate::dtype::DType;

use super::blocks::read_f16;
use super::kernels::scalar::{accumulate4, isum_i8};

/// Elements per Q4_1 / Q5_0 / Q5_1 block.
const QK: usize = 32;

const _: () = assert!(DType::Q4_1.block_bytes() == 4 + QK / 2);
const _: () = assert!(DType::Q5_0.block_bytes() == 2 + 4 + QK / 2);
const _: () = assert!(DType::Q5_1.block_bytes() == 4 + 4 + QK / 2);

/// The 5-bit quants of elements `j` and `j + 16` from nibble byte `b` and the high-bit word `h`.
#[inline]
fn q5_pair(b: u8, h: u32, j: usize) -> (i32, i32) {
    let lo = (b & 0x0F) as u32 | (((h >> j) & 1) << 4);
    let hi = (b >> 4) as u32 | (((h >> (j + 16)) & 1) << 4);
    (lo as i32, hi as i32)
}

#[inline]
fn read_qh(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Dequantizes whole Q4_1 blocks (`d:f16 | m:f16 | qs[16]`, 20 bytes): `x = q·d + m`.
pub fn dequantize_row_q4_1(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q4_1.block_bytes())
        .zip(out.chunks_exact_mut(QK))
    {
        let (d, m) = (read_f16(&block[0..2]), read_f16(&block[2..4]));
        for (j, &b) in block[4..].iter().enumerate() {
            y[j] = (b & 0x0F) as f32 * d + m;
            y[j + QK / 2] = (b >> 4) as f32 * d + m;
        }
    }
}

/// Dequantizes whole Q5_0 blocks (`d:f16 | qh:u32 | qs[16]`, 22 bytes): `x = (q − 16)·d`.
pub fn dequantize_row_q5_0(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q5_0.block_bytes())
        .zip(out.chunks_exact_mut(QK))
    {
        let d = read_f16(&block[0..2]);
        let h = read_qh(&block[2..6]);
        for (j, &b) in block[6..].iter().enumerate() {
            let (lo, hi) = q5_pair(b, h, j);
            y[j] = (lo - 16) as f32 * d;
            y[j + QK / 2] = (hi - 16) as f32 * d;
        }
    }
}

/// Dequantizes whole Q5_1 blocks (`d:f16 | m:f16 | qh:u32 | qs[16]`, 24 bytes): `x = q·d + m`.
pub fn dequantize_row_q5_1(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q5_1.block_bytes())
        .zip(out.chunks_exact_mut(QK))
    {
        let (d, m) = (read_f16(&block[0..2]), read_f16(&block[2..4]));
        let h = read_qh(&block[4..8]);
        for (j, &b) in block[8..].iter().enumerate() {
            let (lo, hi) = q5_pair(b, h, j);
            y[j] = lo as f32 * d + m;
            y[j + QK / 2] = hi as f32 * d + m;
        }
    }
}

/// Σ over blocks of `d_w · d_x · Σ (q5 − 16) · q8`: one Q5_0 row against one Q8_0 row.
///
/// Q5_0 pairs with Q8_0 activations (as in ggml), so the inner sum is exact in i32 and the f32
/// accumulation is the four-lane order of the Q4_0 kernel (`accumulate4`), which the SIMD twin
/// keeps with one accumulator per lane.
pub fn vec_dot_q5_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let blocks = w
        .chunks_exact(DType::Q5_0.block_bytes())
        .zip(x.chunks_exact(DType::Q8_0.block_bytes()))
        .map(|(wb, xb)| {
            let h = read_qh(&wb[2..6]);
            let mut q = [0i8; QK];
            for (j, &b) in wb[6..].iter().enumerate() {
                let (lo, hi) = q5_pair(b, h, j);
                q[j] = (lo - 16) as i8;
                q[j + QK / 2] = (hi - 16) as i8;
            }
            (read_f16(wb) * read_f16(xb), isum_i8(&q, &xb[2..]))
        });
    accumulate4(blocks)
}

/// Re-encodes whole Q5_0 blocks as Q8_0 blocks: the same scale, the quants `q − 16` as i8.
/// Exact, so a Q8_0 dot of the result has the integer block sums, the scales and therefore the
/// bits of the Q5_0 dot (both sum in the four-lane order); a prefill re-encodes a weight row
/// once and runs the tiled Q8_0 kernel over all activation rows.
pub fn q5_0_to_q8_0(src: &[u8], dst: &mut [u8]) {
    for (b, o) in src
        .chunks_exact(DType::Q5_0.block_bytes())
        .zip(dst.chunks_exact_mut(DType::Q8_0.block_bytes()))
    {
        o[..2].copy_from_slice(&b[..2]);
        let h = read_qh(&b[2..6]);
        for (j, &q) in b[6..].iter().enumerate() {
            let (lo, hi) = q5_pair(q, h, j);
            o[2 + j] = (lo - 16) as i8 as u8;
            o[2 + j + QK / 2] = (hi - 16) as i8 as u8;
        }
    }
}
