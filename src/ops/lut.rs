//! Tesseract's table activations: `tanh` and the logistic function read from 4096-entry tables
//! at steps of 1/256 with linear interpolation, and the LSTM cell built on them. A recognizer
//! trained with these must run with them to give Tesseract's numbers; they differ from the
//! exact functions by up to ~2e-6.

use super::nn::LstmState;
use crate::error::{Error, Result};
use crate::{DType, Tensor};
use std::sync::OnceLock;

const TABLE_SIZE: usize = 4096;
const STEPS_PER_UNIT: f32 = 256.0;

/// `f(i / 256)` for `i < 4096`, computed in f64 and stored as f32 — as Tesseract's generated
/// tables are — each entry paired with the step to the next one (`t[i + 1] - t[i]`, the f32
/// subtraction the interpolation would do), so an interpolation reads one 8-byte pair.
/// Fixed-size, so the reads need no bounds checks.
pub(crate) struct Tables {
    tanh: Box<[[f32; 2]; TABLE_SIZE]>,
    logistic: Box<[[f32; 2]; TABLE_SIZE]>,
}

/// The tables, built on first use. Hot loops fetch them once and call [`Tables::tanh`] /
/// [`Tables::logistic`], which inline.
pub(crate) fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let at = |i: usize| i as f64 / STEPS_PER_UNIT as f64;
        let pairs = |f: &dyn Fn(f64) -> f64| {
            let v: Vec<f32> = (0..TABLE_SIZE).map(|i| f(at(i)) as f32).collect();
            let mut t = Box::new([[0.0f32; 2]; TABLE_SIZE]);
            for i in 0..TABLE_SIZE {
                t[i] = [
                    v[i],
                    if i + 1 < TABLE_SIZE {
                        v[i + 1] - v[i]
                    } else {
                        0.0
                    },
                ];
            }
            t
        };
        Tables {
            tanh: pairs(&|x| x.tanh()),
            logistic: pairs(&|x| 1.0 / (1.0 + (-x).exp())),
        }
    })
}

/// Interpolates `table` at `x ≥ 0`; 1 past the table's end, NaN stays NaN.
#[inline(always)]
fn interpolate(table: &[[f32; 2]; TABLE_SIZE], x: f32) -> f32 {
    let x = x * STEPS_PER_UNIT;
    if x.is_nan() {
        return x;
    }
    let index = x as usize; // truncation, as the C++ `static_cast<unsigned>`
    if index >= TABLE_SIZE - 1 {
        return 1.0;
    }
    let [a, step] = table[index];
    a + step * (x - index as f32)
}

impl Tables {
    /// Tesseract's `Tanh`: odd, through the table.
    #[inline(always)]
    pub(crate) fn tanh(&self, x: f32) -> f32 {
        if x < 0.0 {
            -interpolate(&self.tanh, -x)
        } else {
            interpolate(&self.tanh, x)
        }
    }

    /// Tesseract's `Logistic`: `1 - f(-x)` below zero, through the table.
    #[inline(always)]
    pub(crate) fn logistic(&self, x: f32) -> f32 {
        if x < 0.0 {
            1.0 - interpolate(&self.logistic, -x)
        } else {
            interpolate(&self.logistic, x)
        }
    }
}

/// Four-lane twins of [`Tables::tanh`] and [`Tables::logistic`]: the same f32 operations per
/// lane (each lane's pair is one 8-byte load), so the same bits for finite inputs; a NaN stays
/// NaN.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl Tables {
    #[inline(always)]
    fn interpolate4(
        table: &[[f32; 2]; TABLE_SIZE],
        x: core::arch::wasm32::v128,
    ) -> core::arch::wasm32::v128 {
        use core::arch::wasm32::*;
        let xs = f32x4_mul(x, f32x4_splat(STEPS_PER_UNIT));
        let index = u32x4_trunc_sat_f32x4(xs);
        let past_end = u32x4_ge(index, u32x4_splat(TABLE_SIZE as u32 - 1));
        let at = u32x4_min(index, u32x4_splat(TABLE_SIZE as u32 - 2));
        let pair = |lane: u32| table[lane as usize].as_ptr() as *const u64;
        // SAFETY: `at` < TABLE_SIZE - 1, so every pair read is inside the table.
        let (p01, p23) = unsafe {
            (
                v128_load64_lane::<1>(
                    v128_load64_zero(pair(u32x4_extract_lane::<0>(at))),
                    pair(u32x4_extract_lane::<1>(at)),
                ),
                v128_load64_lane::<1>(
                    v128_load64_zero(pair(u32x4_extract_lane::<2>(at))),
                    pair(u32x4_extract_lane::<3>(at)),
                ),
            )
        };
        let a = i32x4_shuffle::<0, 2, 4, 6>(p01, p23);
        let step = i32x4_shuffle::<1, 3, 5, 7>(p01, p23);
        let r = f32x4_add(
            a,
            f32x4_mul(step, f32x4_sub(xs, f32x4_convert_u32x4(index))),
        );
        v128_bitselect(f32x4_splat(1.0), r, past_end)
    }

    #[inline(always)]
    pub(crate) fn tanh4(&self, x: core::arch::wasm32::v128) -> core::arch::wasm32::v128 {
        use core::arch::wasm32::*;
        let neg = f32x4_lt(x, f32x4_splat(0.0));
        let r = Self::interpolate4(&self.tanh, v128_bitselect(f32x4_neg(x), x, neg));
        v128_bitselect(f32x4_neg(r), r, neg)
    }

    #[inline(always)]
    pub(crate) fn logistic4(&self, x: core::arch::wasm32::v128) -> core::arch::wasm32::v128 {
        use core::arch::wasm32::*;
        let neg = f32x4_lt(x, f32x4_splat(0.0));
        let r = Self::interpolate4(&self.logistic, v128_bitselect(f32x4_neg(x), x, neg));
        v128_bitselect(f32x4_sub(f32x4_splat(1.0), r), r, neg)
    }
}

/// `y = f(x)` four at a time (`f` = tanh or the logistic) in SIMD128 builds; returns how many.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn apply4(t: &Tables, tanh: bool, x: &[f32], y: &mut [f32]) -> usize {
    use core::arch::wasm32::*;
    let n = x.len().min(y.len()) / 4 * 4;
    for i in (0..n).step_by(4) {
        // SAFETY: i + 4 <= n, within both slices.
        unsafe {
            let v = v128_load(x.as_ptr().add(i) as *const v128);
            let r = if tanh { t.tanh4(v) } else { t.logistic4(v) };
            v128_store(y.as_mut_ptr().add(i) as *mut v128, r);
        }
    }
    n
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn apply4(_: &Tables, _: bool, _: &[f32], _: &mut [f32]) -> usize {
    0
}

/// Tesseract's `Tanh`: odd, through the table.
pub fn tanh_lut(x: f32) -> f32 {
    tables().tanh(x)
}

/// Tesseract's `Logistic`: `1 - f(-x)` below zero, through the table.
pub fn logistic_lut(x: f32) -> f32 {
    tables().logistic(x)
}

impl Tensor {
    fn lut_op(&self, op: &'static str, tanh: bool) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        let t = tables();
        let out = self.map_rows(a, |x, y: &mut [f32]| {
            let done = apply4(t, tanh, x, y);
            for (y, &v) in y[done..].iter_mut().zip(&x[done..]) {
                *y = if tanh { t.tanh(v) } else { t.logistic(v) };
            }
        })?;
        Ok(Tensor::new_f32(out, self.shape().clone()))
    }

    /// `tanh` as Tesseract computes it (see [`tanh_lut`]).
    pub fn tanh_lut(&self) -> Result<Tensor> {
        self.lut_op("tanh_lut", true)
    }

    /// The logistic function as Tesseract computes it (see [`logistic_lut`]).
    pub fn logistic_lut(&self) -> Result<Tensor> {
        self.lut_op("logistic_lut", false)
    }

    /// One LSTM step the way Tesseract's `LSTM::Forward` does it, from the four gates'
    /// pre-activations (cell input, input, forget, output; f32, one shape):
    /// `c = f·c_prev + tanh(ci)·i`, clipped to ±`clip`, then `h = tanh(c)·o`, every function
    /// through the tables and each product rounded separately (no fused multiply-add).
    pub fn lstm_cell_lut(
        cell_input: &Tensor,
        input_gate: &Tensor,
        forget_gate: &Tensor,
        output_gate: &Tensor,
        cell_prev: &Tensor,
        clip: f32,
    ) -> Result<LstmState> {
        const OP: &str = "lstm_cell_lut";
        if clip.is_nan() || clip < 0.0 {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("clip {clip} must be >= 0"),
            });
        }
        let all = [cell_input, input_gate, forget_gate, output_gate, cell_prev];
        for t in all {
            t.require_dtype(OP, DType::F32)?;
            if t.shape() != cell_input.shape() {
                return Err(Error::shape(OP, cell_input.shape(), t.shape()));
            }
        }
        let [ci, gi, gf, go, prev] = all.map(Tensor::to_vec_f32);
        let (ci, gi, gf, go, mut c) = (ci?, gi?, gf?, go?, prev?);
        let mut h = crate::storage::try_vec(c.len(), 0.0f32)?;
        let t = tables();
        for j in 0..c.len() {
            let mut s = c[j] * t.logistic(gf[j]);
            s += t.tanh(ci[j]) * t.logistic(gi[j]);
            s = s.clamp(-clip, clip);
            c[j] = s;
            h[j] = t.tanh(s) * t.logistic(go[j]);
        }
        let shape = cell_input.shape().clone();
        Ok(LstmState {
            cell: Tensor::new_f32(c, shape.clone()),
            hidden: Tensor::new_f32(h, shape),
        })
    }
}
