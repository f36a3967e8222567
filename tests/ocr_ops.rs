//! The Tensor ops the OCR forward pass is built from (`linear_i8`, `quantize_unit_i8`,
//! `tanh_lut` / `logistic_lut`, `lstm_cell_lut`, `im2col_hw`, `maxpool2d`, `flip`), each checked
//! against an independent oracle written plainly here: naive index loops, exact i64 sums, f64
//! maths and hand-computed values. Where the op promises Tesseract's bits (the integer layer,
//! the table activations, the cell) the comparison is bit for bit; bad shapes and dtypes must be
//! typed errors.

use kopitiam_wasm::ops::{logistic_lut, quantize_unit, tanh_lut};
use kopitiam_wasm::{DType, Error, Tensor};

// Also run in headless Chromium by `wasm-pack test`: there `linear_i8` takes the SIMD128 dot.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A small deterministic generator (Knuth's MMIX LCG), so every run sees the same data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    /// Any i8, with the extremes much more likely than uniform.
    fn i8(&mut self) -> i8 {
        match self.next() % 8 {
            0 => 127,
            1 => -127,
            2 => -128,
            _ => self.next() as u8 as i8,
        }
    }
    /// Uniform in `[lo, hi)`.
    fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() as f32 / (1u64 << 31) as f32)
    }
}

fn code(r: kopitiam_wasm::Result<impl std::fmt::Debug>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code(),
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------------
// linear_i8

/// `y[r][o] = (Σ_j w[o][j] x[r][j] + w[o][k] · 127) as f32 * scale[o]`, summed in i64.
fn naive_linear_i8(x: &[i8], w: &[i8], s: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; m * n];
    for r in 0..m {
        for o in 0..n {
            let mut acc: i64 = 0;
            for j in 0..k {
                acc += w[o * (k + 1) + j] as i64 * x[r * k + j] as i64;
            }
            acc += w[o * (k + 1) + k] as i64 * 127;
            y[r * n + o] = acc as f32 * s[o];
        }
    }
    y
}

fn check_linear(rng: &mut Lcg, m: usize, k: usize, n: usize) {
    let x: Vec<i8> = (0..m * k).map(|_| rng.i8()).collect();
    let w: Vec<i8> = (0..n * (k + 1)).map(|_| rng.i8()).collect();
    let s: Vec<f32> = (0..n)
        .map(|o| match o % 5 {
            0 => 0.0,
            1 => -0.0,
            2 => rng.f32(-1e-3, 1e-3),
            _ => rng.f32(-3.0, 3.0),
        })
        .collect();
    let want = naive_linear_i8(&x, &w, &s, m, k, n);
    let xt = Tensor::from_i8(x, [m, k]).unwrap();
    let wt = Tensor::from_i8(w, [n, k + 1]).unwrap();
    let st = Tensor::from_f32(s, [n]).unwrap();
    let got = xt.linear_i8(&wt, &st).unwrap();
    assert_eq!(got.dims(), [m, n], "m {m} k {k} n {n}");
    assert_eq!(got.dtype(), DType::F32);
    assert_eq!(
        bits(&got.to_vec_f32().unwrap()),
        bits(&want),
        "m {m} k {k} n {n}"
    );
}

#[test]
fn linear_i8_matches_an_exact_integer_loop() {
    let mut rng = Lcg(17);
    for &(m, k, n) in &[
        (1, 0, 3),
        (2, 0, 1),
        (1, 1, 1),
        (3, 1, 4),
        (1, 15, 2),
        (1, 16, 2),
        (2, 17, 5),
        (4, 31, 3),
        (3, 33, 7),
        (5, 48, 6),
        (2, 100, 9),
        (7, 257, 4),
        (0, 5, 3),
        (3, 5, 0),
    ] {
        check_linear(&mut rng, m, k, n);
    }
}

#[test]
fn linear_i8_extremes_stay_exact() {
    // Every product at its largest (±127·±127 and -128·-128), the bias column too.
    for &(xv, wv, bias) in &[
        (127i8, 127i8, 127i8),
        (-127, 127, -127),
        (-127, -127, 127),
        (-128, -128, 127),
        (-128, 127, -128),
        (127, -128, -128),
    ] {
        for &k in &[1usize, 15, 16, 17, 63, 64, 65, 1000] {
            let x = vec![xv; 2 * k];
            let mut w = vec![wv; 3 * (k + 1)];
            for o in 0..3 {
                w[o * (k + 1) + k] = bias;
            }
            let s = vec![1.0f32, -0.5, 0.25];
            let want = naive_linear_i8(&x, &w, &s, 2, k, 3);
            let got = Tensor::from_i8(x, [2, k])
                .unwrap()
                .linear_i8(
                    &Tensor::from_i8(w, [3, k + 1]).unwrap(),
                    &Tensor::from_f32(s, [3]).unwrap(),
                )
                .unwrap();
            assert_eq!(
                bits(&got.to_vec_f32().unwrap()),
                bits(&want),
                "{xv} {wv} {bias} k {k}"
            );
        }
    }
    // A hand-computed case: x = [1, -2, 127], w = [3, 4, -128 | bias 2], scale 0.5:
    // 3 - 8 - 16256 + 254 = -16007, times 0.5.
    let y = Tensor::from_i8(vec![1, -2, 127], [1, 3])
        .unwrap()
        .linear_i8(
            &Tensor::from_i8(vec![3, 4, -128, 2], [1, 4]).unwrap(),
            &Tensor::from_f32(vec![0.5], [1]).unwrap(),
        )
        .unwrap();
    assert_eq!(y.to_vec_f32().unwrap(), [-8003.5]);
}

#[test]
fn linear_i8_at_the_largest_inner_size() {
    // k = 2^17 - 1 is the documented bound; every term -128 · -128 with a +127 bias is the
    // largest sum it can meet: 131071 · 16384 + 16129 = 2147483393, still an i32.
    let k = (1 << 17) - 1;
    let x = vec![-128i8; k];
    let mut w = vec![-128i8; k + 1];
    w[k] = 127;
    let want = naive_linear_i8(&x, &w, &[1.0], 1, k, 1);
    assert_eq!(want, [2147483393i64 as f32]);
    let xt = Tensor::from_i8(x, [1, k]).unwrap();
    let wt = Tensor::from_i8(w, [1, k + 1]).unwrap();
    let st = Tensor::from_f32(vec![1.0], [1]).unwrap();
    assert_eq!(
        bits(&xt.linear_i8(&wt, &st).unwrap().to_vec_f32().unwrap()),
        bits(&want)
    );
    // One more column is refused rather than risking the i32.
    let xt = Tensor::from_i8(vec![0; k + 1], [1, k + 1]).unwrap();
    let wt = Tensor::from_i8(vec![0; k + 2], [1, k + 2]).unwrap();
    assert_eq!(code(xt.linear_i8(&wt, &st)), "ShapeMismatch");
}

#[test]
fn linear_i8_reads_views() {
    let mut rng = Lcg(5);
    let (m, k, n) = (3, 19, 4);
    // x stored as [k, m] and transposed; w stored as [k + 1, n] and transposed.
    let xs: Vec<i8> = (0..k * m).map(|_| rng.i8()).collect();
    let ws: Vec<i8> = (0..(k + 1) * n).map(|_| rng.i8()).collect();
    let s: Vec<f32> = (0..n).map(|_| rng.f32(-2.0, 2.0)).collect();
    let x: Vec<i8> = (0..m * k).map(|i| xs[(i % k) * m + i / k]).collect();
    let w: Vec<i8> = (0..n * (k + 1))
        .map(|i| ws[(i % (k + 1)) * n + i / (k + 1)])
        .collect();
    let want = naive_linear_i8(&x, &w, &s, m, k, n);
    let xt = Tensor::from_i8(xs, [k, m])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let wt = Tensor::from_i8(ws, [k + 1, n])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    assert!(!xt.is_contiguous() && !wt.is_contiguous());
    let got = xt
        .linear_i8(&wt, &Tensor::from_f32(s.clone(), [n]).unwrap())
        .unwrap();
    assert_eq!(bits(&got.to_vec_f32().unwrap()), bits(&want));

    // Contiguous views that start inside their storage: rows 1..1+m of x, rows 2..2+n of w.
    let xs: Vec<i8> = (0..(m + 2) * k).map(|_| rng.i8()).collect();
    let ws: Vec<i8> = (0..(n + 3) * (k + 1)).map(|_| rng.i8()).collect();
    let x = xs[k..(1 + m) * k].to_vec();
    let w = ws[2 * (k + 1)..(2 + n) * (k + 1)].to_vec();
    let want = naive_linear_i8(&x, &w, &s, m, k, n);
    let xt = Tensor::from_i8(xs, [m + 2, k])
        .unwrap()
        .narrow(0, 1, m)
        .unwrap();
    let wt = Tensor::from_i8(ws, [n + 3, k + 1])
        .unwrap()
        .narrow(0, 2, n)
        .unwrap();
    assert!(xt.is_contiguous() && xt.offset() > 0 && wt.offset() > 0);
    let got = xt
        .linear_i8(&wt, &Tensor::from_f32(s, [n]).unwrap())
        .unwrap();
    assert_eq!(bits(&got.to_vec_f32().unwrap()), bits(&want));
}

#[test]
fn linear_i8_rejects_bad_shapes_and_dtypes_with_typed_errors() {
    let x = Tensor::from_i8(vec![1; 6], [2, 3]).unwrap();
    let w = Tensor::from_i8(vec![1; 8], [2, 4]).unwrap();
    let s = Tensor::from_f32(vec![1.0; 2], [2]).unwrap();
    assert!(x.linear_i8(&w, &s).is_ok());
    // dtypes
    let xf = Tensor::from_f32(vec![1.0; 6], [2, 3]).unwrap();
    let wf = Tensor::from_f32(vec![1.0; 8], [2, 4]).unwrap();
    let si = Tensor::from_i8(vec![1; 2], [2]).unwrap();
    let wi32 = Tensor::from_i32(vec![1; 8], [2, 4]).unwrap();
    assert_eq!(code(xf.linear_i8(&w, &s)), "DTypeMismatch");
    assert_eq!(code(x.linear_i8(&wf, &s)), "DTypeMismatch");
    assert_eq!(code(x.linear_i8(&wi32, &s)), "DTypeMismatch");
    assert_eq!(code(x.linear_i8(&w, &si)), "DTypeMismatch");
    match x.linear_i8(&w, &si) {
        Err(Error::DTypeMismatch {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (DType::F32, DType::I8)),
        other => panic!("{other:?}"),
    }
    // shapes
    let cases: Vec<(Tensor, Tensor, Tensor)> = vec![
        // no bias column
        (
            x.clone(),
            Tensor::from_i8(vec![1; 6], [2, 3]).unwrap(),
            s.clone(),
        ),
        // two columns too many
        (
            x.clone(),
            Tensor::from_i8(vec![1; 10], [2, 5]).unwrap(),
            s.clone(),
        ),
        // scales of the wrong length
        (
            x.clone(),
            w.clone(),
            Tensor::from_f32(vec![1.0; 3], [3]).unwrap(),
        ),
        // scales of the wrong rank
        (
            x.clone(),
            w.clone(),
            Tensor::from_f32(vec![1.0; 2], [1, 2]).unwrap(),
        ),
        // x of rank 1 and rank 3
        (
            Tensor::from_i8(vec![1; 3], [3]).unwrap(),
            w.clone(),
            s.clone(),
        ),
        (
            Tensor::from_i8(vec![1; 6], [1, 2, 3]).unwrap(),
            w.clone(),
            s.clone(),
        ),
        // weight of rank 1 and rank 3
        (
            x.clone(),
            Tensor::from_i8(vec![1; 4], [4]).unwrap(),
            Tensor::from_f32(vec![1.0], [1]).unwrap(),
        ),
        (
            x.clone(),
            Tensor::from_i8(vec![1; 8], [1, 2, 4]).unwrap(),
            s.clone(),
        ),
    ];
    for (i, (x, w, s)) in cases.iter().enumerate() {
        assert_eq!(code(x.linear_i8(w, s)), "ShapeMismatch", "case {i}");
    }
}

// ---------------------------------------------------------------------------------------------
// quantize_unit_i8

/// `clamp(round_half_away(v ·₃₂ 127), ±127)` with the product rounded to f32 first.
fn naive_quantize(v: f32) -> i8 {
    let p = (v * 127.0f32) as f64;
    if p.is_nan() {
        return 0;
    }
    let r = if p >= 0.0 {
        (p + 0.5).floor()
    } else {
        -((-p + 0.5).floor())
    };
    r.clamp(-127.0, 127.0) as i8
}

#[test]
fn quantize_unit_hand_cases() {
    let third = 1.0f32 / 3.0; // · 127 = 42.333…
    let cases: &[(f32, i8)] = &[
        (0.0, 0),
        (-0.0, 0),
        (1.0, 127),
        (-1.0, -127),
        (2.0, 127),
        (-2.0, -127),
        (1e30, 127),
        (-1e30, -127),
        (f32::INFINITY, 127),
        (f32::NEG_INFINITY, -127),
        (f32::NAN, 0),
        (-f32::NAN, 0),
        (0.5, 64),   // 63.5 exactly: away from zero
        (-0.5, -64), // -63.5
        (third, 42),
        (-third, -42),
        (0.25, 32), // 31.75
        (1.0 / 127.0, 1),
        (-1.0 / 127.0, -1),
        (126.49 / 127.0, 126),
        (126.51 / 127.0, 127),
        (-126.51 / 127.0, -127),
        // 0.5 / 127 in f32 is 0x3b810204; times 127 the exact product is 0.49999999814, but in
        // f32 it rounds to 0.5 exactly, which rounds away from zero to 1 (an f64 product would
        // give 0): the op computes in f32, as Tesseract does.
        (f32::from_bits(0x3b81_0204), 1),
        (-f32::from_bits(0x3b81_0204), -1),
        // The f32 just below it: 0.49999997 after the product, so 0.
        (f32::from_bits(0x3b81_0203), 0),
        (-f32::from_bits(0x3b81_0203), 0),
        // 0x3f102040 · 127 = 71.49999618… exactly, 71.5 in f32: 72.
        (f32::from_bits(0x3f10_2040), 72),
        (f32::from_bits(0x3f10_203f), 71),
        // 0x3f102041 · 127 = 71.500004 (above .5 already): 72.
        (f32::from_bits(0x3f10_2041), 72),
    ];
    assert_eq!(0.5f32 / 127.0, f32::from_bits(0x3b81_0204));
    assert_eq!(f32::from_bits(0x3b81_0204) * 127.0, 0.5);
    assert_eq!(f32::from_bits(0x3f10_2040) * 127.0, 71.5);
    for &(v, want) in cases {
        assert_eq!(quantize_unit(v), want, "{v:e} ({:#x})", v.to_bits());
        assert_eq!(naive_quantize(v), want, "oracle at {v:e}");
    }
    let t = Tensor::from_f32(cases.iter().map(|c| c.0).collect(), [cases.len()]).unwrap();
    let q = t.quantize_unit_i8().unwrap();
    assert_eq!(q.dtype(), DType::I8);
    assert_eq!(q.dims(), [cases.len()]);
    assert_eq!(
        q.to_vec_i8().unwrap(),
        cases.iter().map(|c| c.1).collect::<Vec<_>>()
    );
}

#[test]
fn quantize_unit_matches_the_oracle_on_every_half_step() {
    // Every (j + 0.5) / 127 and its two f32 neighbours, over [-1.1, 1.1], plus random values.
    let mut vals = Vec::new();
    for j in -140..140 {
        let v = (j as f32 + 0.5) / 127.0;
        for d in -2i32..=2 {
            vals.push(f32::from_bits((v.to_bits() as i32 + d) as u32));
        }
    }
    let mut rng = Lcg(3);
    vals.extend((0..2000).map(|_| rng.f32(-1.2, 1.2)));
    let want: Vec<i8> = vals.iter().map(|&v| naive_quantize(v)).collect();
    let got: Vec<i8> = vals.iter().map(|&v| quantize_unit(v)).collect();
    assert_eq!(got, want);
    // The tensor op on a transposed view of the same values.
    let n = vals.len() / 2 * 2;
    let t = Tensor::from_f32(vals[..n].to_vec(), [2, n / 2])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let want_t: Vec<i8> = (0..n).map(|i| want[(i % 2) * (n / 2) + i / 2]).collect();
    let q = t.quantize_unit_i8().unwrap();
    assert_eq!(q.dims(), [n / 2, 2]);
    assert_eq!(q.to_vec_i8().unwrap(), want_t);
}

#[test]
fn quantize_unit_i8_wants_f32() {
    let t = Tensor::from_i8(vec![1, 2], [2]).unwrap();
    assert_eq!(code(t.quantize_unit_i8()), "DTypeMismatch");
    let t = Tensor::from_i32(vec![1, 2], [2]).unwrap();
    assert_eq!(code(t.quantize_unit_i8()), "DTypeMismatch");
    // Empty and scalar inputs are fine.
    let e = Tensor::from_f32(vec![], [0, 3]).unwrap();
    assert_eq!(e.quantize_unit_i8().unwrap().dims(), [0, 3]);
    let s = Tensor::from_f32(vec![-0.3], ()).unwrap();
    assert_eq!(s.quantize_unit_i8().unwrap().to_vec_i8().unwrap(), [-38]);
}

// ---------------------------------------------------------------------------------------------
// tanh_lut / logistic_lut

fn tanh_at(i: usize) -> f32 {
    (i as f64 / 256.0).tanh() as f32
}

fn logistic_at(i: usize) -> f32 {
    (1.0 / (1.0 + (-(i as f64 / 256.0)).exp())) as f32
}

#[test]
fn table_functions_are_exact_at_table_points() {
    for i in 0..4095 {
        let x = i as f32 / 256.0;
        assert_eq!(x * 256.0, i as f32);
        assert_eq!(
            tanh_lut(x).to_bits(),
            tanh_at(i).to_bits(),
            "tanh at {i}/256"
        );
        assert_eq!(
            logistic_lut(x).to_bits(),
            logistic_at(i).to_bits(),
            "logistic at {i}/256"
        );
        // Below zero: odd, and the complement (at -0 the `x < 0` test is false: +0 and 0.5).
        if i > 0 {
            assert_eq!(
                tanh_lut(-x).to_bits(),
                (-tanh_at(i)).to_bits(),
                "tanh at -{i}/256"
            );
            assert_eq!(
                logistic_lut(-x).to_bits(),
                (1.0 - logistic_at(i)).to_bits(),
                "logistic at -{i}/256"
            );
        }
    }
    assert_eq!(tanh_lut(0.0), 0.0);
    assert_eq!(logistic_lut(0.0), 0.5);
    assert_eq!(logistic_lut(-0.0), 0.5);
    assert_eq!(tanh_lut(-0.0).to_bits(), 0.0f32.to_bits());
}

#[test]
fn table_functions_interpolate_linearly_between_points() {
    for i in 0..4094 {
        for frac in [0.5f32, 0.25, 0.75] {
            let x = (i as f32 + frac) / 256.0;
            assert_eq!(x * 256.0, i as f32 + frac);
            let (a, b) = (tanh_at(i), tanh_at(i + 1));
            let want = a + (b - a) * frac;
            assert_eq!(
                tanh_lut(x).to_bits(),
                want.to_bits(),
                "tanh at ({i}+{frac})/256"
            );
            assert_eq!(tanh_lut(-x).to_bits(), (-want).to_bits());
            let (a, b) = (logistic_at(i), logistic_at(i + 1));
            let want = a + (b - a) * frac;
            assert_eq!(
                logistic_lut(x).to_bits(),
                want.to_bits(),
                "logistic at ({i}+{frac})/256"
            );
            assert_eq!(logistic_lut(-x).to_bits(), (1.0 - want).to_bits());
        }
    }
    // By hand, at 0.5/256: tanh(1/256) = 0.00390623013… so the midpoint is half of it.
    let t1 = (1.0f64 / 256.0).tanh() as f32;
    assert_eq!(tanh_lut(0.5 / 256.0), 0.0 + (t1 - 0.0) * 0.5);
    assert!((tanh_lut(0.5 / 256.0) as f64 - 0.001_953_115_07).abs() < 1e-9);
}

#[test]
fn table_functions_are_odd_and_complementary() {
    let mut rng = Lcg(11);
    for _ in 0..20_000 {
        let x = rng.f32(0.0, 20.0);
        assert_eq!(
            tanh_lut(-x).to_bits(),
            (-tanh_lut(x)).to_bits(),
            "tanh at ±{x}"
        );
        if x > 0.0 {
            assert_eq!(
                logistic_lut(-x).to_bits(),
                (1.0 - logistic_lut(x)).to_bits(),
                "logistic at ±{x}"
            );
        }
    }
}

#[test]
fn table_functions_saturate_at_the_table_end() {
    // Index 4095 is the last entry, and reading at or past it gives exactly 1.
    let end = 4095.0f32 / 256.0;
    for x in [
        end,
        4095.25 / 256.0,
        4095.5 / 256.0,
        16.0,
        16.5,
        20.0,
        1e6,
        f32::MAX,
        f32::INFINITY,
    ] {
        assert_eq!(tanh_lut(x), 1.0, "tanh at {x}");
        assert_eq!(logistic_lut(x), 1.0, "logistic at {x}");
        assert_eq!(tanh_lut(-x), -1.0, "tanh at -{x}");
        assert_eq!(logistic_lut(-x), 0.0, "logistic at -{x}");
    }
    // The logistic table's last entry is below 1 in f32 (1 - 1.13e-7 rounds to 0.99999988), so
    // the step to saturation is visible: just below the end it still interpolates.
    assert!(logistic_at(4095) < 1.0);
    let below = 4094.5f32 / 256.0;
    let want = logistic_at(4094) + (logistic_at(4095) - logistic_at(4094)) * 0.5;
    assert_eq!(logistic_lut(below), want);
    assert!(logistic_lut(below) < 1.0);
}

#[test]
fn table_functions_are_close_to_the_exact_ones() {
    let (mut worst_t, mut worst_l) = (0.0f64, 0.0f64);
    for j in -20_000..=20_000 {
        let x = j as f32 / 1000.0;
        let xd = x as f64;
        let dt = (tanh_lut(x) as f64 - xd.tanh()).abs();
        let dl = (logistic_lut(x) as f64 - 1.0 / (1.0 + (-xd).exp())).abs();
        assert!(dt <= 3e-6, "tanh at {x}: off by {dt:e}");
        assert!(dl <= 3e-6, "logistic at {x}: off by {dl:e}");
        worst_t = worst_t.max(dt);
        worst_l = worst_l.max(dl);
    }
    // They are tables, not the functions: somewhere the interpolation shows.
    assert!(worst_t > 1e-7, "tanh suspiciously exact: {worst_t:e}");
}

#[test]
fn table_functions_keep_nan() {
    for x in [f32::NAN, -f32::NAN] {
        assert!(tanh_lut(x).is_nan());
        assert!(logistic_lut(x).is_nan());
    }
    let t = Tensor::from_f32(vec![f32::NAN, 0.0, 1.0], [3]).unwrap();
    let th = t.tanh_lut().unwrap().to_vec_f32().unwrap();
    let lg = t.logistic_lut().unwrap().to_vec_f32().unwrap();
    assert!(th[0].is_nan() && lg[0].is_nan());
    assert_eq!(&th[1..], [0.0, tanh_at(256)]);
    assert_eq!(&lg[1..], [0.5, logistic_at(256)]);
}

#[test]
fn table_tensor_ops_equal_the_scalar_functions() {
    let mut rng = Lcg(23);
    let vals: Vec<f32> = (0..3 * 257).map(|_| rng.f32(-18.0, 18.0)).collect();
    // Contiguous, and transposed.
    let t = Tensor::from_f32(vals.clone(), [3, 257]).unwrap();
    let tt = t.transpose(0, 1).unwrap();
    let tr: Vec<f32> = (0..3 * 257).map(|i| vals[(i % 3) * 257 + i / 3]).collect();
    for (t, v) in [(&t, &vals), (&tt, &tr)] {
        let th = t.tanh_lut().unwrap();
        let lg = t.logistic_lut().unwrap();
        assert_eq!(th.dims(), t.dims());
        assert_eq!(lg.dims(), t.dims());
        let wt: Vec<f32> = v.iter().map(|&x| tanh_lut(x)).collect();
        let wl: Vec<f32> = v.iter().map(|&x| logistic_lut(x)).collect();
        assert_eq!(bits(&th.to_vec_f32().unwrap()), bits(&wt));
        assert_eq!(bits(&lg.to_vec_f32().unwrap()), bits(&wl));
    }
    let i = Tensor::from_i8(vec![1], [1]).unwrap();
    assert_eq!(code(i.tanh_lut()), "DTypeMismatch");
    assert_eq!(code(i.logistic_lut()), "DTypeMismatch");
}

// ---------------------------------------------------------------------------------------------
// lstm_cell_lut

/// The cell by the formula, through the scalar table functions, each product rounded alone.
fn naive_cell(ci: f32, gi: f32, gf: f32, go: f32, c_prev: f32, clip: f32) -> (f32, f32) {
    let forget = c_prev * logistic_lut(gf);
    let write = tanh_lut(ci) * logistic_lut(gi);
    let mut c = forget + write;
    if c > clip {
        c = clip;
    }
    if c < -clip {
        c = -clip;
    }
    (c, tanh_lut(c) * logistic_lut(go))
}

fn run_cell(
    gates: [&[f32]; 5],
    dims: &[usize],
    clip: f32,
) -> kopitiam_wasm::Result<(Vec<f32>, Vec<f32>)> {
    let t: Vec<Tensor> = gates
        .iter()
        .map(|g| Tensor::from_f32(g.to_vec(), dims).unwrap())
        .collect();
    let s = Tensor::lstm_cell_lut(&t[0], &t[1], &t[2], &t[3], &t[4], clip)?;
    assert_eq!(s.cell.dims(), dims);
    assert_eq!(s.hidden.dims(), dims);
    Ok((s.cell.to_vec_f32()?, s.hidden.to_vec_f32()?))
}

#[test]
fn lstm_cell_lut_matches_the_formula_bit_for_bit() {
    let mut rng = Lcg(31);
    let n = 6 * 97;
    for clip in [f32::INFINITY, 1e30, 5.0, 1.0, 0.25, 0.0] {
        let g: Vec<Vec<f32>> = (0..5)
            .map(|i| {
                let r = if i == 4 { 4.0 } else { 9.0 };
                (0..n).map(|_| rng.f32(-r, r)).collect()
            })
            .collect();
        let (c, h) = run_cell([&g[0], &g[1], &g[2], &g[3], &g[4]], &[6, 97], clip).unwrap();
        for j in 0..n {
            let (wc, wh) = naive_cell(g[0][j], g[1][j], g[2][j], g[3][j], g[4][j], clip);
            assert_eq!(c[j].to_bits(), wc.to_bits(), "cell {j} at clip {clip}");
            assert_eq!(h[j].to_bits(), wh.to_bits(), "hidden {j} at clip {clip}");
        }
    }
}

#[test]
fn lstm_cell_lut_gate_roles_and_clip() {
    // Saturated gates make the roles visible: logistic(±20) is exactly 1 / 0 through the table,
    // tanh(±20) exactly ±1.
    let (on, off) = (20.0f32, -20.0f32);
    // forget on, input off: c = c_prev; output on: h = tanh(c_prev).
    let (c, h) = run_cell([&[on], &[off], &[on], &[on], &[0.75]], &[1], 10.0).unwrap();
    assert_eq!((c[0], h[0]), (0.75, tanh_lut(0.75)));
    // forget off, input on: c = tanh(ci) = -1; output off: h = 0 (·-1, so -0).
    let (c, h) = run_cell([&[off], &[on], &[off], &[off], &[0.75]], &[1], 10.0).unwrap();
    assert_eq!((c[0], h[0]), (-1.0, -0.0));
    // both on: c = 3 + 1 = 4, clipped to 2.5 (and to -2.5 the other way).
    let (c, h) = run_cell([&[on], &[on], &[on], &[on], &[3.0]], &[1], 2.5).unwrap();
    assert_eq!((c[0], h[0]), (2.5, tanh_lut(2.5)));
    let (c, _) = run_cell([&[off], &[on], &[on], &[on], &[-3.0]], &[1], 2.5).unwrap();
    assert_eq!(c[0], -2.5);
    // Below the clip nothing changes.
    let (c, _) = run_cell([&[on], &[on], &[on], &[on], &[1.0]], &[1], 2.5).unwrap();
    assert_eq!(c[0], 2.0);
    // By hand with unsaturated gates: ci = gi = gf = go = 0 gives c = 0.5·c_prev + 0·0.5.
    let (c, h) = run_cell([&[0.0], &[0.0], &[0.0], &[0.0], &[1.0]], &[1], 10.0).unwrap();
    assert_eq!(c[0], 0.5);
    assert_eq!(h[0], tanh_at(128) * 0.5);
}

#[test]
fn lstm_cell_lut_reads_views_and_rejects_mismatches() {
    let mut rng = Lcg(41);
    let (r, k) = (4, 9);
    let g: Vec<Vec<f32>> = (0..5)
        .map(|_| (0..r * k).map(|_| rng.f32(-6.0, 6.0)).collect())
        .collect();
    // Each gate stored [k, r] and read transposed as [r, k].
    let ts: Vec<Tensor> = g
        .iter()
        .map(|v| {
            Tensor::from_f32(v.clone(), [k, r])
                .unwrap()
                .transpose(0, 1)
                .unwrap()
        })
        .collect();
    let s = Tensor::lstm_cell_lut(&ts[0], &ts[1], &ts[2], &ts[3], &ts[4], 3.0).unwrap();
    assert_eq!(s.cell.dims(), [r, k]);
    let (c, h) = (s.cell.to_vec_f32().unwrap(), s.hidden.to_vec_f32().unwrap());
    for i in 0..r {
        for j in 0..k {
            let at = j * r + i;
            let (wc, wh) = naive_cell(g[0][at], g[1][at], g[2][at], g[3][at], g[4][at], 3.0);
            assert_eq!(c[i * k + j].to_bits(), wc.to_bits());
            assert_eq!(h[i * k + j].to_bits(), wh.to_bits());
        }
    }
    let a = Tensor::from_f32(vec![0.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_f32(vec![0.0; 6], [3, 2]).unwrap();
    let one = Tensor::from_f32(vec![0.0; 3], [3]).unwrap();
    let i8t = Tensor::from_i8(vec![0; 6], [2, 3]).unwrap();
    for pos in 0..5 {
        let mut args = [&a; 5];
        args[pos] = &b;
        let r = Tensor::lstm_cell_lut(args[0], args[1], args[2], args[3], args[4], 1.0);
        assert_eq!(code(r.map(|s| s.cell)), "ShapeMismatch", "arg {pos}");
        args[pos] = &one;
        let r = Tensor::lstm_cell_lut(args[0], args[1], args[2], args[3], args[4], 1.0);
        assert_eq!(code(r.map(|s| s.cell)), "ShapeMismatch", "arg {pos}");
        args[pos] = &i8t;
        let r = Tensor::lstm_cell_lut(args[0], args[1], args[2], args[3], args[4], 1.0);
        assert_eq!(code(r.map(|s| s.cell)), "DTypeMismatch", "arg {pos}");
    }
}

// ---------------------------------------------------------------------------------------------
// im2col_hw

/// Tesseract's `Convolve` written out: per position, column offsets outer, row offsets inner,
/// channels innermost; outside the image each element takes the next `border()`.
fn naive_im2col<T: Copy>(
    x: &[T],
    (h, w, c): (usize, usize, usize),
    hh: usize,
    hw: usize,
    border: &mut dyn FnMut() -> T,
) -> Vec<T> {
    let mut out = Vec::new();
    for y in 0..h as i64 {
        for xx in 0..w as i64 {
            for dx in -(hw as i64)..=hw as i64 {
                for dy in -(hh as i64)..=hh as i64 {
                    let (sy, sx) = (y + dy, xx + dx);
                    let inside = sy >= 0 && sx >= 0 && sy < h as i64 && sx < w as i64;
                    for ch in 0..c {
                        if inside {
                            out.push(x[((sy as usize) * w + sx as usize) * c + ch]);
                        } else {
                            out.push(border());
                        }
                    }
                }
            }
        }
    }
    out
}

/// Rounds half away from zero, saturating to i8, written plainly.
fn round_i8(v: f64) -> i8 {
    let r = if v >= 0.0 {
        (v + 0.5).floor()
    } else {
        -((-v + 0.5).floor())
    };
    if r > 127.0 {
        127
    } else if r < -128.0 {
        -128
    } else {
        r as i8
    }
}

/// The n-th border value: a counter, so the output shows the order of the calls.
fn border_value(n: u32) -> f64 {
    1000.0 + n as f64
}

/// For i8: multiples of 0.25 from -60 up, so the rounding of .25, .5 and .75 shows.
fn border_value_i8(n: u32) -> f64 {
    (n % 480) as f64 * 0.25 - 60.0
}

#[test]
fn im2col_hw_f32_matches_the_naive_loop_and_border_order() {
    let mut rng = Lcg(51);
    for &(h, w, c) in &[(4, 5, 2), (1, 1, 1), (2, 3, 1), (3, 1, 3), (5, 7, 1)] {
        let x: Vec<f32> = (0..h * w * c).map(|_| rng.f32(-1.0, 1.0)).collect();
        let t = Tensor::from_f32(x.clone(), [h, w, c]).unwrap();
        for hh in 0..=2 {
            for hw in 0..=2 {
                let mut n = 0u32;
                let want = naive_im2col(&x, (h, w, c), hh, hw, &mut || {
                    n += 1;
                    border_value(n) as f32
                });
                let mut calls = 0u32;
                let got = t
                    .im2col_hw(hh, hw, &mut || {
                        calls += 1;
                        border_value(calls)
                    })
                    .unwrap();
                let feat = (2 * hw + 1) * (2 * hh + 1) * c;
                assert_eq!(got.dims(), [h, w, feat], "{h}x{w}x{c} half {hh},{hw}");
                assert_eq!(got.dtype(), DType::F32);
                assert_eq!(calls, n, "border calls, {h}x{w}x{c} half {hh},{hw}");
                assert_eq!(
                    bits(&got.to_vec_f32().unwrap()),
                    bits(&want),
                    "{h}x{w}x{c} half {hh},{hw}"
                );
                if hh == 0 && hw == 0 {
                    assert_eq!(calls, 0);
                    assert_eq!(bits(&got.to_vec_f32().unwrap()), bits(&x));
                }
            }
        }
    }
}

#[test]
fn im2col_hw_by_hand() {
    // A 2x2 one-channel image [[1, 2], [3, 4]] with a 3x3 window: position (0, 0) reads, for
    // dx = -1 (all outside: border 1, 2, 3), dx = 0 (border 4, then 1, 3), dx = 1 (border 5,
    // then 2, 4).
    let t = Tensor::from_f32(vec![1.0, 2.0, 3.0, 4.0], [2, 2, 1]).unwrap();
    let mut n = 0.0;
    let got = t
        .im2col_hw(1, 1, &mut || {
            n += 1.0;
            -n
        })
        .unwrap();
    assert_eq!(got.dims(), [2, 2, 9]);
    let v = got.to_vec_f32().unwrap();
    assert_eq!(&v[..9], [-1.0, -2.0, -3.0, -4.0, 1.0, 3.0, -5.0, 2.0, 4.0]);
    // Position (0, 1): dx = -1 (border, 1, 3), dx = 0 (border, 2, 4), dx = 1 (3 borders).
    assert_eq!(
        &v[9..18],
        [-6.0, 1.0, 3.0, -7.0, 2.0, 4.0, -8.0, -9.0, -10.0]
    );
    // 5 border values per corner position: 20 calls.
    assert_eq!(n, 20.0);
}

#[test]
fn im2col_hw_i8_matches_the_naive_loop_and_rounds_the_border() {
    let mut rng = Lcg(61);
    for &(h, w, c) in &[(3, 4, 3), (1, 2, 1), (4, 1, 2), (2, 2, 1)] {
        let x: Vec<i8> = (0..h * w * c).map(|_| rng.i8()).collect();
        let t = Tensor::from_i8(x.clone(), [h, w, c]).unwrap();
        for hh in 0..=2 {
            for hw in 0..=2 {
                let mut n = 0u32;
                let want = naive_im2col(&x, (h, w, c), hh, hw, &mut || {
                    n += 1;
                    round_i8(border_value_i8(n))
                });
                let mut calls = 0u32;
                let got = t
                    .im2col_hw(hh, hw, &mut || {
                        calls += 1;
                        border_value_i8(calls)
                    })
                    .unwrap();
                assert_eq!(got.dtype(), DType::I8);
                assert_eq!(got.dims(), [h, w, (2 * hw + 1) * (2 * hh + 1) * c]);
                assert_eq!(calls, n);
                assert_eq!(got.to_vec_i8().unwrap(), want, "{h}x{w}x{c} half {hh},{hw}");
            }
        }
    }
    // Rounding by hand: one pixel, a 1x3 window (half_w 1): two border elements.
    let t = Tensor::from_i8(vec![9], [1, 1, 1]).unwrap();
    for (a, b, want) in [
        (0.5, -0.5, [1i8, 9, -1]),
        (2.5, -2.5, [3, 9, -3]),
        (0.49, -0.49, [0, 9, 0]),
        (1.75, -1.25, [2, 9, -1]),
        (126.5, -127.5, [127, 9, -128]),
        (1e9, -1e9, [127, 9, -128]),
    ] {
        let mut seq = [a, b].into_iter();
        let got = t.im2col_hw(0, 1, &mut || seq.next().unwrap()).unwrap();
        assert_eq!(got.to_vec_i8().unwrap(), want, "border {a}, {b}");
    }
}

#[test]
fn im2col_hw_reads_views() {
    let mut rng = Lcg(71);
    let (h, w, c) = (3, 4, 2);
    // Stored as [w, h, c]; the [h, w, c] image is its transpose.
    let stored: Vec<f32> = (0..h * w * c).map(|_| rng.f32(-1.0, 1.0)).collect();
    let t = Tensor::from_f32(stored.clone(), [w, h, c])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    assert!(!t.is_contiguous());
    let mut img = vec![0.0f32; h * w * c];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                img[(y * w + x) * c + ch] = stored[(x * h + y) * c + ch];
            }
        }
    }
    let mut n = 0u32;
    let want = naive_im2col(&img, (h, w, c), 1, 2, &mut || {
        n += 1;
        n as f32
    });
    let mut m = 0u32;
    let got = t
        .im2col_hw(1, 2, &mut || {
            m += 1;
            m as f64
        })
        .unwrap();
    assert_eq!(bits(&got.to_vec_f32().unwrap()), bits(&want));
    // i8 view too.
    let stored8: Vec<i8> = (0..h * w * c).map(|_| rng.i8()).collect();
    let t8 = Tensor::from_i8(stored8.clone(), [w, h, c])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let mut img8 = vec![0i8; h * w * c];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                img8[(y * w + x) * c + ch] = stored8[(x * h + y) * c + ch];
            }
        }
    }
    let want = naive_im2col(&img8, (h, w, c), 2, 1, &mut || 7);
    let got = t8.im2col_hw(2, 1, &mut || 7.0).unwrap();
    assert_eq!(got.to_vec_i8().unwrap(), want);
}

#[test]
fn im2col_hw_typed_errors() {
    let mut b = || 0.0;
    let r2 = Tensor::from_f32(vec![0.0; 4], [2, 2]).unwrap();
    assert_eq!(code(r2.im2col_hw(1, 1, &mut b)), "ShapeMismatch");
    let r4 = Tensor::from_f32(vec![0.0; 4], [1, 2, 2, 1]).unwrap();
    assert_eq!(code(r4.im2col_hw(1, 1, &mut b)), "ShapeMismatch");
    let i32t = Tensor::from_i32(vec![0; 4], [2, 2, 1]).unwrap();
    assert_eq!(code(i32t.im2col_hw(1, 1, &mut b)), "UnsupportedDType");
    // A window too large to describe.
    let t = Tensor::from_f32(vec![0.0; 4], [2, 2, 1]).unwrap();
    assert_eq!(
        code(t.im2col_hw(usize::MAX / 4, usize::MAX / 4, &mut b)),
        "SizeOverflow"
    );
    // Empty images: nothing to read, no border calls.
    let mut calls = 0;
    let e = Tensor::from_f32(vec![], [0, 3, 2]).unwrap();
    let got = e
        .im2col_hw(1, 1, &mut || {
            calls += 1;
            0.0
        })
        .unwrap();
    assert_eq!(got.dims(), [0, 3, 18]);
    assert_eq!(calls, 0);
}

#[test]
fn im2col_hw_largest_half_size_is_an_error_not_a_panic() {
    let t = Tensor::from_f32(vec![0.0; 4], [2, 2, 1]).unwrap();
    for (hh, hw) in [(usize::MAX, 0), (0, usize::MAX), (usize::MAX, usize::MAX)] {
        let r = std::panic::catch_unwind(|| t.im2col_hw(hh, hw, &mut || 0.0).map(drop));
        match r {
            Ok(r) => assert!(r.is_err(), "half {hh},{hw}: {r:?}"),
            Err(_) => panic!("im2col_hw({hh}, {hw}) panicked"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// maxpool2d

fn naive_maxpool<T: Copy + PartialOrd>(
    x: &[T],
    (h, w, c): (usize, usize, usize),
    kh: usize,
    kw: usize,
) -> (Vec<T>, [usize; 3]) {
    let (oh, ow) = (h / kh, w / kw);
    let mut out = Vec::new();
    for oy in 0..oh {
        for ox in 0..ow {
            for ch in 0..c {
                let mut best = x[((oy * kh) * w + ox * kw) * c + ch];
                for dy in 0..kh {
                    for dx in 0..kw {
                        let v = x[((oy * kh + dy) * w + ox * kw + dx) * c + ch];
                        if v > best {
                            best = v;
                        }
                    }
                }
                out.push(best);
            }
        }
    }
    (out, [oh, ow, c])
}

const POOLS: &[(usize, usize)] = &[
    (1, 1),
    (2, 2),
    (3, 2),
    (2, 3),
    (3, 3),
    (7, 5),
    (7, 1),
    (1, 5),
    (4, 4),
    (8, 1),
    (1, 6),
];

#[test]
fn maxpool2d_f32_matches_the_naive_loop() {
    let mut rng = Lcg(81);
    let (h, w, c) = (7, 5, 3);
    let x: Vec<f32> = (0..h * w * c).map(|_| rng.f32(-5.0, 5.0)).collect();
    let t = Tensor::from_f32(x.clone(), [h, w, c]).unwrap();
    for &(kh, kw) in POOLS {
        let (want, dims) = naive_maxpool(&x, (h, w, c), kh, kw);
        let got = t.maxpool2d(kh, kw).unwrap();
        assert_eq!(got.dims(), dims, "{kh}x{kw}");
        assert_eq!(got.dtype(), DType::F32);
        assert_eq!(bits(&got.to_vec_f32().unwrap()), bits(&want), "{kh}x{kw}");
    }
    // By hand: [[1, 5, 2], [4, -3, 9], [0, 0, 0]] (one channel) pooled 2x2 -> [[5]]; the last
    // row and column are dropped.
    let t = Tensor::from_f32(vec![1., 5., 2., 4., -3., 9., 0., 0., 0.], [3, 3, 1]).unwrap();
    let p = t.maxpool2d(2, 2).unwrap();
    assert_eq!(p.dims(), [1, 1, 1]);
    assert_eq!(p.to_vec_f32().unwrap(), [5.0]);
    // All negative: the max is not 0.
    let t = Tensor::from_f32(vec![-4., -2., -3., -9.], [2, 2, 1]).unwrap();
    assert_eq!(t.maxpool2d(2, 2).unwrap().to_vec_f32().unwrap(), [-2.0]);
}

#[test]
fn maxpool2d_i8_matches_the_naive_loop() {
    let mut rng = Lcg(91);
    let (h, w, c) = (7, 5, 3);
    let x: Vec<i8> = (0..h * w * c).map(|_| rng.i8()).collect();
    let t = Tensor::from_i8(x.clone(), [h, w, c]).unwrap();
    for &(kh, kw) in POOLS {
        let (want, dims) = naive_maxpool(&x, (h, w, c), kh, kw);
        let got = t.maxpool2d(kh, kw).unwrap();
        assert_eq!(got.dims(), dims, "{kh}x{kw}");
        assert_eq!(got.dtype(), DType::I8);
        assert_eq!(got.to_vec_i8().unwrap(), want, "{kh}x{kw}");
    }
    let t = Tensor::from_i8(vec![-128, -128, -128, -127], [1, 2, 2]).unwrap();
    assert_eq!(
        t.maxpool2d(1, 2).unwrap().to_vec_i8().unwrap(),
        [-128, -127]
    );
}

#[test]
fn maxpool2d_reads_views_and_rejects_misuse() {
    let mut rng = Lcg(101);
    let (h, w, c) = (6, 4, 2);
    let stored: Vec<i8> = (0..h * w * c).map(|_| rng.i8()).collect();
    let t = Tensor::from_i8(stored.clone(), [w, h, c])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let mut img = vec![0i8; h * w * c];
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                img[(y * w + x) * c + ch] = stored[(x * h + y) * c + ch];
            }
        }
    }
    for &(kh, kw) in &[(2, 2), (3, 2), (4, 3)] {
        let (want, dims) = naive_maxpool(&img, (h, w, c), kh, kw);
        let got = t.maxpool2d(kh, kw).unwrap();
        assert_eq!(got.dims(), dims);
        assert_eq!(got.to_vec_i8().unwrap(), want);
    }
    let f = Tensor::from_f32(vec![0.0; 8], [2, 2, 2]).unwrap();
    assert_eq!(code(f.maxpool2d(0, 2)), "InvalidArgument");
    assert_eq!(code(f.maxpool2d(2, 0)), "InvalidArgument");
    let r2 = Tensor::from_f32(vec![0.0; 4], [2, 2]).unwrap();
    assert_eq!(code(r2.maxpool2d(1, 1)), "ShapeMismatch");
    let i32t = Tensor::from_i32(vec![0; 8], [2, 2, 2]).unwrap();
    assert_eq!(code(i32t.maxpool2d(1, 1)), "UnsupportedDType");
    // Windows larger than the image: an empty result, not a panic.
    assert_eq!(f.maxpool2d(usize::MAX, 1).unwrap().dims(), [0, 2, 2]);
    assert_eq!(f.maxpool2d(3, 3).unwrap().dims(), [0, 0, 2]);
}

// ---------------------------------------------------------------------------------------------
// flip

/// Row-major flip along `dim` by explicit multi-indices.
fn naive_flip<T: Copy>(x: &[T], dims: &[usize], dim: usize) -> Vec<T> {
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(n);
    for flat in 0..n {
        // Decompose `flat` into an index, mirror `dim`, recompose.
        let mut idx = vec![0; dims.len()];
        let mut rem = flat;
        for a in (0..dims.len()).rev() {
            idx[a] = rem % dims[a];
            rem /= dims[a];
        }
        idx[dim] = dims[dim] - 1 - idx[dim];
        let mut src = 0;
        for a in 0..dims.len() {
            src = src * dims[a] + idx[a];
        }
        out.push(x[src]);
    }
    out
}

const FLIP_SHAPES: &[&[usize]] = &[
    &[5],
    &[1],
    &[3, 4],
    &[1, 7],
    &[2, 3, 4],
    &[3, 1, 2],
    &[2, 2, 3, 2],
    &[0, 3],
    &[2, 0, 3],
];

#[test]
fn flip_matches_the_naive_index_loop_in_every_dtype() {
    let mut rng = Lcg(111);
    for &dims in FLIP_SHAPES {
        let n: usize = dims.iter().product();
        let f: Vec<f32> = (0..n).map(|_| rng.f32(-9.0, 9.0)).collect();
        let b: Vec<i8> = (0..n).map(|_| rng.i8()).collect();
        let i: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
        let tf = Tensor::from_f32(f.clone(), dims).unwrap();
        let tb = Tensor::from_i8(b.clone(), dims).unwrap();
        let ti = Tensor::from_i32(i.clone(), dims).unwrap();
        for dim in 0..dims.len() {
            let gf = tf.flip(dim).unwrap();
            let gb = tb.flip(dim).unwrap();
            let gi = ti.flip(dim).unwrap();
            assert_eq!(gf.dims(), dims);
            assert_eq!(
                (gf.dtype(), gb.dtype(), gi.dtype()),
                (DType::F32, DType::I8, DType::I32)
            );
            assert_eq!(
                bits(&gf.to_vec_f32().unwrap()),
                bits(&naive_flip(&f, dims, dim)),
                "f32 {dims:?} dim {dim}"
            );
            assert_eq!(
                gb.to_vec_i8().unwrap(),
                naive_flip(&b, dims, dim),
                "i8 {dims:?} dim {dim}"
            );
            assert_eq!(
                gi.to_vec_i32().unwrap(),
                naive_flip(&i, dims, dim),
                "i32 {dims:?} dim {dim}"
            );
            // Twice is the identity.
            assert_eq!(gi.flip(dim).unwrap().to_vec_i32().unwrap(), i);
        }
    }
    // By hand.
    let t = Tensor::from_i32(vec![1, 2, 3, 4, 5, 6], [2, 3]).unwrap();
    assert_eq!(t.flip(0).unwrap().to_vec_i32().unwrap(), [4, 5, 6, 1, 2, 3]);
    assert_eq!(t.flip(1).unwrap().to_vec_i32().unwrap(), [3, 2, 1, 6, 5, 4]);
    // Bits survive (NaN payloads, -0).
    let odd = [f32::from_bits(0x7fc0_1234), -0.0, f32::from_bits(1)];
    let t = Tensor::from_f32(odd.to_vec(), [3]).unwrap();
    assert_eq!(
        bits(&t.flip(0).unwrap().to_vec_f32().unwrap()),
        [1, 0x8000_0000, 0x7fc0_1234]
    );
}

#[test]
fn flip_reads_views() {
    let mut rng = Lcg(121);
    // A transposed [4, 3] view of [3, 4] data.
    let base: Vec<i32> = (0..12).map(|_| rng.next() as i32).collect();
    let t = Tensor::from_i32(base.clone(), [3, 4])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    assert!(!t.is_contiguous());
    let logical: Vec<i32> = (0..12).map(|i| base[(i % 3) * 4 + i / 3]).collect();
    for dim in 0..2 {
        assert_eq!(
            t.flip(dim).unwrap().to_vec_i32().unwrap(),
            naive_flip(&logical, &[4, 3], dim)
        );
    }
    // A permuted 3-D f32 view: stored [2, 3, 4], read as [4, 2, 3].
    let base: Vec<f32> = (0..24).map(|_| rng.f32(-1.0, 1.0)).collect();
    let t = Tensor::from_f32(base.clone(), [2, 3, 4])
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap();
    assert_eq!(t.dims(), [4, 2, 3]);
    let mut logical = Vec::new();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                logical.push(base[(i * 3 + j) * 4 + k]);
            }
        }
    }
    for dim in 0..3 {
        assert_eq!(
            bits(&t.flip(dim).unwrap().to_vec_f32().unwrap()),
            bits(&naive_flip(&logical, &[4, 2, 3], dim)),
            "dim {dim}"
        );
    }
    // A narrowed i8 view (offset into the storage) and a broadcast one.
    let base: Vec<i8> = (0..20).map(|_| rng.i8()).collect();
    let t = Tensor::from_i8(base.clone(), [4, 5])
        .unwrap()
        .narrow(1, 1, 3)
        .unwrap();
    let logical: Vec<i8> = (0..4)
        .flat_map(|r| base[r * 5 + 1..r * 5 + 4].to_vec())
        .collect();
    for dim in 0..2 {
        assert_eq!(
            t.flip(dim).unwrap().to_vec_i8().unwrap(),
            naive_flip(&logical, &[4, 3], dim)
        );
    }
    let t = Tensor::from_i8(vec![1, 2, 3], [3])
        .unwrap()
        .broadcast_to([2, 3])
        .unwrap();
    assert_eq!(t.flip(1).unwrap().to_vec_i8().unwrap(), [3, 2, 1, 3, 2, 1]);
    assert_eq!(t.flip(0).unwrap().to_vec_i8().unwrap(), [1, 2, 3, 1, 2, 3]);
}

#[test]
fn flip_typed_errors() {
    let t = Tensor::from_f32(vec![0.0; 6], [2, 3]).unwrap();
    assert_eq!(code(t.flip(2)), "AxisOutOfRange");
    assert_eq!(code(t.flip(usize::MAX)), "AxisOutOfRange");
    let s = Tensor::from_f32(vec![1.0], ()).unwrap();
    assert_eq!(code(s.flip(0)), "AxisOutOfRange");
    let q = Tensor::from_quantized(DType::Q8_0, vec![0u8; 34], [32]).unwrap();
    assert_eq!(code(q.flip(0)), "QuantizedElementAccess");
}

#[test]
fn lstm_cell_lut_bad_clip_is_an_error_not_a_panic() {
    let z = Tensor::from_f32(vec![0.0; 2], [2]).unwrap();
    for clip in [-1.0f32, f32::NAN] {
        let r =
            std::panic::catch_unwind(|| Tensor::lstm_cell_lut(&z, &z, &z, &z, &z, clip).map(drop));
        assert!(r.is_ok(), "lstm_cell_lut(.., clip {clip}) panicked");
    }
}

// ---------------------------------------------------------------------------------------------
// lstm_i8: the fused sequence against the same LSTM stepped through time with the ops above

/// One sequence step by step as separate ops: the source `[x_t, h]`, `linear_i8` over all
/// four gates, `lstm_cell_lut`, `quantize_unit_i8` — what the forward pass did before the
/// fused op.
fn stepped_lstm(x: &Tensor, gates: &Tensor, scales: &Tensor, clip: f32, summarize: bool) -> Tensor {
    let (b, t, ni) = (x.dims()[0], x.dims()[1], x.dims()[2]);
    let ns = gates.dims()[0] / 4;
    let steps = x.transpose(0, 1).unwrap().contiguous().unwrap();
    let mut hidden = Tensor::from_i8(vec![0; b * ns], [b, ns]).unwrap();
    let mut cell = Tensor::zeros([b, ns]);
    let mut outs = Vec::new();
    for step in 0..t {
        let xt = steps.narrow(0, step, 1).unwrap().reshape([b, ni]).unwrap();
        let g = Tensor::concat(&[xt, hidden.clone()], 1)
            .unwrap()
            .linear_i8(gates, scales)
            .unwrap();
        let gate = |k: usize| g.narrow(1, k * ns, ns).unwrap();
        let st =
            Tensor::lstm_cell_lut(&gate(0), &gate(1), &gate(2), &gate(3), &cell, clip).unwrap();
        cell = st.cell;
        hidden = st.hidden.quantize_unit_i8().unwrap();
        outs.push(hidden.reshape([b, 1, ns]).unwrap());
    }
    if summarize {
        hidden.reshape([b, 1, ns]).unwrap()
    } else {
        Tensor::concat(&outs, 1).unwrap()
    }
}

#[test]
fn lstm_i8_equals_the_stepped_ops_bit_for_bit() {
    let mut rng = Lcg(77);
    for (b, t, ni, ns, clip) in [
        (1, 9, 5, 3, 100.0),
        (3, 12, 16, 8, 100.0),
        (2, 5, 0, 4, 100.0),
        (1, 7, 20, 16, 0.5),
        (4, 3, 33, 2, 100.0),
    ] {
        let x = Tensor::from_i8(
            (0..b * t * ni).map(|_| rng.i8().max(-127)).collect(),
            [b, t, ni],
        )
        .unwrap();
        let cols = ni + ns + 1;
        // Moderate weights and scales so gates span the tables' range, not just saturation.
        let gates = Tensor::from_i8(
            (0..4 * ns * cols).map(|_| rng.i8()).collect(),
            [4 * ns, cols],
        )
        .unwrap();
        let scales =
            Tensor::from_f32((0..4 * ns).map(|_| rng.f32(1e-5, 4e-4)).collect(), [4 * ns]).unwrap();
        for summarize in [false, true] {
            let fused = x.lstm_i8(&gates, &scales, clip, summarize).unwrap();
            let stepped = stepped_lstm(&x, &gates, &scales, clip, summarize);
            assert_eq!(fused.dims(), stepped.dims());
            assert_eq!(
                fused.to_vec_i8().unwrap(),
                stepped.to_vec_i8().unwrap(),
                "b={b} t={t} ni={ni} ns={ns} summarize={summarize}"
            );
        }
    }
}

#[test]
fn lstm_i8_typed_errors() {
    let x = Tensor::from_i8(vec![0; 2 * 3 * 4], [2, 3, 4]).unwrap();
    let gates = Tensor::from_i8(vec![0; 8 * 7], [8, 7]).unwrap();
    let scales = Tensor::from_f32(vec![1.0; 8], [8]).unwrap();
    assert!(x.lstm_i8(&gates, &scales, 100.0, false).is_ok());
    assert_eq!(
        code(x.lstm_i8(&gates, &scales, -1.0, false)),
        "InvalidArgument"
    );
    assert_eq!(
        code(x.lstm_i8(&gates, &scales, f32::NAN, false)),
        "InvalidArgument"
    );
    let wrong_cols = Tensor::from_i8(vec![0; 8 * 6], [8, 6]).unwrap();
    assert_eq!(
        code(x.lstm_i8(&wrong_cols, &scales, 100.0, false)),
        "ShapeMismatch"
    );
    let not_four = Tensor::from_i8(vec![0; 7 * 7], [7, 7]).unwrap();
    assert_eq!(
        code(x.lstm_i8(
            &not_four,
            &Tensor::from_f32(vec![1.0; 7], [7]).unwrap(),
            100.0,
            false
        )),
        "ShapeMismatch"
    );
    assert_eq!(
        code(
            x.reshape([6, 4])
                .unwrap()
                .lstm_i8(&gates, &scales, 100.0, false)
        ),
        "ShapeMismatch"
    );
    assert_eq!(
        code(Tensor::zeros([2, 3, 4]).lstm_i8(&gates, &scales, 100.0, false)),
        "DTypeMismatch"
    );
}
