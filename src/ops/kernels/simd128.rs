//! wasm32 SIMD128 f32 kernels; bit-identical to `scalar.rs` (see the module docs).

use core::arch::wasm32::*;

use super::Arith;

#[inline(always)]
fn load(x: &[f32]) -> v128 {
    assert!(x.len() >= 4);
    // SAFETY: four readable f32s checked above; unaligned loads are allowed.
    unsafe { v128_load(x.as_ptr() as *const v128) }
}

#[inline(always)]
fn store(y: &mut [f32], v: v128) {
    assert!(y.len() >= 4);
    // SAFETY: four writable f32s checked above; unaligned stores are allowed.
    unsafe { v128_store(y.as_mut_ptr() as *mut v128, v) }
}

pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let av = f32x4_splat(a);
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        let v = f32x4_add(load(&y[i..]), f32x4_mul(av, load(&x[i..])));
        store(&mut y[i..], v);
    }
    for i in body..n {
        y[i] += a * x[i];
    }
}

pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let body = n / 4 * 4;
    let mut acc = f32x4_splat(0.0);
    for i in (0..body).step_by(4) {
        acc = f32x4_add(acc, f32x4_mul(load(&x[i..]), load(&y[i..])));
    }
    let mut lanes = [
        f32x4_extract_lane::<0>(acc),
        f32x4_extract_lane::<1>(acc),
        f32x4_extract_lane::<2>(acc),
        f32x4_extract_lane::<3>(acc),
    ];
    for (lane, i) in (body..n).enumerate() {
        lanes[lane] += x[i] * y[i];
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

#[inline(always)]
fn apply4(op: Arith, a: v128, b: v128) -> v128 {
    match op {
        Arith::Add => f32x4_add(a, b),
        Arith::Sub => f32x4_sub(a, b),
        Arith::Mul => f32x4_mul(a, b),
        Arith::Div => f32x4_div(a, b),
    }
}

pub fn binary(op: Arith, a: &[f32], b: &[f32], out: &mut [f32]) {
    let n = out.len().min(a.len()).min(b.len());
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        store(&mut out[i..], apply4(op, load(&a[i..]), load(&b[i..])));
    }
    for i in body..n {
        out[i] = op.apply(a[i], b[i]);
    }
}

pub fn binary_scalar_rhs(op: Arith, a: &[f32], b: f32, out: &mut [f32]) {
    let n = out.len().min(a.len());
    let bv = f32x4_splat(b);
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        store(&mut out[i..], apply4(op, load(&a[i..]), bv));
    }
    for i in body..n {
        out[i] = op.apply(a[i], b);
    }
}

pub fn max(x: &[f32]) -> f32 {
    let body = x.len() / 4 * 4;
    let mut m = f32x4_splat(f32::NEG_INFINITY);
    let mut nan = i32x4_splat(0);
    for i in (0..body).step_by(4) {
        let v = load(&x[i..]);
        nan = v128_or(nan, f32x4_ne(v, v));
        m = f32x4_pmax(m, v);
    }
    if v128_any_true(nan) {
        return f32::NAN;
    }
    let mut r = f32x4_extract_lane::<0>(m)
        .max(f32x4_extract_lane::<1>(m))
        .max(f32x4_extract_lane::<2>(m))
        .max(f32x4_extract_lane::<3>(m));
    for &v in &x[body..] {
        if v.is_nan() {
            return f32::NAN;
        }
        r = r.max(v);
    }
    r
}
