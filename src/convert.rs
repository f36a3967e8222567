//! `Tensor::to_dtype`: decoding to f32 from every dtype, and f32 to f16/bf16.
//!
//! Conversions walk the source with the row loop; rows that are contiguous go through `half`'s
//! bulk slice conversions (SIMD where the target has it), strided rows element by element.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::quant;
use crate::storage::{try_vec, Storage};
use crate::Tensor;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

impl Tensor {
    /// Converts to `dtype`.
    ///
    /// Same dtype: a cheap `Arc` clone. To f32: from every dtype that holds numbers to decode —
    /// f16, bf16 and the quantized formats (dequantization). From f32 to f16 or bf16 (round to
    /// nearest even). Not supported ([`Error::UnsupportedDType`]): requantization, and i8/i32 to
    /// or from float, which no op here needs.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let unsupported = || Error::UnsupportedDType {
            op: "to_dtype",
            dtype,
        };
        let storage = match (self.storage(), dtype) {
            (Storage::F16(v), DType::F32) => {
                Storage::F32(self.map_rows(v, |s, d| s.convert_to_f32_slice(d))?)
            }
            (Storage::BF16(v), DType::F32) => {
                Storage::F32(self.map_rows(v, |s, d| s.convert_to_f32_slice(d))?)
            }
            (Storage::F32(v), DType::F16) => {
                Storage::F16(self.map_rows(v, |s, d: &mut [f16]| d.convert_from_f32_slice(s))?)
            }
            (Storage::F32(v), DType::BF16) => {
                Storage::BF16(self.map_rows(v, |s, d: &mut [bf16]| d.convert_from_f32_slice(s))?)
            }
            (Storage::Quantized { dtype: q, bytes }, DType::F32) => {
                let mut out = try_vec(self.elem_count(), 0.0f32)?;
                quant::dequantize_row(*q, bytes, &mut out)?;
                Storage::F32(out)
            }
            _ => return Err(unsupported()),
        };
        Ok(Tensor::from_storage(storage, self.shape().clone()))
    }
}
