//! Block layouts and the reference dequantizers (the oracle for every fused kernel).

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Elements per Q4_0 block.
pub const QK4_0: usize = 32;
/// Elements per Q8_0 block.
pub const QK8_0: usize = 32;

const _: () = assert!(DType::Q4_0.block_bytes() == 2 + QK4_0 / 2);
const _: () = assert!(DType::Q8_0.block_bytes() == 2 + QK8_0);

/// Reads a little-endian f16 (a block scale) as f32.
#[inline]
pub(crate) fn read_f16(b: &[u8]) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[0], b[1]]))
}

/// Exact f16 → f32 without branches on the common path (scales are read once per block, so
/// this sits in every quantized inner loop): shift the exponent and mantissa into f32 position
/// and multiply by 2^112 to rebias, which also normalises subnormals exactly; infinities and
/// NaNs (exponent 31) get the f32 all-ones exponent. Equals `half::f16::to_f32` for all 65 536
/// patterns (tested).
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let magnitude = f32::from_bits(((h & 0x7FFF) as u32) << 13) * f32::from_bits(0x7780_0000); // 2^112
    let bits = if h & 0x7C00 == 0x7C00 {
        0x7F80_0000 | (((h & 0x03FF) as u32) << 13)
    } else {
        magnitude.to_bits()
    };
    f32::from_bits(bits | (((h & 0x8000) as u32) << 16))
}

/// f32 → f16 bits, rounding to nearest even, for finite `x` with |x| < 65520 (where the result
/// is finite) — what `half::f16::from_f32` returns there, without its general-case branches.
/// The model's GELU indexes a table by the f16 of every FFN activation, millions per prompt.
/// Normal results round the mantissa with the usual add-and-shift; subnormal ones come from
/// adding 0.5, which makes the FPU round |x| to a multiple of 2^-24 (the subnormal step).
#[inline]
pub fn f32_to_f16_finite(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7FFF_FFFF;
    let h = if a < 0x3880_0000 {
        // |x| < 2^-14: subnormal (or zero) in f16
        ((f32::from_bits(a) + 0.5).to_bits() - 0x3F00_0000) as u16
    } else {
        ((a + 0x0FFF + ((a >> 13) & 1) - (112 << 23)) >> 13) as u16
    };
    h | sign
}

/// Dequantizes whole Q4_0 blocks: `bytes.len() / 18` blocks into `out` (32 floats each).
pub fn dequantize_row_q4_0(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q4_0.block_bytes())
        .zip(out.chunks_exact_mut(QK4_0))
    {
        let d = read_f16(block);
        let qs = &block[2..];
        for j in 0..QK4_0 / 2 {
            y[j] = ((qs[j] & 0x0F) as i32 - 8) as f32 * d;
            y[j + QK4_0 / 2] = ((qs[j] >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// Dequantizes whole Q8_0 blocks: `bytes.len() / 34` blocks into `out` (32 floats each).
pub fn dequantize_row_q8_0(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(DType::Q8_0.block_bytes())
        .zip(out.chunks_exact_mut(QK8_0))
    {
        let d = read_f16(block);
        for (o, &q) in y.iter_mut().zip(&block[2..]) {
            *o = (q as i8) as f32 * d;
        }
    }
}

/// Dequantizes `bytes` of `dtype` into `out`, which must hold exactly the elements they encode.
pub fn dequantize_row(dtype: DType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    let traits = super::traits::quant_type(dtype).ok_or(Error::UnsupportedDType {
        op: "dequantize_row",
        dtype,
    })?;
    let blocks = bytes.len() / dtype.block_bytes();
    if bytes.len() % dtype.block_bytes() != 0 || out.len() != blocks * dtype.block_elems() {
        return Err(Error::InvalidArgument {
            op: "dequantize_row",
            reason: format!(
                "{} bytes of {dtype} do not fill {} output elements",
                bytes.len(),
                out.len()
            ),
        });
    }
    (traits.dequantize)(bytes, out);
    Ok(())
}
