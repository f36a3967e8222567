//! Dots of Q4_K, Q5_K and Q6_K matrices interleaved four rows at a time (`quant::interleave`)
//! against Q8_K activations, in both SIMD builds.
//!
//! As for the legacy ×4 formats (`x4.rs`), one activation word, splat over the lanes, meets four
//! quants of each of the four rows, so a row's sums stay in its lane: in relaxed builds through
//! the relaxed `i8×i7` dot (`relaxed_kquants.rs`), in SIMD128 ones through i16 multiplies of
//! the widened quants (here). What a K block adds: the sub-blocks' scales multiply their sums,
//! and what the quants' offsets take off (Q4_K/Q5_K's mins, Q6_K's 32) meets the activation's
//! 16-element sums (`bsums`) once a super-block. The layout puts a field of the four rows in
//! one vector, so scale unpacking (`kquants::scales_mins_k4` for Q4_K/Q5_K) runs on the four
//! rows at once. Integer sums are exact and each lane applies the twin's f32 steps in its order
//! (`kquants::vec_dot_q4_k_q8_k`, `vec_dot_q5_k_q8_k`, `vec_dot_q6_k_q8_k`), so the bits are the
//! file layout's.

use core::arch::wasm32::*;

#[cfg(target_feature = "relaxed-simd")]
use super::relaxed_kquants::{q45_k_sums, q6_k_sums};
use super::simd128::{high_nibbles, Consts};
use super::simd128_kquants::q6_k_unpack_with;
use super::x4::put_groups;
#[cfg(not(target_feature = "relaxed-simd"))]
use super::x4::{add_pair_dots, row_lanes, widen_u8};
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
    /// Adds one group super-block `b`'s dots with the Q8_K blocks at `x` into `s` (lane = weight
    /// row), the twin's f32 steps; `c` holds the kernels' constants.
    ///
    /// # Safety
    /// `b` must point at one whole group block and each `x` at one whole Q8_K block.
    unsafe fn step<const N: usize>(b: *const u8, x: [*const u8; N], s: &mut [v128; N], c: &Consts);
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
    let c = Consts::new();
    for g in 0..groups {
        let wg = &w[g * group..(g + 1) * group];
        let out = &mut out[g * GROUP..];
        let mut r = 0;
        while r + 4 <= rows {
            let xs: [&[u8]; 4] = core::array::from_fn(|i| row(r + i));
            // SAFETY: `wg` is one whole group of `nb` super-blocks and each row `nb` Q8_K blocks.
            let sums = unsafe { group_rows::<F, 4>(wg.as_ptr(), nb, xs.map(|x| x.as_ptr()), &c) };
            put_groups(sums, &mut out[r * stride..], stride);
            r += 4;
        }
        for r in r..rows {
            // SAFETY: as above, for row `r`.
            let sums = unsafe { group_rows::<F, 1>(wg.as_ptr(), nb, [row(r).as_ptr()], &c) };
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
    c: &Consts,
) -> [v128; N] {
    let mut sum = [f32x4_splat(0.0); N];
    for b in 0..nb {
        let blk = wg.add(b * group_block(F::DTYPE));
        F::step(blk, x.map(|x| x.add(b * Q8_K_BYTES)), &mut sum, c);
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
    unsafe fn step<const N: usize>(b: *const u8, x: [*const u8; N], s: &mut [v128; N], c: &Consts) {
        let d = c.f16x4(b);
        let dmin = c.f16x4(b.add(Q4_K_DMIN));
        let (sc, m) = scales_mins(b.add(Q4_K_SCALES), c);
        let isum = q45_k_sums::<N, Q5>(b, x.map(|x| x.add(4)), sc, c);
        for i in 0..N {
            let dx = dx(x[i]);
            let msum = mins_sums(m, x[i].add(4 + QK_K));
            let t = f32x4_add(
                s[i],
                f32x4_mul(f32x4_mul(d, dx), f32x4_convert_i32x4(isum[i])),
            );
            s[i] = f32x4_sub(t, f32x4_mul(f32x4_mul(dmin, dx), f32x4_convert_i32x4(msum)));
        }
    }
}

impl KX4 for Q6Kx4 {
    const DTYPE: DType = DType::Q6_K;

    /// The twin's step per row: `sum += d·dx·isum`, `isum = Σ_g sc_g Σ u·x − 32 Σ_g sc_g·bsum_g`
    /// (the unsigned quants `u = q + 32`).
    #[inline(always)]
    unsafe fn step<const N: usize>(b: *const u8, x: [*const u8; N], s: &mut [v128; N], c: &Consts) {
        let d = c.f16x4(b);
        let sc: [v128; 4] =
            core::array::from_fn(|t| v128_load(b.add(Q6_K_SCALES + 16 * t) as *const v128));
        let usum = q6_k_sums(b, x.map(|x| x.add(4)), &sc, c);
        for i in 0..N {
            let offset = i32x4_shl(scaled_bsums(&sc, x[i].add(4 + QK_K)), 5);
            let isum = f32x4_convert_i32x4(i32x4_sub(usum[i], offset));
            s[i] = f32x4_add(s[i], f32x4_mul(f32x4_mul(d, dx(x[i])), isum));
        }
    }
}

/// The four rows' scales and mins from a group block's packed scale words (`s[3][16]`, a row a
/// lane), as `kquants::scales_mins_k4` unpacks one row's: `(scales, mins)`, each two vectors
/// whose lane `i` holds row `i`'s sub-blocks `0..4` (the first) and `4..8` (the second), a byte
/// each.
#[inline(always)]
unsafe fn scales_mins(s: *const u8, c: &Consts) -> ([v128; 2], [v128; 2]) {
    let word = |w: usize| v128_load(s.add(16 * w) as *const v128);
    let (a, b, w) = (word(0), word(1), word(2));
    let (low6, low4, top2) = (c.low6, c.nibble, c.low2);
    let top = |v: v128| u32x4_shl(v128_and(u32x4_shr(v, 6), top2), 4);
    let sc_hi = v128_or(v128_and(w, low4), top(a));
    let m_hi = v128_or(v128_and(u32x4_shr(w, 4), low4), top(b));
    ([v128_and(a, low6), sc_hi], [v128_and(b, low6), m_hi])
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

/// The four quarters' unsigned quants in vector `t` of half `n` of a Q6_K group block: four
/// elements of each row at `128n + 32q + 4t` for quarter `q`, low (q 0, 1) or high (q 2, 3)
/// nibbles of `ql[64n + 4t]` (q even) or `ql[64n + 32 + 4t]` (q odd), top bits from bit pair `q`
/// of `qh[32n + 4t]`.
#[inline(always)]
pub(super) unsafe fn q6_k_quarters(blk: *const u8, n: usize, t: usize, c: &Consts) -> [v128; 4] {
    let load = |at: usize| v128_load(blk.add(at) as *const v128);
    q6_k_unpack_with(
        load(Q6_K_QL + 16 * (16 * n + t)),
        load(Q6_K_QL + 16 * (16 * n + 8 + t)),
        load(Q6_K_QH + 16 * (8 * n + t)),
        c.nibble,
        c.bits45,
    )
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

/// Vector `k` of chunk `c` of a Q4_K (or with `Q5` Q5_K) group block as unsigned quants:
/// elements `4k..4k + 4` of sub-block `2c + HIGH` of each row, the chunk's low or high nibbles,
/// with Q5_K's fifth bit `2c + HIGH` of `h[k]`.
///
/// # Safety
/// `blk` must point at one whole group block.
#[inline(always)]
pub(super) unsafe fn q45_k_quants<const Q5: bool, const HIGH: bool>(
    blk: *const u8,
    c: usize,
    k: usize,
    cs: &Consts,
) -> v128 {
    let mask = cs.nibble;
    let qs = blk.add(if Q5 { Q5_K_QS } else { Q4_K_QS });
    let v = v128_load(qs.add(16 * (8 * c + k)) as *const v128);
    let u = match HIGH {
        false => v128_and(v, mask),
        true => high_nibbles(v, mask),
    };
    if !Q5 {
        return u;
    }
    // Bit j of every byte, as a compare (a shift by it would be a variable one).
    let bit = u8x16_splat(1 << (2 * c + HIGH as usize));
    let h = v128_load(blk.add(Q5_K_QH + 16 * k) as *const v128);
    let set = i8x16_eq(v128_and(h, bit), bit);
    v128_or(u, v128_and(set, cs.bit4))
}

/// SIMD128's `Σ_j sc_j · Σ q·x` over a Q4_K (or with `Q5` Q5_K) super-block's eight sub-blocks
/// for each of the `N` activation rows (`qx`: their 256 quants), lane = weight row: each quant
/// vector widened to i16 against the activation's word widened, i32 pair sums per sub-block,
/// times its scale once ([`scaled_add`]).
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
unsafe fn q45_k_sums<const N: usize, const Q5: bool>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: [v128; 2],
    cs: &Consts,
) -> [v128; N] {
    let byte = |s: v128, k: u32| pair_lanes(v128_and(u32x4_shr(s, 8 * k), cs.byte));
    let scales: [(v128, v128); 8] = core::array::from_fn(|j| byte(sc[j / 4], j as u32 % 4));
    let mut isum = [(i32x4_splat(0), i32x4_splat(0)); N];
    for c in 0..4 {
        let x = qx.map(|x| x.add(64 * c));
        for (half, x) in [(false, x), (true, x.map(|x| x.add(32)))] {
            let mut acc = [(i32x4_splat(0), i32x4_splat(0)); N];
            for k in 0..8 {
                let u = match half {
                    false => q45_k_quants::<Q5, false>(blk, c, k, cs),
                    true => q45_k_quants::<Q5, true>(blk, c, k, cs),
                };
                add_q8_k(&mut acc, u, x.map(|x| x.add(4 * k)));
            }
            scaled_add(&mut isum, &acc, scales[2 * c + half as usize]);
        }
    }
    isum.map(row_lanes)
}

/// SIMD128's `Σ_g sc_g · Σ u·x` over a Q6_K super-block's sixteen groups of 16 (see the relaxed
/// `q6_k_sums`), as [`q45_k_sums`] does it.
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
unsafe fn q6_k_sums<const N: usize>(
    blk: *const u8,
    qx: [*const u8; N],
    sc: &[v128; 4],
    c: &Consts,
) -> [v128; N] {
    let byte = |s: v128, k: u32| pair_lanes(i32x4_shr(i32x4_shl(s, 24 - 8 * k), 24));
    let scales: [(v128, v128); 16] = core::array::from_fn(|g| byte(sc[g / 4], g as u32 % 4));
    let mut isum = [(i32x4_splat(0), i32x4_splat(0)); N];
    for n in 0..2 {
        for t in (0..8).step_by(2) {
            // Vectors t and t + 1 of half n: elements 128n + 32q + 4t.. of quarter q, in group
            // 8n + 2q + t / 4.
            let (a, b) = (q6_k_quarters(blk, n, t, c), q6_k_quarters(blk, n, t + 1, c));
            for q in 0..4 {
                let x = qx.map(|x| x.add(128 * n + 32 * q + 4 * t));
                let mut acc = [(i32x4_splat(0), i32x4_splat(0)); N];
                add_q8_k(&mut acc, a[q], x);
                add_q8_k(&mut acc, b[q], x.map(|x| x.add(4)));
                scaled_add(&mut isum, &acc, scales[8 * n + t / 4 + 2 * q]);
            }
        }
    }
    isum.map(row_lanes)
}

/// `x4::add_pair_dots` of the unsigned quants `u` (four of each row) against activation `i`'s
/// four Q8_K quants at `x[i]`, widened here (Q8_K rows have no widened copy).
///
/// # Safety
/// Each `x[i]` must point at 4 readable bytes.
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
unsafe fn add_q8_k<const N: usize>(acc: &mut [(v128, v128); N], u: v128, x: [*const u8; N]) {
    let xw = x.map(|x| i16x8_extend_low_i8x16(v128_load32_splat(x as *const u32)));
    add_pair_dots(acc, widen_u8(u), xw);
}

/// `isum[i] += scale · acc[i]`, halves as `x4::add_pair_dots`'.
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
fn scaled_add<const N: usize>(
    isum: &mut [(v128, v128); N],
    acc: &[(v128, v128); N],
    scale: (v128, v128),
) {
    for (s, a) in isum.iter_mut().zip(acc) {
        s.0 = i32x4_add(s.0, i32x4_mul(a.0, scale.0));
        s.1 = i32x4_add(s.1, i32x4_mul(a.1, scale.1));
    }
}

/// A value per row (lane = row) in `x4::add_pair_dots`' halves' lanes: rows 0, 0, 1, 1 and 2, 2,
/// 3, 3.
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
fn pair_lanes(s: v128) -> (v128, v128) {
    (
        i32x4_shuffle::<0, 0, 1, 1>(s, s),
        i32x4_shuffle::<2, 2, 3, 3>(s, s),
    )
}
