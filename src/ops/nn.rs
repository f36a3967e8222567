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

/// The element types the image-shaped ops below move (data movement and comparisons only).
trait Pixel: crate::storage::Element + Default + PartialOrd {
    /// A border value from the caller's `f64`.
    fn from_f64(v: f64) -> Self;

    /// `dst = max(dst, src)` elementwise (the first of equal values kept).
    #[inline]
    fn max_into(dst: &mut [Self], src: &[Self]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            if s > *d {
                *d = s;
            }
        }
    }
}

impl Pixel for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Pixel for i8 {
    /// Rounded half away from zero and saturated, as Tesseract's `IntCastRounded`.
    fn from_f64(v: f64) -> Self {
        v.round().clamp(-128.0, 127.0) as i8
    }

    /// Sixteen channels at a time in SIMD128 builds (integer max: the same values).
    #[inline]
    fn max_into(dst: &mut [i8], src: &[i8]) {
        let n = dst.len().min(src.len());
        for j in max_i8x16(&mut dst[..n], &src[..n])..n {
            dst[j] = dst[j].max(src[j]);
        }
    }
}

/// `dst = max(dst, src)` over whole vectors of sixteen; returns how many bytes it did.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn max_i8x16(dst: &mut [i8], src: &[i8]) -> usize {
    use core::arch::wasm32::*;
    let n = dst.len().min(src.len()) / 16 * 16;
    for i in (0..n).step_by(16) {
        // SAFETY: i + 16 <= n, within both slices.
        unsafe {
            let d = dst.as_mut_ptr().add(i) as *mut v128;
            v128_store(
                d,
                i8x16_max(v128_load(d), v128_load(src.as_ptr().add(i) as *const v128)),
            );
        }
    }
    n
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn max_i8x16(_: &mut [i8], _: &[i8]) -> usize {
    0
}

impl Tensor {
    /// Stacks each position's neighbourhood into its features: `[h, w, c]` to
    /// `[h, w, (2 half_w + 1) · (2 half_h + 1) · c]`, column offsets outer, row offsets inner
    /// (Tesseract's `Convolve`, which a fully-connected layer then multiplies).
    ///
    /// Positions outside the image take `border()`, called once per element in output order
    /// (Tesseract fills them from its seeded generator). f32 or i8; for i8 the value is rounded
    /// half away from zero.
    pub fn im2col_hw(
        &self,
        half_h: usize,
        half_w: usize,
        border: &mut dyn FnMut() -> f64,
    ) -> Result<Tensor> {
        match self.dtype() {
            DType::F32 => self.im2col_typed::<f32>(half_h, half_w, border),
            DType::I8 => self.im2col_typed::<i8>(half_h, half_w, border),
            dtype => Err(Error::UnsupportedDType {
                op: "im2col_hw",
                dtype,
            }),
        }
    }

    fn im2col_typed<T: Pixel>(
        &self,
        half_h: usize,
        half_w: usize,
        border: &mut dyn FnMut() -> f64,
    ) -> Result<Tensor> {
        const OP: &str = "im2col_hw";
        self.require_rank3(OP)?;
        let (h, w, c) = (self.dims()[0], self.dims()[1], self.dims()[2]);
        let window = |half: usize| half.checked_mul(2).and_then(|v| v.checked_add(1));
        let (kh, kw) = match (window(half_h), window(half_w)) {
            (Some(kh), Some(kw)) => (kh, kw),
            _ => return Err(Error::overflow(OP, &[half_h, half_w, 2])),
        };
        let feat = crate::shape::checked_product(OP, &[kh, kw, c])?;
        let shape = Shape::from([h, w, feat]);
        if shape.checked_elem_count()? == 0 {
            // Nothing to fill (no channels, or no positions): skip the kh·kw loop entirely.
            return Ok(Tensor::from_storage(T::into_storage(Vec::new()), shape));
        }
        let x = self.gather(T::slice(self.storage()).unwrap_or(&[]))?;
        let mut out = try_vec(shape.checked_elem_count()?, T::default())?;
        let mut o = 0;
        for y in 0..h {
            for xx in 0..w {
                for dx in 0..kw {
                    let sx = (xx + dx).checked_sub(half_w).filter(|&v| v < w);
                    for dy in 0..kh {
                        let sy = (y + dy).checked_sub(half_h).filter(|&v| v < h);
                        match (sy, sx) {
                            (Some(sy), Some(sx)) if c == 1 => out[o] = x[sy * w + sx],
                            (Some(sy), Some(sx)) => {
                                let at = (sy * w + sx) * c;
                                out[o..o + c].copy_from_slice(&x[at..at + c]);
                            }
                            _ => out[o..o + c]
                                .iter_mut()
                                .for_each(|v| *v = T::from_f64(border())),
                        }
                        o += c;
                    }
                }
            }
        }
        Ok(Tensor::from_storage(T::into_storage(out), shape))
    }

    /// Max pooling of `[h, w, c]` over non-overlapping `kh × kw` windows to
    /// `[h / kh, w / kw, c]` (remainders dropped, as Tesseract's `Maxpool`). f32 or i8.
    pub fn maxpool2d(&self, kh: usize, kw: usize) -> Result<Tensor> {
        match self.dtype() {
            DType::F32 => self.maxpool2d_typed::<f32>(kh, kw),
            DType::I8 => self.maxpool2d_typed::<i8>(kh, kw),
            dtype => Err(Error::UnsupportedDType {
                op: "maxpool2d",
                dtype,
            }),
        }
    }

    fn maxpool2d_typed<T: Pixel>(&self, kh: usize, kw: usize) -> Result<Tensor> {
        const OP: &str = "maxpool2d";
        self.require_rank3(OP)?;
        if kh == 0 || kw == 0 {
            return Err(Error::InvalidArgument {
                op: OP,
                reason: format!("window {kh}x{kw}"),
            });
        }
        let (h, w, c) = (self.dims()[0], self.dims()[1], self.dims()[2]);
        let (oh, ow) = (h / kh, w / kw);
        let x = self.gather(T::slice(self.storage()).unwrap_or(&[]))?;
        // No overflow: the output is no larger than the input.
        let mut out = try_vec(oh * ow * c, T::default())?;
        for oy in 0..oh {
            for ox in 0..ow {
                let dst = &mut out[(oy * ow + ox) * c..(oy * ow + ox + 1) * c];
                let first = (oy * kh * w + ox * kw) * c;
                dst.copy_from_slice(&x[first..first + c]);
                for y in oy * kh..(oy + 1) * kh {
                    for xx in ox * kw..(ox + 1) * kw {
                        let src = &x[(y * w + xx) * c..(y * w + xx + 1) * c];
                        T::max_into(dst, src);
                    }
                }
            }
        }
        Ok(Tensor::from_storage(
            T::into_storage(out),
            Shape::from([oh, ow, c]),
        ))
    }

    fn require_rank3(&self, op: &'static str) -> Result<()> {
        if self.rank() != 3 {
            return Err(Error::shape(op, "[height, width, channels]", self.shape()));
        }
        Ok(())
    }
}
