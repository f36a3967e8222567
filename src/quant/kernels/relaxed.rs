//! Relaxed-SIMD kernels (`+relaxed-simd`, shipped as a separate wasm binary).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add` is only deterministic when its second operand is in
//! 0..=127. Q4_0 nibbles are 0..=15, so `Σ (n − 8)·q8 = dot(q8, n) − dot(q8, 8)` is exact here
//! and equals the scalar twin's integer sum; the f32 order is the shared four-lane one.

use core::arch::wasm32::*;

use super::simd128::{
    dot_blocks4, gemm_q4_0_with, gemm_q8_0_with, load16, q8_0_row1_with, Q4_BYTES, Q8_BYTES,
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
/// matrices (a Q8_0 LM head) take the relaxed dot: each activation row is split once into
/// `x⁺ = max(x, 0)` and `x⁻ = max(−x, 0)`, both in 0..=127 (the Q8_0 quantizer never writes
/// −128), so `Σ w·x = dot(w, x⁺) − dot(w, x⁻)` is exact with two deterministic relaxed dots per
/// sixteen bytes.
pub fn gemm_q8_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let nb = act.blocks();
    // Only the rows outside the four-row tiles take the one-row kernel.
    let tiles = act.rows() / 4 * 4;
    let split: Vec<(Vec<u8>, Vec<u8>)> = (tiles..act.rows())
        .map(|r| split_signs(act.q8_row(r)))
        .collect();
    gemm_q8_0_with(w, act, out, |wr, nb_, r| {
        let (xp, xn) = (&split[r - tiles].0, &split[r - tiles].1);
        let z = i32x4_splat(0);
        let block = |b: usize| {
            // SAFETY: `gemm_q8_0_with` passes a weight row of `nb` blocks; `xp`/`xn` hold 32
            // bytes per block.
            let (wb, p, n) = unsafe {
                (
                    wr.add(b * Q8_BYTES),
                    xp.as_ptr().add(32 * b),
                    xn.as_ptr().add(32 * b),
                )
            };
            let (w0, w1) = unsafe {
                (
                    v128_load(wb.add(2) as *const v128),
                    v128_load(wb.add(18) as *const v128),
                )
            };
            let dot = |q: *const u8| unsafe {
                let lo = i32x4_relaxed_dot_i8x16_i7x16_add(w0, v128_load(q as *const v128), z);
                i32x4_relaxed_dot_i8x16_i7x16_add(w1, v128_load(q.add(16) as *const v128), lo)
            };
            i32x4_sub(dot(p), dot(n))
        };
        let x = act.q8_row(r);
        // SAFETY: as above; `x` and the scale table hold the row's `nb` blocks.
        unsafe {
            q8_0_row1_with(
                block,
                wr,
                nb_.min(nb),
                x.as_ptr(),
                act.dx()[r * nb..].as_ptr(),
            )
        }
    })
}

/// The quants of Q8_0 blocks as `(max(q, 0), max(−q, 0))`, 32 bytes a block each.
fn split_signs(row: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let q = row
        .chunks_exact(Q8_BYTES)
        .flat_map(|b| &b[2..])
        .map(|&v| v as i8);
    q.map(|v| {
        (
            (v.max(0)) as u8,
            (v.max(-127).saturating_neg().max(0)) as u8,
        )
    })
    .unzip()
}
