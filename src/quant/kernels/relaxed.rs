//! Relaxed-SIMD kernels (`+relaxed-simd`, shipped as a separate wasm binary).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add` is only deterministic when its second operand is in
//! 0..=127. Q4_0 nibbles are 0..=15, so `Σ (n − 8)·q8 = dot(q8, n) − dot(q8, 8)` is exact here
//! and equals the scalar twin's integer sum; the f32 order is the shared four-lane one.

use core::arch::wasm32::*;

use super::simd128::{
    dot_blocks4, gemm_i8_with, gemm_q4_0_with, gemm_q8_0_with, load16, q8_0_row1_with, I8Dot,
    Q4_BYTES, Q8_BYTES,
};
use crate::quant::act::Q8Act;

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mask = u8x16_splat(0x0F);
    let eight = u8x16_splat(8);
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb| {
        let qs = load16(&wb[2..]);
        let (x0, x1) = (load16(&xb[2..]), load16(&xb[18..]));
        let z = i32x4_splat(0);
        let pos = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            u8x16_shr(qs, 4),
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
/// matrices (a Q8_0 LM head) take the relaxed dot over the activation's sign-split quants
/// (`Q8Act::split_row`: `x⁺ = max(x, 0)`, `x⁻ = max(−x, 0)`, both 7-bit), so
/// `Σ w·x = dot(w, x⁺) − dot(w, x⁻)` is exact with two deterministic relaxed dots per sixteen
/// bytes.
pub fn gemm_q8_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let nb = act.blocks();
    gemm_q8_0_with(w, act, out, |wr, r| {
        let split = act.split_row(r).as_ptr();
        let z = i32x4_splat(0);
        let block = |b: usize| {
            // SAFETY: `gemm_q8_0_with` passes a weight row of `nb` blocks, and the split row
            // holds 64 bytes per block.
            unsafe {
                let (wb, s) = (wr.add(b * Q8_BYTES), split.add(64 * b));
                let (w0, w1) = (
                    v128_load(wb.add(2) as *const v128),
                    v128_load(wb.add(18) as *const v128),
                );
                let dot = |q: *const u8| {
                    let lo = i32x4_relaxed_dot_i8x16_i7x16_add(w0, v128_load(q as *const v128), z);
                    i32x4_relaxed_dot_i8x16_i7x16_add(w1, v128_load(q.add(16) as *const v128), lo)
                };
                i32x4_sub(dot(s), dot(s.add(32)))
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
