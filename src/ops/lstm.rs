//! A whole integer LSTM sequence in one op (Tesseract's `LSTM::Forward` in integer mode): the
//! same numbers as stepping [`Tensor::linear_i8`] and [`Tensor::lstm_cell_lut`] through time
//! (tests check it bit for bit), without a dozen small tensors per timestep. The input part of
//! every gate sum is one batched GEMM over all timesteps; each step then adds only the
//! recurrent part, which is exact because the sums are integers.

use super::int8::quantize_unit;
use super::lut::tables;
use crate::error::{Error, Result};
use crate::quant::kernels::gemm_i8;
use crate::shape::checked_product;
use crate::storage::try_vec;
use crate::{DType, Shape, Tensor};

/// Activations are quantized as `x · 127`; the bias joins the integer sum scaled alike.
const UNIT: i32 = i8::MAX as i32;

impl Tensor {
    /// Runs an LSTM along the middle axis of `self` (`[batch, steps, ni]` i8: independent
    /// sequences, Tesseract's rows): `gates` is `[4·ns, ni + ns + 1]` i8 (the CI, GI, GF1, GO
    /// matrices stacked, each over `[input, previous output, bias]`) with per-row `scales`
    /// `[4·ns]`. Each step computes the four gate sums exactly, scales them, and applies
    /// [`Tensor::lstm_cell_lut`]'s update with the cell clipped to ±`clip`; the output (int8,
    /// `quantize_unit_i8` of `h`) feeds the next step. Returns `[batch, steps, ns]`, or
    /// `[batch, 1, ns]` (each sequence's last output) when `summarize`.
    pub fn lstm_i8(
        &self,
        gates: &Tensor,
        scales: &Tensor,
        clip: f32,
        summarize: bool,
    ) -> Result<Tensor> {
        const OP: &str = "lstm_i8";
        self.require_dtype(OP, DType::I8)?;
        gates.require_dtype(OP, DType::I8)?;
        scales.require_dtype(OP, DType::F32)?;
        if clip.is_nan() || clip < 0.0 {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("clip {clip} must be >= 0"),
            });
        }
        let bad = || {
            Error::shape(
                OP,
                "x [batch, steps, ni], gates [4 ns, ni + ns + 1], scales [4 ns]",
                format!(
                    "x {}, gates {}, scales {}",
                    self.shape(),
                    gates.shape(),
                    scales.shape()
                ),
            )
        };
        let (&[b, t, ni], &[g, cols]) = (self.dims(), gates.dims()) else {
            return Err(bad());
        };
        let ns = g / 4;
        if g % 4 != 0 || ns == 0 || cols != ni + ns + 1 || scales.dims() != [g] || cols >= 1 << 17 {
            return Err(bad());
        }
        let out_steps = if summarize { 1 } else { t };
        let shape = Shape::from([b, out_steps, ns]);
        let mut out = try_vec(shape.checked_elem_count()?, 0i8)?;
        let x = self.to_vec_i8()?;
        let w = gates.to_vec_i8()?;
        let s = scales.to_vec_f32()?;
        // Input part of every gate sum, for all sequences and steps at once: [b·t, 4 ns].
        let mut input_part = try_vec(checked_product(OP, &[b, t, g])?, 0i32)?;
        if ni > 0 {
            gemm_i8(&x, ni, &w, cols, &mut input_part);
        }
        let bias: Vec<i32> = (0..g)
            .map(|o| w[o * cols + cols - 1] as i32 * UNIT)
            .collect();
        // `b` is free when the input is empty (`t` or `ni` zero), so these products are checked.
        let mut hidden = try_vec(checked_product(OP, &[b, ns])?, 0i8)?; // the previous output
        let mut cell = try_vec(checked_product(OP, &[b, ns])?, 0.0f32)?;
        let mut rec = try_vec(checked_product(OP, &[b, g])?, 0i32)?;
        let mut pre = try_vec(g, 0.0f32)?;
        let lut = tables();
        for step in 0..t {
            gemm_i8(&hidden, ns, &w[ni..], cols, &mut rec);
            for seq in 0..b {
                let row = (seq * t + step) * g;
                gate_inputs(
                    &input_part[row..row + g],
                    &rec[seq * g..(seq + 1) * g],
                    &bias,
                    &s,
                    &mut pre,
                );
                let (c, h) = (
                    &mut cell[seq * ns..(seq + 1) * ns],
                    &mut hidden[seq * ns..(seq + 1) * ns],
                );
                cell_update(lut, &pre, clip, c, h);
                if !summarize {
                    out[(seq * t + step) * ns..][..ns].copy_from_slice(h);
                }
            }
        }
        if summarize {
            out.copy_from_slice(&hidden);
        }
        Tensor::from_i8(out, shape)
    }
}

/// `pre[o] = (input[o] + rec[o] + bias[o]) as f32 · scale[o]`: one exact integer sum per gate
/// output, converted once and scaled (Tesseract's `MatrixDotVector` result).
fn gate_inputs(input: &[i32], rec: &[i32], bias: &[i32], scale: &[f32], pre: &mut [f32]) {
    for o in 0..pre.len() {
        pre[o] = (input[o] + rec[o] + bias[o]) as f32 * scale[o];
    }
}

/// One step of every cell from the gates' pre-activations `pre = [ci | gi | gf | go]`:
/// `c = c·σ(gf) + tanh(ci)·σ(gi)` clipped to ±`clip`, `h = q(tanh(c)·σ(go))`, with
/// Tesseract's tables; four cells a time in SIMD128 builds (same f32 operations per lane, so
/// the same bits), the rest one by one.
fn cell_update(lut: &super::lut::Tables, pre: &[f32], clip: f32, c: &mut [f32], h: &mut [i8]) {
    let ns = c.len();
    for j in cell_update4(lut, pre, clip, c, h)..ns {
        let mut state = c[j] * lut.logistic(pre[2 * ns + j]);
        state += lut.tanh(pre[j]) * lut.logistic(pre[ns + j]);
        state = state.clamp(-clip, clip);
        c[j] = state;
        h[j] = quantize_unit(lut.tanh(state) * lut.logistic(pre[3 * ns + j]));
    }
}

/// [`cell_update`]'s SIMD128 body over whole groups of four cells; returns how many it did.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn cell_update4(_: &super::lut::Tables, _: &[f32], _: f32, _: &mut [f32], _: &mut [i8]) -> usize {
    0
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn cell_update4(
    lut: &super::lut::Tables,
    pre: &[f32],
    clip: f32,
    c: &mut [f32],
    h: &mut [i8],
) -> usize {
    let ns = c.len();
    let mut j = 0;
    {
        use core::arch::wasm32::*;
        let (hi, lo) = (f32x4_splat(clip), f32x4_splat(-clip));
        while j + 4 <= ns {
            // SAFETY: j + 4 <= ns; `pre` holds 4·ns gate values and `c` ns cells.
            unsafe {
                let ld = |k: usize| v128_load(pre.as_ptr().add(k * ns + j) as *const v128);
                let cp = c.as_mut_ptr().add(j) as *mut v128;
                let mut state = f32x4_mul(v128_load(cp), lut.logistic4(ld(2)));
                state = f32x4_add(state, f32x4_mul(lut.tanh4(ld(0)), lut.logistic4(ld(1))));
                state = f32x4_max(f32x4_min(state, hi), lo);
                v128_store(cp, state);
                let out = f32x4_mul(lut.tanh4(state), lut.logistic4(ld(3)));
                // `quantize_unit` per lane: round |x·127| half up in f32, restore the sign,
                // clamp to ±127 (NaN truncates to 0, as the scalar cast does).
                let x = f32x4_mul(out, f32x4_splat(127.0));
                let r = i32x4_trunc_sat_f32x4(f32x4_add(f32x4_abs(x), f32x4_splat(0.5)));
                let r = v128_bitselect(i32x4_neg(r), r, f32x4_lt(x, f32x4_splat(0.0)));
                let r = i32x4_max(i32x4_min(r, i32x4_splat(127)), i32x4_splat(-127));
                let b = i8x16_narrow_i16x8(i16x8_narrow_i32x4(r, r), i16x8_narrow_i32x4(r, r));
                v128_store32_lane::<0>(b, h.as_mut_ptr().add(j) as *mut u32);
            }
            j += 4;
        }
    }
    j
}
