//! SIMD128 dots of the formats a K-quant mix (the Q4_K_M files people download) puts in its
//! matrices: Q4_K, Q5_K and Q6_K against Q8_K activations, and Q5_0 (the fallback for rows that
//! are not whole super-blocks) against Q8_0.
//!
//! Each twin in `kquants.rs` / `legacy.rs` unpacks a block to bytes, then sums. Here the quants
//! are unpacked in registers, sixteen at a time, and the integer sums stay exact: products of an
//! unsigned quant and an activation (|x| ≤ 128) are added in i16 lanes, four a lane for Q4_K /
//! Q5_K (q ≤ 31: ≤ 15,872), two for Q6_K (q ≤ 63: ≤ 16,128), then widened while multiplied by
//! the sub-block scale (`i32x4_dot_i16x8`). What the quants' offsets take off (Q4_K/Q5_K's mins,
//! Q6_K's 32) comes once a block from the activations' 16-element sums (`bsums`). The f32 steps
//! are the twins' own expressions in the twins' order, so the results are bit-identical (tests
//! check).

use core::arch::wasm32::*;

use super::simd128::{bits_to_4, dot_blocks4, f32_lanes, high_nibbles, hsum4_i32, load16};
use crate::dtype::DType;
use crate::quant::blocks::read_f16;
use crate::quant::kquants::{read_f32, scales_mins_k4, QK_K};

const Q5_0_BYTES: usize = DType::Q5_0.block_bytes();
const Q8_0_BYTES: usize = DType::Q8_0.block_bytes();
const Q4_K_BYTES: usize = DType::Q4_K.block_bytes();
const Q5_K_BYTES: usize = DType::Q5_K.block_bytes();
const Q6_K_BYTES: usize = DType::Q6_K.block_bytes();
const Q8_K_BYTES: usize = DType::Q8_K.block_bytes();

/// Eight i16 lanes, lane `i` = `a[i]·b[i] + a[i + 8]·b[i + 8]` over signed bytes (exact).
/// Relaxed builds take the i8 × i7 dot instead (see [`dot16u`]).
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
fn dot16(a: v128, b: v128) -> v128 {
    i16x8_add(i16x8_extmul_low_i8x16(a, b), i16x8_extmul_high_i8x16(a, b))
}

/// [`dot16`] for unsigned quants `u` (at most 63): relaxed builds take the i8 × i7 dot, which is
/// deterministic for them and sums adjacent pairs instead (at most 2·128·63, no saturation).
/// The lanes differ, their total does not, and every caller only uses totals.
#[inline(always)]
fn dot16u(u: v128, x: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    return i16x8_relaxed_dot_i8x16_i7x16(x, u);
    #[cfg(not(target_feature = "relaxed-simd"))]
    return dot16(u, x);
}

/// [`dot16`] of the signed quants `u − K` (Q5_0's `K` = 16; `u` the unsigned ones, at most 31):
/// relaxed builds take `dot(x, u) − dot(x, K)` on deterministic i8 × i7 dots, the difference at
/// most 4·16·128. (Q6_K's offset of 32 comes off once a block instead: [`q6_k_offset`].)
#[inline(always)]
fn dot16_minus<const K: u8>(u: v128, x: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    return i16x8_sub(
        i16x8_relaxed_dot_i8x16_i7x16(x, u),
        i16x8_relaxed_dot_i8x16_i7x16(x, u8x16_splat(K)),
    );
    #[cfg(not(target_feature = "relaxed-simd"))]
    return dot16(i8x16_sub(u, u8x16_splat(K)), x);
}

/// `scale · Σ` of eight i16 partial sums, as four i32 partials.
#[inline(always)]
fn scaled(partials: v128, scale: i32) -> v128 {
    i32x4_dot_i16x8(partials, i16x8_splat(scale as i16))
}

#[inline(always)]
fn hsum(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v)
        + i32x4_extract_lane::<1>(v)
        + i32x4_extract_lane::<2>(v)
        + i32x4_extract_lane::<3>(v)
}

/// Eight of a Q8_K block's sixteen i16 `bsums` (sums of 16 quants each): `k` 0 the first eight,
/// 1 the last.
#[inline(always)]
fn bsums8(bsums: &[u8], k: usize) -> v128 {
    load16(&bsums[16 * k..])
}

/// `Σ_j m_j · (bsum_2j + bsum_2j+1)` as four i32 partials: a Q4_K/Q5_K block's mins against the
/// Q8_K sums of their 32-element sub-blocks.
#[inline(always)]
fn mins_dot(m: [u8; 8], bsums: &[u8]) -> v128 {
    let m = u16x8_extend_low_u8x16(u64x2_splat(u64::from_le_bytes(m)));
    let lo = i16x8_shuffle::<0, 0, 1, 1, 2, 2, 3, 3>(m, m);
    let hi = i16x8_shuffle::<4, 4, 5, 5, 6, 6, 7, 7>(m, m);
    i32x4_add(
        i32x4_dot_i16x8(bsums8(bsums, 0), lo),
        i32x4_dot_i16x8(bsums8(bsums, 1), hi),
    )
}

/// `32 · Σ_g scales_g · bsum_g` as four i32 partials: what the offset of a Q6_K block's unsigned
/// quants (`q6 = u − 32`) takes off `Σ_g scales_g Σ u·x` (its groups of 16 are the bsums').
#[inline(always)]
fn q6_k_offset(scales: &[u8], bsums: &[u8]) -> v128 {
    let sc = load16(scales);
    let sum = i32x4_add(
        i32x4_dot_i16x8(bsums8(bsums, 0), i16x8_extend_low_i8x16(sc)),
        i32x4_dot_i16x8(bsums8(bsums, 1), i16x8_extend_high_i8x16(sc)),
    );
    i32x4_shl(sum, 5)
}

/// The sixteen unsigned quants (0..=31) of a Q5_0 half: nibbles `nib` plus bit 4 from the 16-bit
/// word in bytes `2h`, `2h + 1` of `qh` (`h` 0 for elements 0..16, 1 for 16..32).
#[inline(always)]
fn q5_0_half(nib: v128, qh: v128, h: usize) -> v128 {
    // Byte i of the result takes byte 2h + i/8 of qh; its bit i%8 is element i's 5th bit.
    let spread = if h == 0 {
        i8x16_swizzle(qh, u8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1))
    } else {
        i8x16_swizzle(qh, u8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3))
    };
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let set = i8x16_eq(v128_and(spread, bit), bit);
    v128_or(nib, v128_and(set, u8x16_splat(16)))
}

/// See `legacy::vec_dot_q5_0_q8_0` (the twin: same integer block sums, same four-lane order).
pub fn vec_dot_q5_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q5_0_BYTES, Q8_0_BYTES, |wb, xb, c| {
        let mask = c.nibble;
        let qh = u32x4_splat(u32::from_le_bytes([wb[2], wb[3], wb[4], wb[5]]));
        let qs = load16(&wb[6..]);
        let lo = q5_0_half(v128_and(qs, mask), qh, 0);
        let hi = q5_0_half(high_nibbles(qs, mask), qh, 1);
        let (x0, x1) = (load16(&xb[2..]), load16(&xb[18..]));
        let sum = i16x8_add(dot16_minus::<16>(lo, x0), dot16_minus::<16>(hi, x1));
        i32x4_extadd_pairwise_i16x8(sum)
    })
}

/// Sixteen quants of chunk `c`, half `half` of a Q4_K/Q5_K super-block: elements
/// `64c + 16·half ..` (sub-block 2c, low nibbles) and `64c + 32 + 16·half ..` (sub-block 2c + 1,
/// high nibbles), with bit 4 from the Q5_K plane `qh` when there is one (bit 2c of `qh[l]` for
/// the first, bit 2c + 1 for the second).
#[inline(always)]
fn q45_k_half(qh: Option<&[u8]>, qs: &[u8], c: usize, half: usize) -> (v128, v128) {
    let (q, mask) = (load16(&qs[32 * c + 16 * half..]), u8x16_splat(0x0F));
    let (mut lo, mut hi) = (v128_and(q, mask), high_nibbles(q, mask));
    if let Some(h) = qh {
        let h = load16(&h[16 * half..]);
        let bit = |k: u32| bits_to_4(h, k, u8x16_splat(0x10));
        lo = v128_or(lo, bit(2 * c as u32));
        hi = v128_or(hi, bit(2 * c as u32 + 1));
    }
    (lo, hi)
}

/// The four quarters (elements `l..`, `l + 32..`, `l + 64..`, `l + 96..`, sixteen each) of one
/// 128-element Q6_K half as unsigned 6-bit quants, from its `ql` (64 bytes) and `qh` (32).
#[inline(always)]
fn q6_k_quarters(ql: &[u8], qh: &[u8], l: usize) -> [v128; 4] {
    q6_k_unpack(load16(&ql[l..]), load16(&ql[l + 32..]), load16(&qh[l..]))
}

/// The four quarters' quants from the sixteen `ql` bytes `a` (at `l`), `b` (at `l + 32`) and the
/// `qh` bytes `h` (at `l`): low then high nibbles of `a` and `b` in turn, each with its bit pair
/// of `h` (bits 0–1, 2–3, 4–5, 6–7) on top.
#[inline(always)]
pub(crate) fn q6_k_unpack(a: v128, b: v128, h: v128) -> [v128; 4] {
    q6_k_unpack_with(a, b, h, u8x16_splat(0x0F), u8x16_splat(0x30))
}

/// [`q6_k_unpack`] with its constants passed in (`mask` every byte 0x0F, `top` 0x30; see
/// `simd128::Consts`).
#[inline(always)]
pub(crate) fn q6_k_unpack_with(a: v128, b: v128, h: v128, mask: v128, top: v128) -> [v128; 4] {
    let top = |k: u32| bits_to_4(h, k, top);
    [
        v128_or(v128_and(a, mask), top(0)),
        v128_or(v128_and(b, mask), top(2)),
        v128_or(high_nibbles(a, mask), top(4)),
        v128_or(high_nibbles(b, mask), top(6)),
    ]
}

/// `Σ_j sc_j · Σ q·x` over the eight 32-element sub-blocks of one Q4_K/Q5_K super-block; `qh` is
/// the Q5_K high-bit plane (32 bytes) or `None`, `qs` the 128 nibble bytes, `qx` 256 Q8_K quants.
#[inline(always)]
fn q45_k_isum(qh: Option<&[u8]>, qs: &[u8], qx: &[u8], sc: &[u8; 8]) -> i32 {
    let mut acc = i32x4_splat(0);
    for c in 0..4 {
        let mut sub = [i16x8_splat(0); 2];
        for half in 0..2 {
            let (lo, hi) = q45_k_half(qh, qs, c, half);
            let x = &qx[64 * c + 16 * half..];
            sub[0] = i16x8_add(sub[0], dot16u(lo, load16(x)));
            sub[1] = i16x8_add(sub[1], dot16u(hi, load16(&x[32..])));
        }
        acc = i32x4_add(acc, scaled(sub[0], sc[2 * c] as i32));
        acc = i32x4_add(acc, scaled(sub[1], sc[2 * c + 1] as i32));
    }
    hsum(acc)
}

/// Shared Q4_K/Q5_K · Q8_K dot; see `kquants::vec_dot_q45_k_q8_k` (the twin).
#[inline(always)]
fn vec_dot_q45_k_q8_k(w: &[u8], x: &[u8], wb_len: usize) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w.chunks_exact(wb_len).zip(x.chunks_exact(Q8_K_BYTES)) {
        let (sc, m) = scales_mins_k4(&wb[4..16]);
        let msum = hsum(mins_dot(m, &xb[4 + QK_K..]));
        let (qh, qs) = match wb_len {
            Q5_K_BYTES => (Some(&wb[16..48]), &wb[48..]),
            _ => (None, &wb[16..]),
        };
        let isum = q45_k_isum(qh, qs, &xb[4..4 + QK_K], &sc);
        let dx = read_f32(xb);
        sum += read_f16(&wb[0..2]) * dx * isum as f32;
        sum -= read_f16(&wb[2..4]) * dx * msum as f32;
    }
    sum
}

/// See `kquants::vec_dot_q4_k_q8_k`.
pub fn vec_dot_q4_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    vec_dot_q45_k_q8_k(w, x, Q4_K_BYTES)
}

/// See `kquants::vec_dot_q5_k_q8_k`.
pub fn vec_dot_q5_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    vec_dot_q45_k_q8_k(w, x, Q5_K_BYTES)
}

/// `Σ_g scales[g] · Σ (q6 − 32)·x` over one Q6_K super-block (`kquants::unpack_q6_k` gives the
/// layout: per 128-element half, four quarters of 32 from `ql`'s nibbles and `qh`'s bit pairs),
/// `xb` its Q8_K block: the unsigned quants' dots, less [`q6_k_offset`].
#[inline(always)]
fn q6_k_isum(wb: &[u8], xb: &[u8]) -> i32 {
    let qx = &xb[4..4 + QK_K];
    let mut acc = i32x4_neg(q6_k_offset(&wb[192..208], &xb[4 + QK_K..]));
    for n in 0..2 {
        let (ql, qh, x) = (&wb[64 * n..], &wb[128 + 32 * n..], &qx[128 * n..]);
        let scales = &wb[192 + 8 * n..200 + 8 * n];
        for l in [0, 16] {
            for (q, v) in q6_k_quarters(ql, qh, l).into_iter().enumerate() {
                let e = 32 * q + l; // element index within the half; its group is e / 16.
                let partial = dot16u(v, load16(&x[e..]));
                acc = i32x4_add(acc, scaled(partial, scales[e / 16] as i8 as i32));
            }
        }
    }
    hsum(acc)
}

/// See `kquants::vec_dot_q6_k_q8_k` (the twin).
pub fn vec_dot_q6_k_q8_k(w: &[u8], x: &[u8]) -> f32 {
    let mut sum = 0.0f32;
    for (wb, xb) in w.chunks_exact(Q6_K_BYTES).zip(x.chunks_exact(Q8_K_BYTES)) {
        let isum = q6_k_isum(wb, xb);
        sum += read_f16(&wb[208..210]) * read_f32(xb) * isum as f32;
    }
    sum
}

/// The K-format weight dots over four activation rows at once (a prefill): each weight vector is
/// unpacked once and multiplied with the four rows' quants, the four exact i32 sums are
/// transposed into one vector (lane = row), and each lane applies the one-row dot's f32 steps in
/// its order, so every output has the bits of [`vec_dot_q4_k_q8_k`] / [`vec_dot_q5_k_q8_k`] /
/// [`vec_dot_q6_k_q8_k`] for its row.
struct Rows4<'a> {
    x: [&'a [u8]; 4],
}

impl Rows4<'_> {
    /// The four rows' Q8_K scales of super-block `sb`.
    fn dx(&self, sb: usize) -> v128 {
        let at = |r: usize| read_f32(&self.x[r][sb * Q8_K_BYTES..]);
        f32x4(at(0), at(1), at(2), at(3))
    }

    /// Row `r`'s sixteen i16 sums of super-block `sb` (32 bytes).
    fn bsums(&self, r: usize, sb: usize) -> &[u8] {
        &self.x[r][sb * Q8_K_BYTES + 4 + QK_K..][..32]
    }

    /// Sixteen quants of row `r` at element `e` of super-block `sb`.
    fn quants(&self, r: usize, sb: usize, e: usize) -> v128 {
        load16(&self.x[r][sb * Q8_K_BYTES + 4 + e..])
    }
}

/// One Q6_K weight row against four Q8_K rows.
fn q6_k_row4(w: &[u8], x: &Rows4) -> [f32; 4] {
    let mut sum = f32x4_splat(0.0);
    for (sb, wb) in w.chunks_exact(Q6_K_BYTES).enumerate() {
        let mut acc: [v128; 4] =
            core::array::from_fn(|r| i32x4_neg(q6_k_offset(&wb[192..208], x.bsums(r, sb))));
        for n in 0..2 {
            let (ql, qh) = (&wb[64 * n..], &wb[128 + 32 * n..]);
            let scales = &wb[192 + 8 * n..200 + 8 * n];
            for l in [0, 16] {
                for (q, v) in q6_k_quarters(ql, qh, l).into_iter().enumerate() {
                    let e = 32 * q + l;
                    let sc = scales[e / 16] as i8 as i32;
                    for (r, a) in acc.iter_mut().enumerate() {
                        let p = dot16u(v, x.quants(r, sb, 128 * n + e));
                        *a = i32x4_add(*a, scaled(p, sc));
                    }
                }
            }
        }
        let isum = f32x4_convert_i32x4(hsum4_i32(acc[0], acc[1], acc[2], acc[3]));
        let d = f32x4_splat(read_f16(&wb[208..210]));
        sum = f32x4_add(sum, f32x4_mul(f32x4_mul(d, x.dx(sb)), isum));
    }
    f32_lanes(sum)
}

/// One Q4_K (`wb_len` 144) or Q5_K (176) weight row against four Q8_K rows.
fn q45_k_row4(w: &[u8], wb_len: usize, x: &Rows4) -> [f32; 4] {
    let mut sum = f32x4_splat(0.0);
    for (sb, wb) in w.chunks_exact(wb_len).enumerate() {
        let (sc, m) = scales_mins_k4(&wb[4..16]);
        let (qh, qs) = match wb_len {
            Q5_K_BYTES => (Some(&wb[16..48]), &wb[48..]),
            _ => (None, &wb[16..]),
        };
        let mut acc = [i32x4_splat(0); 4];
        for c in 0..4 {
            for half in 0..2 {
                let (lo, hi) = q45_k_half(qh, qs, c, half);
                let e = 64 * c + 16 * half;
                for (r, a) in acc.iter_mut().enumerate() {
                    let p_lo = scaled(dot16u(lo, x.quants(r, sb, e)), sc[2 * c] as i32);
                    let p_hi = scaled(dot16u(hi, x.quants(r, sb, e + 32)), sc[2 * c + 1] as i32);
                    *a = i32x4_add(*a, i32x4_add(p_lo, p_hi));
                }
            }
        }
        let mins: [v128; 4] = core::array::from_fn(|r| mins_dot(m, x.bsums(r, sb)));
        let isum = f32x4_convert_i32x4(hsum4_i32(acc[0], acc[1], acc[2], acc[3]));
        let dx = x.dx(sb);
        let (d, dmin) = (read_f16(&wb[0..2]), read_f16(&wb[2..4]));
        sum = f32x4_add(sum, f32x4_mul(f32x4_mul(f32x4_splat(d), dx), isum));
        let msums = f32x4_convert_i32x4(hsum4_i32(mins[0], mins[1], mins[2], mins[3]));
        sum = f32x4_sub(sum, f32x4_mul(f32x4_mul(f32x4_splat(dmin), dx), msums));
    }
    f32_lanes(sum)
}

/// `out[r·n_w + o] = w_o · x_r` for `n_w = out.len() / rows` Q4_K, Q5_K or Q6_K (`dtype`) weight
/// rows against `rows` Q8_K activation rows of `x_row` bytes in `x`: rows in tiles of four, the
/// rest one at a time (see `scalar::gemm_k_q8_k`, whose bits this reproduces). Any other
/// `dtype` writes nothing.
pub fn gemm_k_q8_k(dtype: DType, w: &[u8], x: &[u8], x_row: usize, out: &mut [f32]) {
    let (dot, row4): (Dot, Row4) = match dtype {
        DType::Q4_K => (vec_dot_q4_k_q8_k, |w, x| q45_k_row4(w, Q4_K_BYTES, x)),
        DType::Q5_K => (vec_dot_q5_k_q8_k, |w, x| q45_k_row4(w, Q5_K_BYTES, x)),
        DType::Q6_K => (vec_dot_q6_k_q8_k, q6_k_row4),
        _ => return,
    };
    let rows = x.len() / x_row.max(1);
    let tiles = rows / 4 * 4;
    let n_w = out.len() / rows.max(1);
    let w_row = (x_row / Q8_K_BYTES) * dtype.block_bytes();
    for (o, wr) in w.chunks_exact(w_row.max(1)).take(n_w).enumerate() {
        for r0 in (0..tiles).step_by(4) {
            let xs = Rows4 {
                x: core::array::from_fn(|k| &x[(r0 + k) * x_row..(r0 + k + 1) * x_row]),
            };
            for (k, y) in row4(wr, &xs).into_iter().enumerate() {
                out[(r0 + k) * n_w + o] = y;
            }
        }
    }
    let (x, out) = (&x[tiles * x_row..], &mut out[tiles * n_w..]);
    super::scalar::k_rows_one_by_one(dot, dtype.block_bytes(), w, x, x_row, out);
}

type Dot = fn(&[u8], &[u8]) -> f32;
type Row4 = fn(&[u8], &Rows4) -> [f32; 4];
