//! Relaxed-SIMD kernels (`+relaxed-simd`, shipped as a separate wasm binary).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add` is only deterministic when its second operand is in
//! 0..=127. Q4_0 nibbles are 0..=15, so `Σ (n − 8)·q8 = dot(q8, n) − dot(q8, 8)` is exact here
//! and equals the scalar twin's integer sum; the f32 order is the shared four-lane one. The
//! K-mix dots (`simd128_kquants`) use the same trick. Q8_0's quants are signed on both sides,
//! so its kernels multiply i16s instead (`i32x4_dot_i16x8` against the activation's widened
//! quants, `Q8Act::wide_row`), exact and deterministic too.

use core::arch::wasm32::*;

use super::simd128::{
    bits_to_4, dot_blocks4, f16_bits_to_f32, gemm_i8_with, gemm_q4_0_with, gemm_q8_0_with,
    high_nibbles, load16, q8_0_row1_with, I8Dot, Q4_BYTES, Q8_BYTES,
};
use crate::dtype::DType;
use crate::quant::act::Q8Act;
use crate::quant::interleave::{group_block, GROUP, Q5_HIGH, QS};

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mask = u8x16_splat(0x0F);
    let eight = u8x16_splat(8);
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb| {
        let qs = load16(&wb[2..]);
        let (x0, x1) = (load16(&xb[2..]), load16(&xb[18..]));
        let z = i32x4_splat(0);
        let pos = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            high_nibbles(qs, mask),
            i32x4_relaxed_dot_i8x16_i7x16_add(x0, v128_and(qs, mask), z),
        );
        let off = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            eight,
            i32x4_relaxed_dot_i8x16_i7x16_add(x0, eight, z),
        );
        i32x4_sub(pos, off)
    })
}

/// `dot16` for relaxed SIMD: one `pmaddubsw`-style i8 × i7 dot into i16 pairs (deterministic,
/// since nibbles are in 0..=127).
#[inline(always)]
fn dot16_relaxed(x: v128, u: v128) -> v128 {
    i16x8_relaxed_dot_i8x16_i7x16(x, u)
}

/// `out[r·n_w + o] = w_o · x_r` (see `scalar::gemm_q4_0_q8_0`, whose bits this reproduces).
pub fn gemm_q4_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_q4_0_with(dot16_relaxed, w, act, out)
}

/// `out[r·n_w + o] = w_o · x_r` for Q8_0 weights (see `scalar::gemm_q8_0_q8_0`, same bits). Large
/// matrices in the file's layout take each weight vector widened to i16 against the
/// activation's widened quants (`Q8Act::wide_row`): four `i32x4_dot_i16x8` a block, exact.
pub fn gemm_q8_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let nb = act.blocks();
    gemm_q8_0_with(w, act, out, |wr, r| {
        let wide = act.wide_row(r).as_ptr();
        let block = |b: usize| {
            // SAFETY: `gemm_q8_0_with` passes a weight row of `nb` blocks, and the widened row
            // holds 32 quants per block.
            unsafe {
                let (wb, x) = (wr.add(b * Q8_BYTES), wide.add(32 * b));
                let half = |at: usize| {
                    let v = v128_load(wb.add(2 + at) as *const v128);
                    let xv = |e: usize| v128_load(x.add(at + e) as *const v128);
                    i32x4_add(
                        i32x4_dot_i16x8(i16x8_extend_low_i8x16(v), xv(0)),
                        i32x4_dot_i16x8(i16x8_extend_high_i8x16(v), xv(8)),
                    )
                };
                i32x4_add(half(0), half(16))
            }
        };
        let x = act.q8_row(r).as_ptr();
        // SAFETY: as above; the row's `nb` blocks and scales come from `act`.
        unsafe { q8_0_row1_with(block, wr, nb, x, act.dx()[r * nb..].as_ptr()) }
    })
}

/// `gemm_i8` (see the scalar twin; same integers) on relaxed dots: each activation row is split
/// once into `x⁺ = max(x, 0)` and `x⁻ = max(−x, 0)`, both 7-bit, so `Σ w·x = dot(w, x⁺) −
/// dot(w, x⁻)` is exact with two deterministic relaxed dots per sixteen bytes. Activations with
/// a −128 (whose negation is not 7-bit; Tesseract's never have one) and rows shorter than one
/// vector take the plain SIMD128 kernel.
pub fn gemm_i8(x: &[i8], k: usize, w: &[i8], w_row: usize, out: &mut [i32]) {
    let m = x.len() / k.max(1);
    if k < 16 || m == 0 || x.contains(&i8::MIN) {
        return super::simd128::gemm_i8(x, k, w, w_row, out);
    }
    let body = k / 16 * 16;
    let mut split = vec![0i8; m * 2 * k];
    let zero = i8x16_splat(0);
    for (xr, sr) in x.chunks_exact(k).zip(split.chunks_exact_mut(2 * k)) {
        let (pos, neg) = sr.split_at_mut(k);
        for i in (0..body).step_by(16) {
            // SAFETY: i + 16 <= body <= k, the length of xr, pos and neg.
            unsafe {
                let v = v128_load(xr.as_ptr().add(i) as *const v128);
                v128_store(pos.as_mut_ptr().add(i) as *mut v128, i8x16_max(v, zero));
                v128_store(
                    neg.as_mut_ptr().add(i) as *mut v128,
                    i8x16_max(i8x16_neg(v), zero),
                );
            }
        }
        for i in body..k {
            (pos[i], neg[i]) = (xr[i].max(0), (-xr[i]).max(0));
        }
    }
    gemm_i8_with(&Split { k }, &split, 2 * k, m, k, w, w_row, out)
}

/// The relaxed dot over a sign-split activation row: `x⁺` at `i`, `x⁻` at `k + i`.
struct Split {
    k: usize,
}

impl I8Dot for Split {
    #[inline(always)]
    unsafe fn load_x(&self, x: *const i8, i: usize) -> (v128, v128) {
        (
            v128_load(x.add(i) as *const v128),
            v128_load(x.add(self.k + i) as *const v128),
        )
    }
    #[inline(always)]
    fn step(&self, acc: (v128, v128), wv: v128, xv: (v128, v128)) -> (v128, v128) {
        (
            i32x4_relaxed_dot_i8x16_i7x16_add(wv, xv.0, acc.0),
            i32x4_relaxed_dot_i8x16_i7x16_add(wv, xv.1, acc.1),
        )
    }
    #[inline(always)]
    fn finish(&self, acc: (v128, v128)) -> v128 {
        i32x4_sub(acc.0, acc.1)
    }
    #[inline(always)]
    unsafe fn tail(&self, w: *const i8, x: *const i8, i: usize) -> i32 {
        *w.add(i) as i32 * (*x.add(i) as i32 - *x.add(self.k + i) as i32)
    }
}

/// `out[r·n_w + o] = w_o · x_r` for Q4_0×4 weights (`quant::interleave`; see
/// `scalar::gemm_q4_0x4_q8_0`, whose bits this reproduces). Per block of a group, each relaxed
/// dot pairs one activation word, splat over the lanes, with four bytes of each of the four rows,
/// so the group's four sums build up in the four lanes; four activation rows at a time share each
/// unpacked weight vector.
pub fn gemm_q4_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Q4_0x4>(w, act, out)
}

/// [`gemm_q4_0x4_q8_0`] for Q5_0×4 weights (see `scalar::gemm_q5_0x4_q8_0`, same bits): the
/// fifth bits are taken from the layout's bit planes onto the nibbles, so the relaxed dots take
/// unsigned 5-bit quants.
pub fn gemm_q5_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Q5_0x4>(w, act, out)
}

/// [`gemm_q4_0x4_q8_0`] for Q8_0×4 weights (see `scalar::gemm_q8_0x4_q8_0`, same bits). Both
/// sides' quants are signed, so each vector of four rows' bytes is widened to i16 and multiplied
/// by the activation's widened words (`i32x4_dot_i16x8`, exact).
pub fn gemm_q8_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Q8_0x4>(w, act, out)
}

/// A ×4 layout and its group-block integer sums.
trait X4 {
    const DTYPE: DType;
    /// The quants' offset `o` (stored unsigned: `Σ (u − o)·x = Σ u·x − o·Σx`) over eight, the
    /// multiple of `Q8Act::sx8` (`8·Σx`) to subtract.
    const SX8_TIMES: i32;
    /// Whether `isum` reads the activation's quants widened to i16 (`Q8Act::wide_row`, 64
    /// bytes a block) rather than its Q8_0 quants.
    const WIDE: bool = false;
    /// `Σ u·x` of one group block's four rows (lane = row) against the activation block at each
    /// of `x` (its 32 quants, or with [`X4::WIDE`] their 64 bytes as i16).
    ///
    /// # Safety
    /// `blk` must point at one whole group block and each `x` at the whole activation block.
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N]) -> [v128; N];
}

struct Q4_0x4;
struct Q5_0x4;
struct Q8_0x4;

impl X4 for Q4_0x4 {
    const DTYPE: DType = DType::Q4_0;
    const SX8_TIMES: i32 = 1;

    /// The 64 quant bytes as four vectors, each unpacked once for all `N` rows. Each
    /// `dot16_relaxed` pairs two products into an i16 lane (|pair| ≤ 2·128·15), so the eight of a
    /// block add up in i16 (≤ 30720) and widen once: i16 lanes `2i, 2i + 1` are row `i`.
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N]) -> [v128; N] {
        let mask = u8x16_splat(0x0F);
        let mut acc = [i16x8_splat(0); N];
        for k in 0..4 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let (lo, hi) = (v128_and(v, mask), high_nibbles(v, mask));
            for (i, a) in acc.iter_mut().enumerate() {
                let d = pair_dots(x[i].add(4 * k), lo, hi);
                *a = if k == 0 { d } else { i16x8_add(*a, d) };
            }
        }
        acc.map(|v| i32x4_extadd_pairwise_i16x8(v))
    }
}

impl X4 for Q5_0x4 {
    const DTYPE: DType = DType::Q5_0;
    const SX8_TIMES: i32 = 2;

    /// As Q4_0's, with each nibble vector given its fifth bits from the block's bit planes: plane
    /// `p` shifted to bit 4 of every byte (one 16-bit shift: the mask drops what crosses bytes),
    /// masked to 16 and or-ed in. The pairs now reach 2·128·31, so the i16 sums widen every two
    /// chunks (≤ 31744).
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N]) -> [v128; N] {
        let (mask, sixteen) = (u8x16_splat(0x0F), u8x16_splat(16));
        let planes = v128_load(blk.add(Q5_HIGH) as *const v128);
        let fifth = |p: u32| bits_to_4(planes, p, sixteen);
        let mut acc = [i16x8_splat(0); N];
        let mut sum = [i32x4_splat(0); N];
        for k in 0..4 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let lo = v128_or(v128_and(v, mask), fifth(2 * k as u32));
            let hi = v128_or(high_nibbles(v, mask), fifth(2 * k as u32 + 1));
            for (i, a) in acc.iter_mut().enumerate() {
                let d = pair_dots(x[i].add(4 * k), lo, hi);
                *a = if k % 2 == 0 { d } else { i16x8_add(*a, d) };
                if k % 2 == 1 {
                    sum[i] = i32x4_add(sum[i], i32x4_extadd_pairwise_i16x8(*a));
                }
            }
        }
        sum
    }
}

impl X4 for Q8_0x4 {
    const DTYPE: DType = DType::Q8_0;
    const SX8_TIMES: i32 = 0;
    const WIDE: bool = true;

    /// Per vector of four bytes of each row (eight a block), widened once for all `N` rows:
    /// rows 0–1 in the low half, 2–3 in the high, each times the activation's four widened
    /// quants (splat as one 64-bit word) into i32 pair sums, a row's two in adjacent lanes, added
    /// up once a block. That is two of x86's vector multiplies a vector and nothing to widen. A
    /// sign-split pair of relaxed dots (`Σ w·x⁺ − Σ w·x⁻` in i16, the 7-bit side split) took
    /// the same two plus a widening, which V8 makes a third multiply, and the multiplier was the
    /// limit: widening by shifts instead took the Q8_0 LM head of Gemma 3 Q4_K_M from 9.66 to
    /// 8.85 ms a token on one thread, and this form from 8.35 to 7.24 (5.13 → 4.34 on two;
    /// interleaved A/Bs in Chromium, medians of 10).
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N]) -> [v128; N] {
        let (mut lo, mut hi) = ([i32x4_splat(0); N], [i32x4_splat(0); N]);
        for k in 0..8 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let (v0, v1) = (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v));
            for i in 0..N {
                let xw = v128_load64_splat(x[i].add(8 * k) as *const u64);
                lo[i] = i32x4_add(lo[i], i32x4_dot_i16x8(v0, xw));
                hi[i] = i32x4_add(hi[i], i32x4_dot_i16x8(v1, xw));
            }
        }
        core::array::from_fn(|i| {
            i32x4_add(
                i32x4_shuffle::<0, 2, 4, 6>(lo[i], hi[i]),
                i32x4_shuffle::<1, 3, 5, 7>(lo[i], hi[i]),
            )
        })
    }
}

/// The i16 pair sums of chunk `k`'s low and high quants (`lo`, `hi`: four bytes of each row)
/// against the activation words at `xk` (elements `4k..`) and `xk + 16` (elements `16 + 4k..`),
/// each splat over the lanes.
///
/// # Safety
/// `xk` must point at 20 readable bytes.
#[inline(always)]
unsafe fn pair_dots(xk: *const u8, lo: v128, hi: v128) -> v128 {
    let xl = v128_load32_splat(xk as *const u32);
    let xh = v128_load32_splat(xk.add(16) as *const u32);
    i16x8_add(dot16_relaxed(xl, lo), dot16_relaxed(xh, hi))
}

/// The ×4 matmul of format `F` (see [`gemm_q4_0x4_q8_0`]).
fn gemm_x4<F: X4>(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let (rows, nb) = (act.rows(), act.blocks());
    if rows == 0 || nb == 0 {
        out.fill(0.0);
        return;
    }
    let group = nb * group_block(F::DTYPE);
    let stride = out.len() / rows;
    let groups = (stride / GROUP).min(w.len() / group);
    for g in 0..groups {
        let wg = &w[g * group..(g + 1) * group];
        let mut r = 0;
        while r + 4 <= rows {
            // SAFETY: `wg` is one whole group of `nb` blocks and rows `r..r + 4` exist in `act`.
            let sums = unsafe { group_rows::<F, 4>(wg.as_ptr(), nb, act, r) };
            put_groups(sums, &mut out[r * stride + g * GROUP..], stride);
            r += 4;
        }
        while r < rows {
            // SAFETY: as above, for row `r`.
            let sums = unsafe { group_rows::<F, 1>(wg.as_ptr(), nb, act, r) };
            put_groups(sums, &mut out[r * stride + g * GROUP..], stride);
            r += 1;
        }
    }
}

/// Writes a group's four sums (lane = weight row) for each of `N` activation rows, row `i` at
/// `out[i · stride..]`.
pub(super) fn put_groups<const N: usize>(sums: [v128; N], out: &mut [f32], stride: usize) {
    for (i, s) in sums.into_iter().enumerate() {
        out[i * stride..][..GROUP].copy_from_slice(&super::simd128::f32_lanes(s));
    }
}

/// The four sums of one group against activation rows `r0..r0 + N`, lane = weight row, each in
/// the canonical block order. The weight scales are finite (`interleave` leaves a matrix with an
/// inf/NaN one in the file's layout), so they convert without the per-block check.
///
/// # Safety
/// `wg` must point at one group of `nb` blocks and rows `r0..r0 + N` must exist in `act`.
#[inline(always)]
unsafe fn group_rows<F: X4, const N: usize>(
    wg: *const u8,
    nb: usize,
    act: &Q8Act,
    r0: usize,
) -> [v128; N] {
    // Each row's first activation block as `isum` reads it, and the bytes between blocks.
    let (x, x_block): ([*const u8; N], usize) = if F::WIDE {
        let wide = |i: usize| act.wide_row(r0 + i).as_ptr() as *const u8;
        (core::array::from_fn(wide), 64)
    } else {
        let first = |i: usize| act.q8().as_ptr().add((r0 + i) * nb * Q8_BYTES + 2);
        (core::array::from_fn(first), Q8_BYTES)
    };
    let dx: [*const f32; N] = core::array::from_fn(|i| act.dx().as_ptr().add((r0 + i) * nb));
    let sx8: [*const i32; N] = core::array::from_fn(|i| act.sx8().as_ptr().add((r0 + i) * nb));
    accumulate_blocks4_n::<N>(nb, |b, acc| {
        let blk = wg.add(b * group_block(F::DTYPE));
        let dw = f16x4(blk);
        let isum = F::isum::<N>(blk, x.map(|p| p.add(b * x_block)));
        core::array::from_fn(|i| {
            let isum = match F::SX8_TIMES {
                0 => isum[i],
                t => i32x4_sub(isum[i], i32x4_splat(*sx8[i].add(b) * t)),
            };
            let scale = f32x4_mul(dw, f32x4_splat(*dx[i].add(b)));
            f32x4_add(acc[i], f32x4_mul(scale, f32x4_convert_i32x4(isum)))
        })
    })
}

/// The four rows' f16 scales at the start of a group block `p` as f32, for finite ones (the ×4
/// layout's, checked by `interleave`): each sign-extended into its i32 lane (a widening load; a
/// shuffle with zeros had V8 rebuild two byte-shuffle masks each block, ~10 % slower) and shifted
/// so that sign, exponent and mantissa sit where f32's do (`f16_bits_to_f32`).
///
/// # Safety
/// `p` must point at 8 readable bytes.
#[inline(always)]
pub(super) unsafe fn f16x4(p: *const u8) -> v128 {
    f16_bits_to_f32(i32x4_shl(i32x4_load_extend_i16x4(p as *const i16), 13))
}

/// `simd128::accumulate_blocks4` for `N` accumulators at once: block `b` into set `b % 4`, the
/// sets reduced as `(a0 + a1) + (a2 + a3)`.
#[inline(always)]
fn accumulate_blocks4_n<const N: usize>(
    nb: usize,
    mut step: impl FnMut(usize, [v128; N]) -> [v128; N],
) -> [v128; N] {
    let zero = [f32x4_splat(0.0); N];
    let (mut a0, mut a1, mut a2, mut a3) = (zero, zero, zero, zero);
    let mut b = 0;
    while b + 4 <= nb {
        a0 = step(b, a0);
        a1 = step(b + 1, a1);
        a2 = step(b + 2, a2);
        a3 = step(b + 3, a3);
        b += 4;
    }
    let mut acc = [a0, a1, a2, a3];
    for (lane, b) in (b..nb).enumerate() {
        acc[lane] = step(b, acc[lane]);
    }
    core::array::from_fn(|i| {
        f32x4_add(
            f32x4_add(acc[0][i], acc[1][i]),
            f32x4_add(acc[2][i], acc[3][i]),
        )
    })
}
