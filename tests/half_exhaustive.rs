//! Every f16 and bf16 bit pattern: decoding against an independent IEEE formula, round trips,
//! and the bulk (slice) path against the scalar path.

mod common;

use kopitiam_wasm::{DType, Shape, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// binary16 decoded straight from the IEEE 754 definition, in f64 (exact for every half).
fn f16_formula(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1F) as i32;
    let man = (bits & 0x3FF) as f64;
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + man / 1024.0) * 2f64.powi(e - 15),
    }
}

fn all_patterns() -> Vec<u16> {
    (0..=u16::MAX).collect()
}

fn same_or_both_nan_same_sign(a: u16, b: u16, exp_mask: u16, man_mask: u16) -> bool {
    let is_nan = |x: u16| x & exp_mask == exp_mask && x & man_mask != 0;
    if is_nan(a) {
        is_nan(b) && (a & 0x8000) == (b & 0x8000)
    } else {
        a == b
    }
}

#[test]
fn every_f16_decodes_per_ieee_and_round_trips() {
    let bits = all_patterns();
    let t = Tensor::from_f16(bits.clone(), [256, 256]).unwrap();
    let f = t.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
    for (&b, &v) in bits.iter().zip(&f) {
        let want = f16_formula(b);
        if want.is_nan() {
            assert!(
                v.is_nan() && v.is_sign_negative() == (b & 0x8000 != 0),
                "{b:#06x}"
            );
        } else {
            assert_eq!(v as f64, want, "{b:#06x}");
            assert_eq!(v.is_sign_negative(), b & 0x8000 != 0, "sign of {b:#06x}");
        }
    }
    let back = Tensor::from_f32(f, [65536])
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap()
        .to_vec_f16_bits()
        .unwrap();
    for (&a, &b) in bits.iter().zip(&back) {
        assert!(
            same_or_both_nan_same_sign(a, b, 0x7C00, 0x03FF),
            "{a:#06x} -> {b:#06x}"
        );
    }
}

#[test]
fn every_bf16_decodes_and_round_trips() {
    let bits = all_patterns();
    let t = Tensor::from_bf16(bits.clone(), [65536]).unwrap();
    let f = t.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
    for (&b, &v) in bits.iter().zip(&f) {
        // bf16 is the top half of an f32: decoding is a shift (NaN payloads may be quieted).
        let want = f32::from_bits((b as u32) << 16);
        if want.is_nan() {
            assert!(v.is_nan() && v.is_sign_negative() == want.is_sign_negative());
        } else {
            assert_eq!(v.to_bits(), want.to_bits(), "{b:#06x}");
        }
    }
    let back = Tensor::from_f32(f, [65536])
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
        .to_vec_bf16_bits()
        .unwrap();
    for (&a, &b) in bits.iter().zip(&back) {
        assert!(
            same_or_both_nan_same_sign(a, b, 0x7F80, 0x007F),
            "{a:#06x} -> {b:#06x}"
        );
    }
}

#[test]
fn bulk_path_equals_scalar_path_for_every_pattern() {
    let bits = all_patterns();
    // Contiguous rows take the bulk slice conversion; a transposed view takes the strided
    // per-element path. Both must agree bit for bit (after undoing the transpose).
    type Ctor = fn(Vec<u16>, Shape) -> kopitiam_wasm::Result<Tensor>;
    for from_bits in [Tensor::from_f16 as Ctor, Tensor::from_bf16 as Ctor] {
        let t = from_bits(bits.clone(), [256, 256].into()).unwrap();
        let bulk = t.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
        let strided = t
            .transpose(0, 1)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .transpose(0, 1)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        for (i, (a, b)) in bulk.iter().zip(&strided).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "pattern {i}"
            );
        }
        // And the scalar conversion from `half` itself.
        for (&b, &v) in bits.iter().zip(&bulk) {
            let s = if t.dtype() == DType::F16 {
                half::f16::from_bits(b).to_f32()
            } else {
                half::bf16::from_bits(b).to_f32()
            };
            assert!(s.to_bits() == v.to_bits() || (s.is_nan() && v.is_nan()));
        }
    }
}

#[test]
fn f32_to_f16_rounds_to_nearest_even_and_saturates_to_inf() {
    let x = [
        1.0 + 1.0 / 2048.0,
        1.0 + 3.0 / 2048.0,
        65504.0,
        65520.0,
        1e-8,
        -0.0,
    ];
    let bits = Tensor::from_f32(x.to_vec(), [6])
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap()
        .to_vec_f16_bits()
        .unwrap();
    // 1 + 2^-11 is a tie -> even (1.0); 1 + 3·2^-11 -> 1 + 2^-9; 65504 is max; 65520 -> inf;
    // 1e-8 underflows to +0; -0 keeps its sign.
    assert_eq!(bits, vec![0x3C00, 0x3C02, 0x7BFF, 0x7C00, 0x0000, 0x8000]);
}

#[test]
fn fast_scale_conversion_equals_half_for_every_pattern() {
    for b in 0..=u16::MAX {
        let (fast, want) = (
            kopitiam_wasm::quant::f16_to_f32(b),
            half::f16::from_bits(b).to_f32(),
        );
        assert!(
            fast.to_bits() == want.to_bits() || (fast.is_nan() && want.is_nan()),
            "{b:#06x}"
        );
    }
}

/// The fast finite f32 → f16 conversion equals `half`'s on every f16 value, on both sides of
/// every rounding boundary (midpoints between neighbouring halves, ±1 ulp), and on random values.
#[test]
fn fast_finite_f32_to_f16_equals_half() {
    use kopitiam_wasm::quant::f32_to_f16_finite;
    let check = |x: f32| {
        if x.is_finite() && x.abs() < 65520.0 {
            assert_eq!(
                f32_to_f16_finite(x),
                half::f16::from_f32(x).to_bits(),
                "{x:e} ({:#010x})",
                x.to_bits()
            );
        }
    };
    for h in 0..0x7C00u16 {
        for sign in [0u16, 0x8000] {
            let v = half::f16::from_bits(h | sign).to_f32();
            let next = half::f16::from_bits((h + 1) | sign).to_f32();
            let mid = (v as f64 + next as f64) / 2.0;
            let mid = mid as f32; // exact: a midpoint of two halves fits in f32
            for x in [
                v,
                mid,
                f32::from_bits(mid.to_bits() - 1),
                f32::from_bits(mid.to_bits() + 1),
            ] {
                check(x);
            }
        }
    }
    let mut rng = common::Rng::new(3);
    for _ in 0..200_000 {
        check(f32::from_bits(rng.next_u64() as u32));
        check((rng.f32() - 0.5) * 20.0);
    }
}
