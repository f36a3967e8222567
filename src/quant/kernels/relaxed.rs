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
    bits_to_4, dot_blocks4, gemm_i8_with, gemm_q4_0_with, gemm_q8_0_with, high_nibbles, load16,
    q8_0_row1_with, Consts, I8Dot, Q4_BYTES, Q8_BYTES,
};
use super::x4::{gemm_x4, X4};
use crate::dtype::DType;
use crate::quant::act::Q8Act;
use crate::quant::interleave::{Q5_HIGH, QS};

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb, c| {
        let (mask, eight) = (c.nibble, c.eight);
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
    gemm_q8_0_with(w, act, out, |wr, r, c| {
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
        unsafe { q8_0_row1_with(block, wr, nb, x, act.dx()[r * nb..].as_ptr(), c) }
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

struct Q4_0x4;
struct Q5_0x4;

impl X4 for Q4_0x4 {
    const DTYPE: DType = DType::Q4_0;
    const SX8_TIMES: i32 = 1;

    /// The 64 quant bytes as four vectors, each unpacked once for all `N` rows. Each
    /// `dot16_relaxed` pairs two products into an i16 lane (|pair| ≤ 2·128·15), so the eight of a
    /// block add up in i16 (≤ 30720) and widen once: i16 lanes `2i, 2i + 1` are row `i`.
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N], c: &Consts) -> [v128; N] {
        let mask = c.nibble;
        let mut acc = [i16x8_splat(0); N];
        for k in 0..4 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let (lo, hi) = (v128_and(v, mask), high_nibbles(v, mask));
            for (i, a) in acc.iter_mut().enumerate() {
                let d = pair_dots(x[i].add(4 * k), lo, hi);
                *a = i16x8_add(*a, d);
            }
        }
        acc.map(|v| i32x4_dot_i16x8(v, c.ones16))
    }

    const PAIRS: bool = true;

    /// As [`Q4_0x4::isum`], each row's activation words loaded once for both groups (see
    /// `x4::group_pair_rows`). The sums start at zero: with chunk 0's products as their first
    /// value, LLVM kept the chunk loop with that test inside and V8 two copies of its body,
    /// 81 x86 instructions a chunk (76 for chunk 0) against 66, one more accumulator spilled.
    /// Without it, node (V8 14.6, one thread, five interleaved rounds) prefilled the 1,060-token
    /// prompt at 305–315 tok/s against 295–311, the 106-token one at 379–393 against 320–384.
    #[inline(always)]
    unsafe fn isum_pair(blk: [*const u8; 2], x: [*const u8; 4], c: &Consts) -> [[v128; 4]; 2] {
        let mask = c.nibble;
        let mut acc = [[i16x8_splat(0); 4]; 2];
        for k in 0..4 {
            let v = blk.map(|b| v128_load(b.add(QS + 16 * k) as *const v128));
            let (lo, hi) = (
                v.map(|v| v128_and(v, mask)),
                v.map(|v| high_nibbles(v, mask)),
            );
            for (i, &xi) in x.iter().enumerate() {
                let (xl, xh) = (
                    v128_load32_splat(xi.add(4 * k) as *const u32),
                    v128_load32_splat(xi.add(16 + 4 * k) as *const u32),
                );
                for (j, a) in acc.iter_mut().enumerate() {
                    let d = i16x8_add(dot16_relaxed(xl, lo[j]), dot16_relaxed(xh, hi[j]));
                    a[i] = i16x8_add(a[i], d);
                }
            }
        }
        acc.map(|a| a.map(|v| i32x4_dot_i16x8(v, c.ones16)))
    }
}

impl X4 for Q5_0x4 {
    const DTYPE: DType = DType::Q5_0;
    const SX8_TIMES: i32 = 2;

    /// As Q4_0's, with each nibble vector given its fifth bits from the block's bit planes: plane
    /// `p` shifted to bit 4 of every byte (one 16-bit shift: the mask drops what crosses bytes),
    /// masked to 16 and or-ed in. The pairs now reach 2·128·31, so the i16 sums widen every two
    /// chunks (≤ 31744).
    ///
    /// The block's eight quant vectors are made first, then each row takes all of them: one
    /// row's sums live at a time. Chunk by chunk across the rows, as Q4_0's, kept 2N sums (i16
    /// and i32) live beside the chunk's vectors, which V8 spilled: a wasm loop of a 2,048 × 640
    /// matrix against 106 rows ran 57 GOP/s so and 77–79 this way (Q4_0's 96–99 either way), and
    /// Gemma 3 270M Q4_K_M's Q5_0 qkv and gate/up went 46–50 → 66–68 GOP/s in its prefill.
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N], c: &Consts) -> [v128; N] {
        let (mask, sixteen) = (c.nibble, c.bit4);
        let planes = v128_load(blk.add(Q5_HIGH) as *const v128);
        let quants: [(v128, v128); 4] = core::array::from_fn(|k| {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let p = 2 * k as u32;
            (
                v128_or(v128_and(v, mask), bits_to_4(planes, p, sixteen)),
                v128_or(high_nibbles(v, mask), bits_to_4(planes, p + 1, sixteen)),
            )
        });
        x.map(|xi| {
            let d = |k: usize| pair_dots(xi.add(4 * k), quants[k].0, quants[k].1);
            let half = |k: usize| i32x4_dot_i16x8(i16x8_add(d(k), d(k + 1)), c.ones16);
            i32x4_add(half(0), half(2))
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
