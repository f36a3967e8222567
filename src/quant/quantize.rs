//! ggml's `_ref` quantizers, bit for bit.
//!
//! Rounding, as ggml's reference C does it:
//! - Q8_0: `d = amax / 127`, `id = 1/d` (0 when `d == 0`), `q = round(x * id)` with halves away
//!   from zero (C `roundf`, Rust `f32::round`); `d` is stored as f16 (round to nearest even).
//! - Q4_0: `max` is the signed element of largest magnitude (first on ties), `d = max / -8`,
//!   `q = min(15, trunc(x * id + 8.5))` where the cast to i8 truncates toward zero, so the element
//!   equal to `max` maps to 0 and everything lands in 0..=15.
//!
//! Both compute `id` from the f32 `d`, not the rounded f16 one, exactly like ggml.

use crate::dtype::DType;
use half::f16;

use super::blocks::{QK4_0, QK8_0};

/// Quantizes `x` (a multiple of 32 long) to Q8_0 blocks appended to `out`.
pub fn quantize_row_q8_0(x: &[f32], out: &mut [u8]) {
    for (xb, ob) in x
        .chunks_exact(QK8_0)
        .zip(out.chunks_exact_mut(DType::Q8_0.block_bytes()))
    {
        let amax = xb.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        ob[..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        for (o, &v) in ob[2..].iter_mut().zip(xb) {
            *o = ((v * id).round() as i8) as u8;
        }
    }
}

/// Quantizes `x` (a multiple of 32 long) to Q4_0 blocks in `out`.
pub fn quantize_row_q4_0(x: &[f32], out: &mut [u8]) {
    for (xb, ob) in x
        .chunks_exact(QK4_0)
        .zip(out.chunks_exact_mut(DType::Q4_0.block_bytes()))
    {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in xb {
            if amax < v.abs() {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        ob[..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        for j in 0..QK4_0 / 2 {
            let lo = ((xb[j] * id + 8.5) as i8).min(15) as u8;
            let hi = ((xb[j + QK4_0 / 2] * id + 8.5) as i8).min(15) as u8;
            ob[2 + j] = lo | (hi << 4);
        }
    }
}
