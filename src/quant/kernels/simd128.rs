//! wasm32 SIMD128 kernels. Each mirrors its twin in `scalar.rs`: the same exact integer block
//! sums and the same four-accumulator f32 order (one accumulator per lane), so results are
//! bit-identical (tests check).

use core::arch::wasm32::*;

use crate::dtype::DType;
use crate::quant::blocks::read_f16;
use half::f16;

pub(crate) const Q4_BYTES: usize = 18; // DType::Q4_0.block_bytes()
pub(crate) const Q8_BYTES: usize = 34; // DType::Q8_0.block_bytes()
const _: () =
    assert!(DType::Q4_0.block_bytes() == Q4_BYTES && DType::Q8_0.block_bytes() == Q8_BYTES);

#[inline(always)]
pub(crate) fn load16(b: &[u8]) -> v128 {
    assert!(b.len() >= 16);
    // SAFETY: the assert above guarantees 16 readable bytes; v128_load allows unaligned reads.
    unsafe { v128_load(b.as_ptr() as *const v128) }
}

/// Σ a·b over 16 signed bytes, as four i32 partial sums (exact: |a·b| ≤ 128·128).
#[inline(always)]
fn dot_i8x16(a: v128, b: v128) -> v128 {
    let lo = i32x4_dot_i16x8(i16x8_extend_low_i8x16(a), i16x8_extend_low_i8x16(b));
    let hi = i32x4_dot_i16x8(i16x8_extend_high_i8x16(a), i16x8_extend_high_i8x16(b));
    i32x4_add(lo, hi)
}

/// `[Σa, Σb, Σc, Σd]` from four vectors of partial sums (a 4×4 transpose-and-add).
#[inline(always)]
pub(crate) fn hsum4_i32(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(a, b),
        i32x4_shuffle::<2, 6, 3, 7>(a, b),
    );
    let cd = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(c, d),
        i32x4_shuffle::<2, 6, 3, 7>(c, d),
    );
    i32x4_add(
        i32x4_shuffle::<0, 1, 4, 5>(ab, cd),
        i32x4_shuffle::<2, 3, 6, 7>(ab, cd),
    )
}

/// Runs `block_isum` (the exact integer sum of one block, as four i32 partials) over whole
/// blocks four at a time: lane `l` accumulates `(d_w · d_x) · isum` of blocks `4k + l`, exactly
/// like `scalar::accumulate4`; a ragged tail goes into lanes 0.. in order.
#[inline(always)]
pub(crate) fn dot_blocks4(
    w: &[u8],
    x: &[u8],
    wb_len: usize,
    xb_len: usize,
    block_isum: impl Fn(&[u8], &[u8]) -> v128,
) -> f32 {
    let n = (w.len() / wb_len).min(x.len() / xb_len);
    let mut acc = f32x4_splat(0.0);
    let mut b = 0;
    while b + 4 <= n {
        let (w4, x4) = (&w[b * wb_len..], &x[b * xb_len..]);
        let isums = hsum4_i32(
            block_isum(w4, x4),
            block_isum(&w4[wb_len..], &x4[xb_len..]),
            block_isum(&w4[2 * wb_len..], &x4[2 * xb_len..]),
            block_isum(&w4[3 * wb_len..], &x4[3 * xb_len..]),
        );
        let scales = f32x4(
            read_f16(w4) * read_f16(x4),
            read_f16(&w4[wb_len..]) * read_f16(&x4[xb_len..]),
            read_f16(&w4[2 * wb_len..]) * read_f16(&x4[2 * xb_len..]),
            read_f16(&w4[3 * wb_len..]) * read_f16(&x4[3 * xb_len..]),
        );
        acc = f32x4_add(acc, f32x4_mul(scales, f32x4_convert_i32x4(isums)));
        b += 4;
    }
    let mut lanes = [
        f32x4_extract_lane::<0>(acc),
        f32x4_extract_lane::<1>(acc),
        f32x4_extract_lane::<2>(acc),
        f32x4_extract_lane::<3>(acc),
    ];
    for (lane, b) in (b..n).enumerate() {
        let (wb, xb) = (&w[b * wb_len..], &x[b * xb_len..]);
        let v = block_isum(wb, xb);
        let isum = i32x4_extract_lane::<0>(hsum4_i32(v, v, v, v));
        lanes[lane] += read_f16(wb) * read_f16(xb) * isum as f32;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// The signed Q4_0 values of one block: elements 0..16 (low nibbles) and 16..32 (high), minus 8.
#[inline(always)]
fn unpack_q4_0(qs: v128) -> (v128, v128) {
    let mask = u8x16_splat(0x0F);
    let eight = i8x16_splat(8);
    let lo = i8x16_sub(v128_and(qs, mask), eight);
    let hi = i8x16_sub(u8x16_shr(qs, 4), eight);
    (lo, hi)
}

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb| {
        let (lo, hi) = unpack_q4_0(load16(&wb[2..]));
        i32x4_add(
            dot_i8x16(lo, load16(&xb[2..])),
            dot_i8x16(hi, load16(&xb[18..])),
        )
    })
}

pub fn vec_dot_q8_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q8_BYTES, Q8_BYTES, |wb, xb| {
        i32x4_add(
            dot_i8x16(load16(&wb[2..]), load16(&xb[2..])),
            dot_i8x16(load16(&wb[18..]), load16(&xb[18..])),
        )
    })
}

/// ggml's `quantize_row_q8_0_ref`, vectorised: `amax` is an exact max, `d = amax / 127` and
/// `id = 1 / d` are the same scalar operations, and rounding is half away from zero like C's
/// `roundf` (trunc, then step away from zero when the dropped fraction is >= 0.5; exact, since
/// |x·id| <= 127 leaves the fraction representable).
pub fn quantize_row_q8_0(x: &[f32], out: &mut [u8]) {
    for (xb, ob) in x.chunks_exact(32).zip(out.chunks_exact_mut(Q8_BYTES)) {
        let v: [v128; 8] = core::array::from_fn(|i| {
            let c = &xb[4 * i..4 * i + 4];
            f32x4(c[0], c[1], c[2], c[3])
        });
        let mut m = f32x4_abs(v[0]);
        for vi in &v[1..] {
            m = f32x4_max(m, f32x4_abs(*vi));
        }
        let amax = f32x4_extract_lane::<0>(m)
            .max(f32x4_extract_lane::<1>(m))
            .max(f32x4_extract_lane::<2>(m))
            .max(f32x4_extract_lane::<3>(m));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        ob[..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        let idv = f32x4_splat(id);
        let half = f32x4_splat(0.5);
        let mut q32 = [i32x4_splat(0); 8];
        for (q, vi) in q32.iter_mut().zip(&v) {
            let s = f32x4_mul(*vi, idv);
            let t = f32x4_trunc(s);
            let away = f32x4_ge(f32x4_abs(f32x4_sub(s, t)), half);
            // copysign(1, s) where the fraction rounds away, 0 elsewhere.
            let one = v128_or(f32x4_splat(1.0), v128_and(s, f32x4_splat(-0.0)));
            let r = f32x4_add(t, v128_and(one, away));
            *q = i32x4_trunc_sat_f32x4(r);
        }
        let q16a = i16x8_narrow_i32x4(q32[0], q32[1]);
        let q16b = i16x8_narrow_i32x4(q32[2], q32[3]);
        let q16c = i16x8_narrow_i32x4(q32[4], q32[5]);
        let q16d = i16x8_narrow_i32x4(q32[6], q32[7]);
        let lo = i8x16_narrow_i16x8(q16a, q16b);
        let hi = i8x16_narrow_i16x8(q16c, q16d);
        // SAFETY: `ob` is 34 bytes, so bytes 2..18 and 18..34 are in bounds; stores are unaligned-safe.
        unsafe {
            v128_store(ob[2..18].as_mut_ptr() as *mut v128, lo);
            v128_store(ob[18..34].as_mut_ptr() as *mut v128, hi);
        }
    }
}

/// Exact `Σ a[i]·b[i]` over signed bytes; the integer sum equals the scalar twin's.
pub fn isum_i8(a: &[i8], b: &[u8]) -> i32 {
    let n = a.len().min(b.len());
    let body = n / 16 * 16;
    let mut acc = i32x4_splat(0);
    for i in (0..body).step_by(16) {
        // SAFETY: `a` has at least `body` elements; i8 and u8 share size and alignment.
        let av = unsafe { v128_load(a[i..].as_ptr() as *const v128) };
        acc = i32x4_add(acc, dot_i8x16(av, load16(&b[i..])));
    }
    let mut sum = i32x4_extract_lane::<0>(hsum4_i32(acc, acc, acc, acc));
    for i in body..n {
        sum += a[i] as i32 * (b[i] as i8) as i32;
    }
    sum
}
