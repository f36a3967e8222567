//! Small neural-network building blocks: LSTM cell, 1-D convolution and pooling, and
//! Tesseract int8 weight decoding.

use crate::error::{Error, Result};
use crate::storage::try_vec;
use crate::{DType, Shape, Tensor};

/// The state an LSTM cell carries to the next timestep.
#[derive(Debug, Clone)]
pub struct LstmState {
    /// `c' = sigmoid(f) * c + sigmoid(i) * tanh(g)`
    pub cell: Tensor,
    /// `h' = sigmoid(o) * tanh(c')`
    pub hidden: Tensor,
}

impl Tensor {
    /// One LSTM timestep from the four gate pre-activations and the previous cell state.
    ///
    /// All five tensors must be f32 with one identical shape; no broadcasting, because a
    /// disagreement between gate widths is a bug to surface.
    pub fn lstm_cell(
        input_gate: &Tensor,
        forget_gate: &Tensor,
        cell_candidate: &Tensor,
        output_gate: &Tensor,
        cell_prev: &Tensor,
    ) -> Result<LstmState> {
        let all = [
            input_gate,
            forget_gate,
            cell_candidate,
            output_gate,
            cell_prev,
        ];
        for t in all {
            t.require_dtype("lstm_cell", DType::F32)?;
            if t.shape() != input_gate.shape() {
                return Err(Error::shape("lstm_cell", input_gate.shape(), t.shape()));
            }
        }
        let i = input_gate.sigmoid()?;
        let f = forget_gate.sigmoid()?;
        let g = cell_candidate.tanh()?;
        let o = output_gate.sigmoid()?;
        let cell = f.mul(cell_prev)?.add(&i.mul(&g)?)?;
        let hidden = o.mul(&cell.tanh()?)?;
        Ok(LstmState { cell, hidden })
    }

    /// 1-D cross-correlation ("valid", no padding) with a stride.
    ///
    /// `self` is `[in_ch, len]`, `weight` is `[out_ch, in_ch, kernel]`, `bias` is `[out_ch]`;
    /// the result is `[out_ch, (len - kernel) / stride + 1]` with
    /// `out[oc][t] = bias[oc] + Σ_ic Σ_k x[ic][t*stride + k] * w[oc][ic][k]`.
    pub fn conv1d(&self, weight: &Tensor, bias: Option<&Tensor>, stride: usize) -> Result<Tensor> {
        const OP: &str = "conv1d";
        self.require_dtype(OP, DType::F32)?;
        weight.require_dtype(OP, DType::F32)?;
        if let Some(b) = bias {
            b.require_dtype(OP, DType::F32)?;
        }
        let desc = || {
            format!(
                "input {}, weight {}, bias {:?}, stride {stride}",
                self.shape(),
                weight.shape(),
                bias.map(|b| b.shape().clone())
            )
        };
        let expected =
            "input [in_ch, len], weight [out_ch, in_ch, k <= len], bias [out_ch], stride > 0";
        if self.rank() != 2 || weight.rank() != 3 || stride == 0 {
            return Err(Error::shape(OP, expected, desc()));
        }
        let (cin, len) = (self.dims()[0], self.dims()[1]);
        let (cout, wcin, kernel) = (weight.dims()[0], weight.dims()[1], weight.dims()[2]);
        if wcin != cin || kernel > len || kernel == 0 || bias.is_some_and(|b| b.dims() != [cout]) {
            return Err(Error::shape(OP, expected, desc()));
        }
        let out_len = (len - kernel) / stride + 1;
        // Checked before anything is allocated: with `in_ch = 0` both inputs are empty, so
        // `out_ch` and `len` are free and their product can overflow (it wraps on wasm32 for
        // any two sizes of 65 536).
        let shape = Shape::from([cout, out_len]);
        let mut out = try_vec(shape.checked_elem_count()?, 0.0f32)?;
        let x = self.to_vec_f32()?;
        let w = weight.to_vec_f32()?;
        let b = bias.map(Tensor::to_vec_f32).transpose()?;
        for oc in 0..cout {
            for t in 0..out_len {
                let mut acc = b.as_ref().map_or(0.0, |b| b[oc]);
                for ic in 0..cin {
                    for kk in 0..kernel {
                        acc += x[ic * len + t * stride + kk] * w[(oc * cin + ic) * kernel + kk];
                    }
                }
                out[oc * out_len + t] = acc;
            }
        }
        Ok(Tensor::new_f32(out, shape))
    }

    /// 1-D max pooling per channel, no padding: `[ch, len] -> [ch, (len - kernel) / stride + 1]`.
    pub fn maxpool1d(&self, kernel: usize, stride: usize) -> Result<Tensor> {
        const OP: &str = "maxpool1d";
        self.require_dtype(OP, DType::F32)?;
        if self.rank() != 2 || kernel == 0 || stride == 0 || kernel > self.dims()[1] {
            return Err(Error::shape(
                OP,
                "input [ch, len] with 0 < kernel <= len and stride > 0",
                format!("{} with kernel {kernel}, stride {stride}", self.shape()),
            ));
        }
        let (ch, len) = (self.dims()[0], self.dims()[1]);
        let out_len = (len - kernel) / stride + 1;
        let x = self.to_vec_f32()?;
        // No overflow: `out_len <= len`, and `[ch, len]` passed `checked_elem_count`.
        let mut out = try_vec(ch * out_len, 0.0f32)?;
        for c in 0..ch {
            for t in 0..out_len {
                let win = &x[c * len + t * stride..c * len + t * stride + kernel];
                out[c * out_len + t] = win.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            }
        }
        Ok(Tensor::new_f32(out, Shape::from([ch, out_len])))
    }

    /// Decodes a Tesseract int8 weight matrix: `out[i][j] = weights[i * cols + j] * scales[i]`.
    pub fn tessdata_int8_to_f32(
        weights: &[i8],
        scales: &[f32],
        rows: usize,
        cols: usize,
    ) -> Result<Tensor> {
        const OP: &str = "tessdata_int8_to_f32";
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::overflow(OP, &[rows, cols]))?;
        if weights.len() != n || scales.len() != rows {
            return Err(Error::shape(
                OP,
                format!("{n} weights and {rows} scales"),
                format!("{} weights and {} scales", weights.len(), scales.len()),
            ));
        }
        let mut out = try_vec(n, 0.0f32)?;
        for (i, row) in out.chunks_exact_mut(cols.max(1)).enumerate().take(rows) {
            for (j, y) in row.iter_mut().enumerate() {
                *y = weights[i * cols + j] as f32 * scales[i];
            }
        }
        Ok(Tensor::new_f32(out, Shape::from([rows, cols])))
    }
}
