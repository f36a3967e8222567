//! Relaxed-SIMD dots of Q4_K, Q5_K and Q6_K matrices interleaved four rows at a time
//! (`quant::interleave`) against Q8_K activations.
//!
//! As for the legacy ×4 formats (`relaxed.rs`), each relaxed `i8×i7` dot pairs one activation
//! word, splat over the lanes, with four nibbles of each of the four rows, so a row's sums stay
//! in its lane. What a K block adds: the sub-blocks' scales multiply their i16 sums while
//! widening (`i32x4_dot_i16x8`, a row's scale in its lane's two i16 halves), and what the
//! quants' offsets take off (Q4_K/Q5_K's mins, Q6_K's 32) meets the activation's 16-element sums
//! (`bsums`) once a super-block. The layout puts a field of the four rows in one vector, so
//! scale unpacking (`kquants::scales_mins_k4` for Q4_K/Q5_K) runs on the four rows at once.
//! Integer sums are exact and each lane applies the twin's f32 steps in its order
//! (`kquants::vec_dot_q4_k_q8_k`, `vec_dot_q5_k_q8_k`, `vec_dot_q6_k_q8_k`), so the bits are the
//! file layout's.

use core::arch::wasm32::*;

use super::simd128::high_nibbles;
use super::simd128_kquants::q6_k_unpack;
use super::x4::{f16x4, put_groups};
use crate::dtype::DType;
use crate::quant::interleave::{
    group_block, GROUP, Q4_K_DMIN, Q4_K_QS, Q4_K_SCALES, Q5_K_QH, Q5_K_QS, Q6_K_QH, Q6_K_QL,
    Q6_K_SCALES,
};
use crate::quant::kquants::QK_K;

const Q8_K_BYTES: usize = DType::Q8_K.block_bytes();

/// `out[r·n_w + o] = w_o · x_r` for Q4_K, Q5_K or Q6_K (`dtype`) ×4 weights and the Q8_K
/// activation rows of `x_row` bytes in `x` (see `scalar::gemm_kx4_q8_k`, whose bits this
/// reproduces): four activation rows at a time share each unpacked weight vector, the rest go
/// one by one. Any other `dtype` writes nothing.
pub fn gemm_kx4_q8_k(dtype: DType, w: &[u8], x: &[u8], x_row: usize, out: &mut [f32]) {
    match dtype {
        DType::Q4_K => gemm_kx4::<Q45Kx4<false>>(w, x, x_row, out),
        DType::Q5_K => gemm_kx4::<Q45Kx4<true>>(w, x, x_row, out),
        DType::Q6_K => gemm_kx4::<Q6Kx4>(w, x, x_row, out),
        _ => {}
    }
}

/// A K format's ×4 layout and its super-block step.
trait KX4 {
    const DTYPE: DType;
    /// Adds one group super-block `blk`'s dots with the Q8_K blocks at `x` into `sum` (lane =
    /// weight row), the twin's f32 steps.
    ///
    /// # Safety
    /// `blk` must point at one whole group block and each `x` at one whole Q8_K block.
    unsafe fn step<const N: usize>(blk: *const u8, x: [*const u8; N], sum: &mut [v128; N]);
}

/// Q4_K, or with `Q5` Q5_K.
struct Q45Kx4<const Q5: bool>;
struct Q6Kx4;

/// The ×4 matmul of format `F` (see [`gemm_kx4_q8_k`]).
fn gemm_kx4<F: KX4>(w: &[u8], x: &[u8], x_row: usize, out: &mut [f32]) {
    let (nb, rows) = (x_row / Q8_K_BYTES, x.len() / x_row.max(1));
    if rows == 0 || nb == 0 {
        return out.fill(0.0);
    }
    let group = nb * group_block(F::DTYPE);
    let stride = out.len() / rows;
    let groups = (stride / GROUP).min(w.len() / group);
    let row = |r: usize| &x[r * x_row..(r + 1) * x_row];
    for g in 0..groups {
        let wg = &w[g * group..(g + 1) * group];
        let out = &mut out[g * GROUP..];
        let mut r = 0;
        while r + 4 <= rows {
            let xs: [&[u8]; 4] = core::array::from_fn(|i| row(r + i));
            // SAFETY: `wg` is one whole group of `nb` super-blocks and each row `nb` Q8_K blocks.
            let sums = unsafe { group_rows::<F, 4>(wg.as_ptr(), nb, xs.map(|x| x.as_ptr())) };
            put_groups(sums, &mut out[r * stride..], stride);
            r += 4;
        }
        for r in r..rows {
            // SAFETY: as above, for row `r`.
            let sums = unsafe { group_rows::<F, 1>(wg.as_ptr(), nb, [row(r).as_ptr()]) };
            put_groups(sums, &mut out[r * stride..], stride);
        }
    }
}

/// The four dots of one group against the `N` activation rows starting at `x`, lane = weight
/// row (the scales are finite: see `x4::group_rows`).
///
/// # Safety
/// `wg` must point at one group of `nb` super-blocks and each `x` at `nb` Q8_K blocks.
#[inline(always)]
unsafe fn group_rows<F: KX4, const N: usize>(
    wg: *const u8,
    nb: usize,
    x: [*const u8; N],
) -> [v128; N] {
    let mut sum = [f32x4_splat(0.0); N];
    for b in 0..nb {
        let blk = wg.add(b * group_block(F::DTYPE));
        F::step(blk, x.map(|x| x.add(b * Q8_K_BYTES)), &mut sum);
    }
    sum
}

/// A Q8_K block's f32 scale, splat.
#[inline(always)]
unsafe fn dx(xb: *const u8) -> v128 {
    f32x4_splat((xb as *const f32).read_unaligned())
}

impl<const Q5: bool> KX4 for Q45Kx4<Q5> {
    const DTYPE: DType = if Q5 { DType::Q5_K } else { DType::Q4_K };

    /// The twin's steps per row: `sum += d·dx·isum`, then `sum −= dmin·dx·msum`.
    #[inline(always)]
    unsafe fn step<const N: usize>(blk: *const u8, x: [*const u8; N], sum: &mut [v128; N]) {
        let d = f16x4(blk);
        let dmin = f16x4(blk.add(Q4_K_DMIN));
        let (sc, m) = scales_mins(blk.add(Q4_K_SCALES));
        let isum = q45_k_sums::<N, Q5>(blk, x.map(|x| x.add(4)), sc);
        for i in 0..N {
            let dx = dx(x[i]);
            let msum = mins_sums(m, x[i].add(4 + QK_K));
            let s = f32x4_add(
                sum[i],
                f32x4_mul(f32x4_mul(d, dx), f32x4_convert_i32x4(isum[i])),
            );
            sum[i] = f32x4_sub(s, f32x4_mul(f32x4_mul(dmin, dx), f32x4_convert_i32x4(msum)));
        }
    }
}

impl KX4 for Q6Kx4 {
    const DTYPE: DType = DType::Q6_K;

    /// The twin's step per row: `sum += d·dx·isum`, `isum = Σ_g sc_g Σ u·x − 32 Σ_g sc_g·bsum_g`
    /// (the unsigned quants `u = q + 32`).
    #[inline(always)]
    unsafe fn step<const N: usize>(blk: *const u8, x: [*const u8; N], sum: &mut [v128; N]) {
        let d = f16x4(blk);
        let sc: [v128; 4] =
            core::array::from_fn(|t| v128_load(blk.add(Q6_K_SCALES + 16 * t) as *const v128));
        let usum = q6_k_sums(blk, x.map(|x| x.add(4)), &sc);
        for i in 0..N {
            let offset = i32x4_shl(scaled_bsums(&sc, x[i].add(4 + QK_K)), 5);
            let isum = f32x4_convert_i32x4(i32x4_sub(usum[i], offset));
            sum[i] = f32x4_add(sum[i], f32x4_mul(f32x4_mul(d, dx(x[i])), isum));
        }
    }
}

/// The four rows' scales and mins from a group block's packed scale words (`s[3][16]`, a row a
/// lane), as `kquants::scales_mins_k4` unpacks one row's: `(scales, mins)`, each two vectors
/// whose lane `i` holds row `i`'s sub-blocks `0..4` (the first) and `4..8` (the second), a byte
/// each.
#[inline(always)]
unsafe fn scales_mins(s: *const u8) -> ([v128; 2], [v128; 2]) {
    let word = |w: usize| v128_load(s.add(16 * w) as *const v128);
    let (a, b, c) = (word(0), word(1), word(2));
    let (low6, low4, top2) = (
        u32x4_splat(0x3F3F_3F3F),
        u32x4_splat(0x0F0F_0F0F),
        u32x4_splat(0x0303_0303),
    );
    let top = |v: v128| u32x4_shl(v128_and(u32x4_shr(v, 6), top2), 4);
    let sc_hi = v128_or(v128_and(c, low4), top(a));
    let m_hi = v128_or(v128_and(u32x4_shr(c, 4), low4), top(b));
    ([v128_and(a, low6), sc_hi], [v128_and(b, low6), m_hi])
}

/// Byte `K` of each lane of `sc` in both i16 halves of the lane: a row's sub-block scale for
/// `i32x4_dot_i16x8` against that row's two i16 pair sums. (`K` is a constant so that the shifts
/// are: with a loop index, V8 got variable shifts and the unrolling was lost.)
#[inline(always)]
fn lane_scale<const K: u32>(sc: v128) -> v128 {
    let s = v128_and(u32x4_shr(sc, 8 * K), u32x4_splat(0xFF));
    v128_or(s, u32x4_shl(s, 16))
}

/// The four [`lane_scale`]s of `sc`'s bytes.
#[inline(always)]
fn lane_scales(sc: v128) -> [v128; 4] {
    [
        lane_scale::<0>(sc),
        lane_scale::<1>(sc),
        lane_scale::<2>(sc),
        lane_scale::<3>(sc),
    ]
}

/// `Σ_j sc_j · Σ q·x` over a Q4_K (or with `Q5` Q5_K) super-block's eight sub-blocks for each
/// of the `N` activation rows (`qx`: their 256 quants), lane = weight row.
#[inline(always)]
unsafe fn q45_k_sums<const N: usize, const Q5: bool>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: [v128; 2],
) -> [v128; N] {
    let (lo, hi) = (lane_scales(sc[0]), lane_scales(sc[1]));
    let scales = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
    let mut isum = [i32x4_splat(0); N];
    // A loop over the chunks, not eight copies of the sub-block: unrolled, the four-row tile ran
    // 2× slower in Chromium.
    for c in 0..4 {
        let x = qx.map(|x| x.add(64 * c));
        sub_block::<N, Q5, false>(blk, c, x, scales[2 * c], &mut isum);
        sub_block::<N, Q5, true>(blk, c, x, scales[2 * c + 1], &mut isum);
    }
    isum
}

/// Adds `scale · Σ q·x` over sub-block `j = 2c + HIGH` into `isum` (`x`: each row's quants from
/// element `64c`): chunk `c`'s low or high nibbles, with Q5_K's fifth bit `j` of `h`. The relaxed
/// dots add up in i16 and widen times the scale every eight (Q4_K: a pair is at most 2·15·128,
/// eight 30,720) or four (Q5_K: 2·31·128, four 31,744).
#[inline(always)]
unsafe fn sub_block<const N: usize, const Q5: bool, const HIGH: bool>(
    blk: *const u8,
    c: usize,
    x: [*const u8; N],
    scale: v128,
    isum: &mut [v128; N],
) {
    let (mask, widen_every) = (u8x16_splat(0x0F), if Q5 { 4 } else { 8 });
    let qs = blk.add(if Q5 { Q5_K_QS } else { Q4_K_QS });
    // Bit j of every byte, as a compare (a shift by it would be a variable one).
    let bit = u8x16_splat(1 << (2 * c + HIGH as usize));
    let mut acc = [i16x8_splat(0); N];
    for k in 0..8 {
        let v = v128_load(qs.add(16 * (8 * c + k)) as *const v128);
        let mut u = match HIGH {
            false => v128_and(v, mask),
            true => high_nibbles(v, mask),
        };
        if Q5 {
            let h = v128_load(blk.add(Q5_K_QH + 16 * k) as *const v128);
            let set = i8x16_eq(v128_and(h, bit), bit);
            u = v128_or(u, v128_and(set, u8x16_splat(0x10)));
        }
        for (a, x) in acc.iter_mut().zip(&x) {
            let xw = v128_load32_splat(x.add(32 * HIGH as usize + 4 * k) as *const u32);
            *a = i16x8_add(*a, i16x8_relaxed_dot_i8x16_i7x16(xw, u));
        }
        if (k + 1) % widen_every == 0 {
            for (s, a) in isum.iter_mut().zip(&mut acc) {
                *s = i32x4_add(*s, i32x4_dot_i16x8(*a, scale));
                *a = i16x8_splat(0);
            }
        }
    }
}

/// `Σ_j m_j · (bsum_2j + bsum_2j+1)` for each of the four rows (lane = row): the mins (`m`, as
/// [`scales_mins`] gives them) against the Q8_K sums of their 32-element sub-blocks (`bsums`:
/// sixteen i16 sums of 16). Each sub-block sum fits i16 (≤ 32·128).
#[inline(always)]
unsafe fn mins_sums(m: [v128; 2], bsums: *const u8) -> v128 {
    let half = |h: usize| {
        let pairs = i32x4_extadd_pairwise_i16x8(v128_load(bsums.add(16 * h) as *const v128));
        i16x8_narrow_i32x4(pairs, pairs) // sub-blocks 4h..4h + 4, twice
    };
    let (x0, x1) = (half(0), half(1));
    // Lanes (row 0, sub-blocks 0, 1 and 4, 5), (row 0, 2, 3 and 6, 7), (row 1, …), (row 1, …);
    // then rows 2 and 3.
    let p = i32x4_add(
        i32x4_dot_i16x8(u16x8_extend_low_u8x16(m[0]), x0),
        i32x4_dot_i16x8(u16x8_extend_low_u8x16(m[1]), x1),
    );
    let q = i32x4_add(
        i32x4_dot_i16x8(u16x8_extend_high_u8x16(m[0]), x0),
        i32x4_dot_i16x8(u16x8_extend_high_u8x16(m[1]), x1),
    );
    i32x4_add(
        i32x4_shuffle::<0, 2, 4, 6>(p, q),
        i32x4_shuffle::<1, 3, 5, 7>(p, q),
    )
}

/// Byte `K` of each lane of the i8 scales `sc`, sign-extended, in both i16 halves of the lane
/// (see [`lane_scale`]).
#[inline(always)]
fn lane_scale_i8<const K: u32>(sc: v128) -> v128 {
    let s = i32x4_shr(i32x4_shl(sc, 24 - 8 * K), 24);
    v128_or(v128_and(s, u32x4_splat(0xFFFF)), i32x4_shl(s, 16))
}

/// `Σ_g sc_g · Σ u·x` over a Q6_K super-block's sixteen groups of 16 for each of the `N`
/// activation rows (`qx`: their 256 quants), lane = weight row, with the unsigned 6-bit quants
/// `u` (`kquants::unpack_q6_k`'s, before its − 32).
#[inline(always)]
unsafe fn q6_k_sums<const N: usize>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: &[v128; 4],
) -> [v128; N] {
    let mut scales = [i32x4_splat(0); 16];
    for (t, &s) in sc.iter().enumerate() {
        scales[4 * t] = lane_scale_i8::<0>(s);
        scales[4 * t + 1] = lane_scale_i8::<1>(s);
        scales[4 * t + 2] = lane_scale_i8::<2>(s);
        scales[4 * t + 3] = lane_scale_i8::<3>(s);
    }
    let mut isum = [i32x4_splat(0); N];
    for n in 0..2 {
        for t in (0..8).step_by(2) {
            // Vectors t and t + 1 of half n: elements 128n + 32q + 4t.. of quarter q, in group
            // 8n + 2q + t / 4.
            let (a, b) = (q6_k_quarters(blk, n, t), q6_k_quarters(blk, n, t + 1));
            let x = qx.map(|x| x.add(128 * n + 4 * t));
            let g = 8 * n + t / 4;
            quarter_pair::<N, 0>(a[0], b[0], x, scales[g], &mut isum);
            quarter_pair::<N, 1>(a[1], b[1], x, scales[g + 2], &mut isum);
            quarter_pair::<N, 2>(a[2], b[2], x, scales[g + 4], &mut isum);
            quarter_pair::<N, 3>(a[3], b[3], x, scales[g + 6], &mut isum);
        }
    }
    isum
}

/// The four quarters' unsigned quants in vector `t` of half `n` of a Q6_K group block: four
/// elements of each row at `128n + 32q + 4t` for quarter `q`, low (q 0, 1) or high (q 2, 3)
/// nibbles of `ql[64n + 4t]` (q even) or `ql[64n + 32 + 4t]` (q odd), top bits from bit pair `q`
/// of `qh[32n + 4t]`.
#[inline(always)]
unsafe fn q6_k_quarters(blk: *const u8, n: usize, t: usize) -> [v128; 4] {
    let load = |at: usize| v128_load(blk.add(at) as *const v128);
    q6_k_unpack(
        load(Q6_K_QL + 16 * (16 * n + t)),
        load(Q6_K_QL + 16 * (16 * n + 8 + t)),
        load(Q6_K_QH + 16 * (8 * n + t)),
    )
}

/// Adds `scale ·` (quarter `Q`'s two vectors `u0`, `u1` `·` their activation words at `x + 32Q`)
/// into `isum`. A pair of products reaches 2·63·128, so two dots are as many as i16 holds.
#[inline(always)]
unsafe fn quarter_pair<const N: usize, const Q: usize>(
    u0: v128,
    u1: v128,
    x: [*const u8; N],
    scale: v128,
    isum: &mut [v128; N],
) {
    for (s, x) in isum.iter_mut().zip(&x) {
        let e = x.add(32 * Q);
        let d0 = i16x8_relaxed_dot_i8x16_i7x16(v128_load32_splat(e as *const u32), u0);
        let d1 = i16x8_relaxed_dot_i8x16_i7x16(v128_load32_splat(e.add(4) as *const u32), u1);
        *s = i32x4_add(*s, i32x4_dot_i16x8(i16x8_add(d0, d1), scale));
    }
}

/// `Σ_g sc_g · bsum_g` for each of the four rows (lane = row): the Q6_K scales (`sc[t]`, lane `i`
/// = row `i`'s scales `4t..4t + 4`) against the Q8_K sums of their groups (`bsums`).
#[inline(always)]
unsafe fn scaled_bsums(sc: &[v128; 4], bsums: *const u8) -> v128 {
    let (mut p, mut q) = (i32x4_splat(0), i32x4_splat(0));
    for (t, &s) in sc.iter().enumerate() {
        // bsums 4t..4t + 4, twice: against rows 0–1 and rows 2–3 of the widened scales.
        let b = v128_load64_splat(bsums.add(8 * t) as *const u64);
        p = i32x4_add(p, i32x4_dot_i16x8(i16x8_extend_low_i8x16(s), b));
        q = i32x4_add(q, i32x4_dot_i16x8(i16x8_extend_high_i8x16(s), b));
    }
    i32x4_add(
        i32x4_shuffle::<0, 2, 4, 6>(p, q),
        i32x4_shuffle::<1, 3, 5, 7>(p, q),
    )
}
