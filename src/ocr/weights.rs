//! Tesseract's int8 weight matrices (`WeightMatrix` in integer mode): one row per output, the
//! last column the bias, and per row the scale that turns the integer dot back into a float.

use super::serial::Reader;
use crate::error::Result;
use crate::storage::try_vec;
use crate::Tensor;

/// `kInt8Flag` and `kDoubleFlag` of the matrix's mode byte.
const INT8_FLAG: u8 = 1;
const DOUBLE_FLAG: u8 = 128;

/// An int8 matrix `[rows, cols]` (the last column is the bias) with one scale per row.
#[derive(Debug, Clone)]
pub struct Int8Matrix {
    pub rows: usize,
    pub cols: usize,
    /// `[rows, cols]` i8.
    pub weights: Tensor,
    /// `[rows]` f32: per row, the file's scale divided by 127, so `out = (Σ w·x + bias·127) ·
    /// scale` for inputs quantized as `x·127`, exactly as Tesseract's integer path computes it.
    pub scales: Tensor,
}

impl Int8Matrix {
    pub(crate) fn read(r: &mut Reader, what: &str) -> Result<Int8Matrix> {
        let at = r.offset();
        let mode = r.u8(what)?;
        if mode & DOUBLE_FLAG == 0 || mode & INT8_FLAG == 0 {
            return Err(super::serial::invalid(
                at,
                format!("{what}: mode {mode:#x} is not an int8 matrix (only integer \"fast\" models are supported)"),
            ));
        }
        let rows = r.u32("the matrix rows")? as usize;
        let cols = r.u32("the matrix columns")? as usize;
        let n = rows
            .checked_mul(cols)
            .filter(|&n| n <= r.remaining())
            .ok_or_else(|| r.error(format!("{what}: {rows}x{cols} weights exceed the data")))?;
        if cols < 1 {
            return Err(r.error(format!("{what} has no bias column")));
        }
        r.i8("the matrix fill value")?;
        let bytes = r.take(n, what)?;
        let mut w = try_vec(n, 0i8)?;
        for (d, &b) in w.iter_mut().zip(bytes) {
            *d = b as i8;
        }
        let count = r.count("the scale count", 8)?;
        if count != rows {
            return Err(r.error(format!("{what}: {count} scales for {rows} rows")));
        }
        let mut scales = try_vec(rows, 0.0f32)?;
        for s in &mut scales {
            // Tesseract keeps the scale in its float type after dividing by INT8_MAX.
            *s = (r.f64("a scale")? / 127.0) as f32;
        }
        Ok(Int8Matrix {
            rows,
            cols,
            weights: Tensor::from_i8(w, [rows, cols])?,
            scales: Tensor::from_f32(scales, [rows])?,
        })
    }

    /// The matrices one above the other (an LSTM's gates, multiplied as one).
    pub fn stack(parts: &[Int8Matrix]) -> Result<Int8Matrix> {
        let weights = Tensor::concat(
            &parts.iter().map(|m| m.weights.clone()).collect::<Vec<_>>(),
            0,
        )?;
        let scales = Tensor::concat(
            &parts.iter().map(|m| m.scales.clone()).collect::<Vec<_>>(),
            0,
        )?;
        Ok(Int8Matrix {
            rows: weights.dims()[0],
            cols: weights.dims()[1],
            weights,
            scales,
        })
    }
}
