//! The relaxed-SIMD sums of the K formats' ×4 dots (`kx4.rs`): each relaxed `i8×i7` dot pairs
//! one activation word, splat over the lanes, with four quants of each of the four rows into
//! i16 pair sums, which widen times the sub-block's scale (`i32x4_dot_i16x8`, a row's scale in
//! its lane's two i16 halves). SIMD128 builds have their own sums in `kx4.rs`.

use core::arch::wasm32::*;

use super::kx4::{q45_k_quants, q6_k_quarters};
use super::simd128::Consts;

/// Byte `K` of each lane of `sc` in both i16 halves of the lane: a row's sub-block scale for
/// `i32x4_dot_i16x8` against that row's two i16 pair sums. (`K` is a constant so that the shifts
/// are: with a loop index, V8 got variable shifts and the unrolling was lost.)
#[inline(always)]
fn lane_scale<const K: u32>(sc: v128, byte: v128) -> v128 {
    let s = v128_and(u32x4_shr(sc, 8 * K), byte);
    v128_or(s, u32x4_shl(s, 16))
}

/// The four [`lane_scale`]s of `sc`'s bytes.
#[inline(always)]
fn lane_scales(sc: v128, byte: v128) -> [v128; 4] {
    [
        lane_scale::<0>(sc, byte),
        lane_scale::<1>(sc, byte),
        lane_scale::<2>(sc, byte),
        lane_scale::<3>(sc, byte),
    ]
}

/// `Σ_j sc_j · Σ q·x` over a Q4_K (or with `Q5` Q5_K) super-block's eight sub-blocks for each
/// of the `N` activation rows (`qx`: their 256 quants), lane = weight row.
#[inline(always)]
pub(super) unsafe fn q45_k_sums<const N: usize, const Q5: bool>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: [v128; 2],
    cs: &Consts,
) -> [v128; N] {
    let (lo, hi) = (lane_scales(sc[0], cs.byte), lane_scales(sc[1], cs.byte));
    let scales = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
    let mut isum = [i32x4_splat(0); N];
    // A loop over the chunks, not eight copies of the sub-block: unrolled, the four-row tile ran
    // 2× slower in Chromium.
    for c in 0..4 {
        let x = qx.map(|x| x.add(64 * c));
        sub_block::<N, Q5, false>(blk, c, x, scales[2 * c], &mut isum, cs);
        sub_block::<N, Q5, true>(blk, c, x, scales[2 * c + 1], &mut isum, cs);
    }
    isum
}

/// Adds `scale · Σ q·x` over sub-block `j = 2c + HIGH` into `isum` (`x`: each row's quants from
/// element `64c`). The relaxed dots add up in i16 and widen times the scale every eight (Q4_K: a
/// pair is at most 2·15·128, eight 30,720) or four (Q5_K: 2·31·128, four 31,744).
#[inline(always)]
unsafe fn sub_block<const N: usize, const Q5: bool, const HIGH: bool>(
    blk: *const u8,
    c: usize,
    x: [*const u8; N],
    scale: v128,
    isum: &mut [v128; N],
    cs: &Consts,
) {
    let widen_every = if Q5 { 4 } else { 8 };
    let mut acc = [i16x8_splat(0); N];
    for k in 0..8 {
        let u = q45_k_quants::<Q5, HIGH>(blk, c, k, cs);
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

/// Byte `K` of each lane of the i8 scales `sc`, sign-extended, in both i16 halves of the lane
/// (see [`lane_scale`]).
#[inline(always)]
fn lane_scale_i8<const K: u32>(sc: v128, half: v128) -> v128 {
    let s = i32x4_shr(i32x4_shl(sc, 24 - 8 * K), 24);
    v128_or(v128_and(s, half), i32x4_shl(s, 16))
}

/// `Σ_g sc_g · Σ u·x` over a Q6_K super-block's sixteen groups of 16 for each of the `N`
/// activation rows (`qx`: their 256 quants), lane = weight row, with the unsigned 6-bit quants
/// `u` (`kquants::unpack_q6_k`'s, before its − 32).
#[inline(always)]
pub(super) unsafe fn q6_k_sums<const N: usize>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: &[v128; 4],
    cs: &Consts,
) -> [v128; N] {
    let mut scales = [i32x4_splat(0); 16];
    for (t, &s) in sc.iter().enumerate() {
        scales[4 * t] = lane_scale_i8::<0>(s, cs.half);
        scales[4 * t + 1] = lane_scale_i8::<1>(s, cs.half);
        scales[4 * t + 2] = lane_scale_i8::<2>(s, cs.half);
        scales[4 * t + 3] = lane_scale_i8::<3>(s, cs.half);
    }
    let mut isum = [i32x4_splat(0); N];
    for n in 0..2 {
        for t in (0..8).step_by(2) {
            // Vectors t and t + 1 of half n: elements 128n + 32q + 4t.. of quarter q, in group
            // 8n + 2q + t / 4.
            let (a, b) = (
                q6_k_quarters(blk, n, t, cs),
                q6_k_quarters(blk, n, t + 1, cs),
            );
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
