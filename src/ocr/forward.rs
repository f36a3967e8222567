//! The recognizer's forward pass as Tensor ops. Activations are `[height, width, features]`:
//! int8 between layers (Tesseract's integer mode: values in [-1, 1] stored as `x · 127`), f32
//! probabilities out of the final softmax. Rows are independent sequences for the LSTMs, so a
//! row-wise LSTM runs every row of the image as one batch.

use super::network::{Activation, Kind, Layer, Lstm, Reorder};
use super::rand::TessRand;
use super::weights::Int8Matrix;
use crate::error::{Error, Result};
use crate::Tensor;

/// Tesseract clips LSTM cell states to this range (`kStateClip`).
const STATE_CLIP: f32 = 100.0;

/// Runs `layer` on `x`; `rand` fills the convolution's out-of-image neighbours.
pub(crate) fn forward(layer: &Layer, x: Tensor, rand: &mut TessRand) -> Result<Tensor> {
    match &layer.kind {
        Kind::Input { .. } => Ok(x),
        Kind::Convolve { half_x, half_y } => {
            x.im2col_hw(*half_y, *half_x, &mut || rand.signed(127.0))
        }
        Kind::Maxpool { x_scale, y_scale } => x.maxpool2d(*y_scale, *x_scale),
        Kind::Series(children) => children.iter().try_fold(x, |x, c| forward(c, x, rand)),
        Kind::Parallel(children) => {
            let outs = children
                .iter()
                .map(|c| forward(c, x.clone(), rand))
                .collect::<Result<Vec<_>>>()?;
            Tensor::concat(&outs, 2)
        }
        Kind::Reversed { reorder, child } => {
            let y = forward(child, reorder_view(*reorder, &x)?, rand)?;
            reorder_view(*reorder, &y)
        }
        Kind::FullyConnected {
            activation,
            weights,
        } => fully_connected(&x, *activation, weights),
        Kind::Lstm(lstm) => lstm_forward(&x, lstm),
    }
}

/// A `Reversed` layer's reordering (its own inverse): mirrored columns or rows, or rows and
/// columns swapped.
fn reorder_view(reorder: Reorder, x: &Tensor) -> Result<Tensor> {
    match reorder {
        Reorder::Rtl => x.flip(1),
        Reorder::Ttb => x.flip(0),
        Reorder::XyTranspose => x.transpose(0, 1)?.contiguous(),
    }
}

fn fully_connected(x: &Tensor, activation: Activation, w: &Int8Matrix) -> Result<Tensor> {
    let (h, wd, ni) = dims3(x)?;
    let y = x.reshape([h * wd, ni])?.linear_i8(&w.weights, &w.scales)?;
    let no = y.dims()[1];
    let y = match activation {
        Activation::Softmax => return y.softmax(1)?.reshape([h, wd, no]),
        Activation::Tanh => y.tanh_lut()?,
        Activation::Logistic => y.logistic_lut()?,
        Activation::Relu => y.relu()?,
        Activation::Linear => y,
        Activation::PosClip => y
            .maximum(&Tensor::from_f32(vec![0.0], [1])?)?
            .minimum(&Tensor::from_f32(vec![1.0], [1])?)?,
        Activation::SymClip => y
            .maximum(&Tensor::from_f32(vec![-1.0], [1])?)?
            .minimum(&Tensor::from_f32(vec![1.0], [1])?)?,
    };
    y.quantize_unit_i8()?.reshape([h, wd, no])
}

/// A 1-D LSTM along each row: `[h, w, ni]` to `[h, w, cells]`, or `[h, 1, cells]` when it
/// summarizes (only a row's last output is kept).
fn lstm_forward(x: &Tensor, lstm: &Lstm) -> Result<Tensor> {
    x.lstm_i8(
        &lstm.gates.weights,
        &lstm.gates.scales,
        STATE_CLIP,
        lstm.summarize,
    )
}

fn dims3(x: &Tensor) -> Result<(usize, usize, usize)> {
    match *x.dims() {
        [h, w, c] => Ok((h, w, c)),
        _ => Err(Error::shape(
            "ocr forward",
            "[height, width, features]",
            x.shape(),
        )),
    }
}
