//! ggml's 256-element "K" super-blocks: Q4_K, Q5_K, Q6_K weights and the Q8_K activations they
//! are multiplied with.
//!
//! Layouts (little-endian, packed, element `e` of the super-block):
//! - **Q4_K** (144 B): `d:f16 | dmin:f16 | scales[12] | qs[128]`. Eight sub-blocks of 32 with a
//!   6-bit scale `sc` and min `m` each (see `get_scale_min_k4`). For chunk `c < 4`, byte
//!   `qs[32c + l]` holds element `64c + l` (low nibble) and `64c + 32 + l` (high nibble).
//!   `x = d·sc·q − dmin·m`.
//! - **Q5_K** (176 B): `d | dmin | scales[12] | qh[32] | qs[128]`, as Q4_K plus a 5th bit: bit
//!   `2c` of `qh[l]` for element `64c + l`, bit `2c + 1` for element `64c + 32 + l`.
//! - **Q6_K** (210 B): `ql[128] | qh[64] | scales:i8[16] | d:f16`. Sixteen groups of 16, group
//!   `g` scaled by `scales[g]`; `x = d·sc·(q − 32)` with the 6-bit `q` spread over `ql`/`qh`
//!   as `unpack_q6_k` describes.
//! - **Q8_K** (292 B): `d:f32 | qs:i8[256] | bsums:i16[16]`, `bsums[g] = Σ qs[16g..16g + 16]`,
//!   `x = d·q`. The f32 scale and the precomputed group sums exist for the fused dots: the
//!   Q4_K/Q5_K mins term needs only `Σ q8` per sub-block, which `bsums` supplies.

use crate::dtype::DType;

use super::blocks::read_f16;
use super::kernels::scalar::isum_i8;

/// Elements per K super-block.
pub const QK_K: usize = 256;

const _: () = assert!(DType::Q4_K.block_bytes() == 4 + 12 + QK_K / 2);
const _: () = assert!(DType::Q5_K.block_bytes() == 4 + 12 + QK_K / 8 + QK_K / 2);
const _: () = assert!(DType::Q6_K.block_bytes() == QK_K / 2 + QK_K / 4 + QK_K / 16 + 2);
const _: () = assert!(DType::Q8_K.block_bytes() == 4 + QK_K + 2 * QK_K / 16);

/// Scale and min of sub-block `j < 8` from the 12 packed `scales` bytes of a Q4_K/Q5_K block.
///
/// Sixteen 6-bit values fit in 12 bytes: sub-blocks 0..4 keep scale and min in the low 6 bits of
/// bytes `j` and `j + 4`; sub-blocks 4..8 put their low 4 bits in the nibbles of byte `j + 4`
/// and their top 2 bits in the otherwise unused top bits of bytes `j − 4` (scale) and `j` (min).
#[inline]
pub(crate) fn get_scale_min_k4(j: usize, scales: &[u8]) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        (
            (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4),
            (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4),
        )
    }
}

/// All eight `(scale, min)` pairs of [`get_scale_min_k4`] at once, as `(scales, mins)`: the
/// same bit moves done on three little-endian words, four sub-blocks a word (the SIMD dots
/// unpack a block's scales this way rather than one sub-block at a time).
#[cfg(any(test, all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline]
pub(crate) fn scales_mins_k4(scales: &[u8]) -> ([u8; 8], [u8; 8]) {
    let word =
        |i: usize| u32::from_le_bytes([scales[i], scales[i + 1], scales[i + 2], scales[i + 3]]);
    let (a, b, c) = (word(0), word(4), word(8));
    let (low6, low4, top2) = (0x3F3F_3F3F, 0x0F0F_0F0F, 0x0303_0303);
    let sc_hi = (c & low4) | (((a >> 6) & top2) << 4);
    let m_hi = ((c >> 4) & low4) | (((b >> 6) & top2) << 4);
    let join = |lo: u32, hi: u32| (lo as u64 | (hi as u64) << 32).to_le_bytes();
    (join(a & low6, sc_hi), join(b & low6, m_hi))
}

/// The quants of one Q4_K super-block (4-bit) or, for `dtype == Q5_K`, Q5_K super-block (5-bit,
/// `qh` at bytes 16..48 in front of `qs`), in element order.
#[inline]
fn unpack_q45_k(dtype: DType, block: &[u8]) -> [u8; QK_K] {
    let (qh, qs) = if dtype == DType::Q5_K {
        (Some(&block[16..48]), &block[48..])
    } else {
        (None, &block[16..])
    };
    let mut q = [0u8; QK_K];
    for c in 0..4 {
        for l in 0..32 {
            let b = qs[32 * c + l];
            let (h_lo, h_hi) = qh.map_or((0, 0), |h| {
                (
                    ((h[l] >> (2 * c)) & 1) << 4,
                    ((h[l] >> (2 * c + 1)) & 1) << 4,
                )
            });
            q[64 * c + l] = (b & 0x0F) | h_lo;
            q[64 * c + 32 + l] = (b >> 4) | h_hi;
        }
    }
    q
}

/// The signed quants `q − 32` of one Q6_K super-block, in element order.
///
/// Each half `n` of 128 elements uses `ql[64n..]` and `qh[32n..]`; for `l < 32` the four
/// quarters take their low nibble from `ql[l]` (lo), `ql[l + 32]` (lo), `ql[l]` (hi),
/// `ql[l + 32]` (hi) and their top two bits from bits 0–1, 2–3, 4–5, 6–7 of `qh[l]`.
#[inline]
fn unpack_q6_k(ql: &[u8], qh: &[u8]) -> [i8; QK_K] {
    let mut q = [0i8; QK_K];
    for n in 0..2 {
        let (ql, qh, y) = (&ql[64 * n..], &qh[32 * n..], &mut q[128 * n..]);
        for l in 0..32 {
            let h = qh[l];
            y[l] = ((ql[l] & 0x0F) | ((h & 3) << 4)) as i8 - 32;
            y[l + 32] = ((ql[l + 32] & 0x0F) | (((h >> 2) & 3) << 4)) as i8 - 32;
            y[l + 64] = ((ql[l] >> 4) | (((h >> 4) & 3) << 4)) as i8 - 32;
            y[l + 96] = ((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) as i8 - 32;
        }
    }
    q
}

/// Shared Q4_K/Q5_K dequantizer.
fn dequantize_q45_k(dtype: DType, bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(dtype.block_bytes())
        .zip(out.chunks_exact_mut(QK_K))
    {
        let (d, dmin) = (read_f16(&block[0..2]), read_f16(&block[2..4]));
        let scales = &block[4..16];
        let q = unpack_q45_k(dtype, block);
        for (j, (ys, qj)) in y.chunks_exact_mut(32).zip(q.chunks_exact(32)).enumerate() {
            let (sc, m) = get_scale_min_k4(j, scales);
            // ggml's order: (d·sc)·q − dmin·m.
            let (d1, m1) = (d * sc as f32, dmin * m as f32);
            for (o, &v) in ys.iter_mut().zip(qj) {
                *o = d1 * v as f32 - m1;
            }
        }
    }
}

/// Dequantizes whole Q4_K super-blocks (144 bytes → 256 floats each).
pub fn dequantize_row_q4_k(bytes: &[u8], out: &mut [f32]) {
    dequantize_q45_k(DType::Q4_K, bytes, out);
}

/// Dequantizes whole Q5_K super-blocks (176 bytes → 256 floats each).
pub fn dequantize_row_q5_k(bytes: &[u8], out: &mut [f32]) {
    dequantize_q45_k(DType::Q5_K, bytes, out);
}

/// Dequantizes whole Q6_K super-blocks (210 bytes → 256 floats each).
pub fn dequantize_row_q6_k(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q6_K.block_bytes())
        .zip(out.chunks_exact_mut(QK_K))
    {
        let d = read_f16(&block[208..210]);
        let q = unpack_q6_k(&block[..128], &block[128..192]);
        for ((ys, qg), &sc) in y
            .chunks_exact_mut(16)
            .zip(q.chunks_exact(16))
            .zip(&block[192..208])
        {
            // ggml's order: (d·sc)·q.
            let ds = d * (sc as i8) as f32;
            for (o, &v) in ys.iter_mut().zip(qg) {
                *o = ds * v as f32;
            }
        }
    }
}

#[inline]
pub(crate) fn read_f32(b: &[u8]) -> f32 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Dequantizes whole Q8_K super-blocks (292 bytes → 256 floats each): `x = d·q`.
pub fn dequantize_row_q8_k(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q8_K.block_bytes())
        .zip(out.chunks_exact_mut(QK_K))
    {
        let d = read_f32(block);
        for (o, &q) in y.iter_mut().zip(&block[4..4 + QK_K]) {
            *o = d * (q as i8) as f32;
        }
    }
}

/// ggml's `nearest_int`: adding 1.5·2^23 makes the f32 adder round to an integer (halves to
/// even) and leaves it in the low mantissa bits. Exact for |v| < 2^22, which Q8_K guarantees
/// (|v| ≤ 127 up to rounding); any other input (NaN) gives an in-range garbage value, no panic.
#[inline]
fn nearest_int(v: f32) -> i32 {
    let i = (v + 12_582_912.0).to_bits() as i32;
    (i & 0x007F_FFFF) - 0x0040_0000
}

/// Quantizes `x` (a multiple of 256 long) to Q8_K super-blocks in `out`, as ggml's
/// `quantize_row_q8_K_ref`.
///
/// `max` is the signed element of largest magnitude (first on ties), `iscale = −127/max`,
/// `q = min(127, nearest_int(iscale·x))` (halves to even), `d = 1/iscale` stored as f32, so `d`
/// has the opposite sign of `max`. An all-zero block stores `d = 0`, `qs = 0` and `bsums = 0`.
pub fn quantize_row_q8_k(x: &[f32], out: &mut [u8]) {
    for (xb, ob) in x
        .chunks_exact(QK_K)
        .zip(out.chunks_exact_mut(DType::Q8_K.block_bytes()))
    {
        let (mut amax, mut max) = (0.0f32, 0.0f32);
        for &v in xb {
            if v.abs() > amax {
                amax = v.abs();
                max = v;
            }
        }
        let (d_bytes, rest) = ob.split_at_mut(4);
        let (qs, bsums) = rest.split_at_mut(QK_K);
        if amax == 0.0 {
            d_bytes.copy_from_slice(&0.0f32.to_le_bytes());
            qs.fill(0);
            bsums.fill(0);
            continue;
        }
        let iscale = -127.0 / max;
        for (q, &v) in qs.iter_mut().zip(xb) {
            *q = nearest_int(iscale * v).min(127) as i8 as u8;
        }
        for (s, g) in bsums.chunks_exact_mut(2).zip(qs.chunks_exact(16)) {
            let sum: i16 = g.iter().map(|&q| (q as i8) as i16).sum();
            s.copy_from_slice(&sum.to_le_bytes());
        }
        d_bytes.copy_from_slice(&(1.0 / iscale).to_le_bytes());
    }
}

/// `Σ bsums[2j] + bsums[2j + 1]`: the Q8_K quant sum over sub-block `j` (32 elements).
#[inline]
pub(crate) fn q8_k_sub_sum(bsums: &[u8], j: usize) -> i32 {
    let at = |g: usize| i16::from_le_bytes([bsums[2 * g], bsums[2 * g + 1]]) as i32;
    at(2 * j) + at(2 * j + 1)
}

/// Shared Q4_K/Q5_K · Q8_K dot.
fn vec_dot_q45_k_q8_k(dtype: DType, w: &[u8], x: &[u8]) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w
        .chunks_exact(dtype.block_bytes())
        .zip(x.chunks_exact(DType::Q8_K.block_bytes()))
    {
        let scales = &wb[4..16];
        let q = unpack_q45_k(dtype, wb);
        let (qx, bsums) = (&xb[4..4 + QK_K], &xb[4 + QK_K..]);
        let (mut isum, mut msum) = (0i32, 0i32);
        for (j, (qw, qa)) in q.chunks_exact(32).zip(qx.chunks_exact(32)).enumerate() {
            let (sc, m) = get_scale_min_k4(j, scales);
            // Q4_K/Q5_K quants are 0..=31, so they are also valid i8.
            let dot = isum_i8(bytemuck::cast_slice(qw), qa);
            isum += sc as i32 * dot;
            msum += m as i32 * q8_k_sub_sum(bsums, j);
        }
        let dx = read_f32(xb);
        sum += read_f16(&wb[0..2]) * dx * isum as f32;
        sum -= read_f16(&wb[2..4]) * dx * msum as f32;
    }
    sum
}

/// Σ over super-blocks of `d·d8·Σ_j sc_j·Σ q4·q8 − dmin·d8·Σ_j m_j·Σ q8`: one Q4_K row against
/// one Q8_K row.
///
/// The mins term uses the activation's `bsums` instead of re-summing `q8`. Both integer sums
/// are exact in i32; the f32 accumulation runs in super-block order, scale term then mins term.
pub fn vec_dot_q4_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    vec_dot_q45_k_q8_k(DType::Q4_K, w, x)
}

/// As [`vec_dot_q4_k_q8_k`] with Q5_K weights (5-bit `q`).
pub fn vec_dot_q5_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    vec_dot_q45_k_q8_k(DType::Q5_K, w, x)
}

/// Σ over super-blocks of `d6·d8·Σ_g scales[g]·Σ (q6 − 32)·q8`: one Q6_K row against one Q8_K
/// row (integer sums exact in i32, f32 accumulation in super-block order).
pub fn vec_dot_q6_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w
        .chunks_exact(DType::Q6_K.block_bytes())
        .zip(x.chunks_exact(DType::Q8_K.block_bytes()))
    {
        let q = unpack_q6_k(&wb[..128], &wb[128..192]);
        let qx = &xb[4..4 + QK_K];
        let mut isum = 0i32;
        for ((qw, qa), &sc) in q
            .chunks_exact(16)
            .zip(qx.chunks_exact(16))
            .zip(&wb[192..208])
        {
            let dot = isum_i8(qw, qa);
            isum += (sc as i8) as i32 * dot;
        }
        sum += read_f16(&wb[208..210]) * read_f32(xb) * isum as f32;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_mins_k4_unpack_as_get_scale_min_k4_does() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
            let mut packed = [0u8; 12];
            for b in &mut packed {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = (state >> 24) as u8;
            }
            let (sc, m) = scales_mins_k4(&packed);
            for j in 0..8 {
                assert_eq!(
                    (sc[j], m[j]),
                    get_scale_min_k4(j, &packed),
                    "{packed:?} j {j}"
                );
            }
        }
    }
}
