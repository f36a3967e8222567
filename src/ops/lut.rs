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
/// tables are.
struct Tables {
    tanh: Vec<f32>,
    logistic: Vec<f32>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let at = |i: usize| i as f64 / STEPS_PER_UNIT as f64;
        Tables {
            tanh: (0..TABLE_SIZE).map(|i| at(i).tanh() as f32).collect(),
            logistic: (0..TABLE_SIZE)
                .map(|i| (1.0 / (1.0 + (-at(i)).exp())) as f32)
                .collect(),
        }
    })
}

/// Interpolates `table` at `x ≥ 0`; 1 past the table's end, NaN stays NaN.
#[inline]
fn interpolate(table: &[f32], x: f32) -> f32 {
    let x = x * STEPS_PER_UNIT;
    if x.is_nan() {
        return x;
    }
    let index = x as usize; // truncation, as the C++ `static_cast<unsigned>`
    if index >= TABLE_SIZE - 1 {
        return 1.0;
    }
    let (a, b) = (table[index], table[index + 1]);
    a + (b - a) * (x - index as f32)
}

/// Tesseract's `Tanh`: odd, through the table.
#[inline]
pub fn tanh_lut(x: f32) -> f32 {
    if x < 0.0 {
        -interpolate(&tables().tanh, -x)
    } else {
        interpolate(&tables().tanh, x)
    }
}

/// Tesseract's `Logistic`: `1 - f(-x)` below zero, through the table.
#[inline]
pub fn logistic_lut(x: f32) -> f32 {
    if x < 0.0 {
        1.0 - interpolate(&tables().logistic, -x)
    } else {
        interpolate(&tables().logistic, x)
    }
}

impl Tensor {
    fn lut_op(&self, op: &'static str, f: fn(f32) -> f32) -> Result<Tensor> {
        let a = self.f32_storage(op)?;
        let out = self.map_rows(a, |x, y: &mut [f32]| {
            for (y, &v) in y.iter_mut().zip(x) {
                *y = f(v);
            }
        })?;
        Ok(Tensor::new_f32(out, self.shape().clone()))
    }

    /// `tanh` as Tesseract computes it (see [`tanh_lut`]).
    pub fn tanh_lut(&self) -> Result<Tensor> {
        self.lut_op("tanh_lut", tanh_lut)
    }

    /// The logistic function as Tesseract computes it (see [`logistic_lut`]).
    pub fn logistic_lut(&self) -> Result<Tensor> {
        self.lut_op("logistic_lut", logistic_lut)
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
        for j in 0..c.len() {
            let mut s = c[j] * logistic_lut(gf[j]);
            s += tanh_lut(ci[j]) * logistic_lut(gi[j]);
            s = s.clamp(-clip, clip);
            c[j] = s;
            h[j] = tanh_lut(s) * logistic_lut(go[j]);
        }
        let shape = cell_input.shape().clone();
        Ok(LstmState {
            cell: Tensor::new_f32(c, shape.clone()),
            hidden: Tensor::new_f32(h, shape),
        })
    }
}
