//! Q4_0/Q8_0 blocks: dequantization of hand-built blocks, the `_ref` quantizers on hand-computed
//! cases, and the fused quantized matmul against dequantize + reference matmul.

mod common;

use common::{assert_err, Rng};
use half::f16;
use kopitiam_wasm::quant::{quantize_row_q4_0, quantize_row_q8_0};
use kopitiam_wasm::{DType, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_bits().to_le_bytes()
}

#[test]
fn q4_0_block_dequantizes_per_layout() {
    // d = 0.5; byte j holds element j (low nibble) and element j + 16 (high nibble).
    let mut block = f16_bytes(0.5).to_vec();
    for j in 0..16u8 {
        block.push(j | ((15 - j) << 4));
    }
    let t = Tensor::from_quantized(DType::Q4_0, block, [1, 32]).unwrap();
    let got = t.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
    let want: Vec<f32> = (0..32)
        .map(|e| {
            let q = if e < 16 { e } else { 15 - (e - 16) };
            (q as f32 - 8.0) * 0.5
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn q8_0_block_dequantizes_per_layout() {
    let mut block = f16_bytes(0.25).to_vec();
    block.extend((0..32).map(|e| (e as i8 * 4 - 64) as u8));
    block.extend(f16_bytes(-2.0)); // second block
    block.extend((0..32).map(|e| if e == 0 { 0x80 } else { 0x7F }));
    let t = Tensor::from_quantized(DType::Q8_0, block, [2, 32]).unwrap();
    let got = t.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
    let mut want: Vec<f32> = (0..32).map(|e| (e as f32 * 4.0 - 64.0) * 0.25).collect();
    want.push(256.0);
    want.extend([-254.0; 31]);
    assert_eq!(got, want);
}

#[test]
fn reference_quantizers_on_hand_computed_blocks() {
    // Q8_0: amax = 127 -> d = 1, q = round(x) with halves away from zero.
    let mut x = vec![0.0f32; 32];
    x[0] = 127.0;
    x[1] = 2.5;
    x[2] = -2.5;
    x[3] = 0.49;
    let mut out = vec![0u8; 34];
    quantize_row_q8_0(&x, &mut out);
    assert_eq!(&out[..2], &f16_bytes(1.0));
    assert_eq!(&out[2..6], &[127, 3, (-3i8) as u8, 0]);

    // Q4_0: max = -16 (largest magnitude, signed) -> d = 2, id = 0.5; q = min(15, trunc(x/2 + 8.5)).
    let mut x = vec![0.0f32; 32];
    x[0] = -16.0; // -> trunc(0.5) = 0
    x[1] = 14.0; // -> trunc(15.5) = 15
    x[2] = 15.9; // -> trunc(16.45) = 16 -> clamped 15
    x[16] = 3.0; // -> trunc(10) = 10
    x[17] = -0.99; // -> trunc(8.005) = 8
    let mut out = vec![0u8; 18];
    quantize_row_q4_0(&x, &mut out);
    assert_eq!(&out[..2], &f16_bytes(2.0));
    assert_eq!(out[2], 10 << 4);
    assert_eq!(out[3], 15 | (8 << 4));
    assert_eq!(out[4], 15 | (8 << 4));
    assert_eq!(out[5], 8 | (8 << 4)); // zeros map to 8
                                      // All-zero block: d = 0.0 / -8 = -0.0 (stored as f16 0x8000, as ggml does), nibbles 8.
    quantize_row_q4_0(&[0.0; 32], &mut out);
    assert_eq!(&out[..2], &[0x00, 0x80]);
    assert!(out[2..].iter().all(|&b| b == 0x88));
}

fn quantize(dtype: DType, w: &[f32], rows: usize, cols: usize) -> Tensor {
    let mut bytes = vec![0u8; dtype.storage_bytes(rows * cols).unwrap()];
    match dtype {
        DType::Q4_0 => quantize_row_q4_0(w, &mut bytes),
        _ => quantize_row_q8_0(w, &mut bytes),
    }
    Tensor::from_quantized(dtype, bytes, [rows, cols]).unwrap()
}

/// The bound on |fused − reference| that Q8_0 quantization of the activation alone allows.
///
/// For a block with f32 scale `d = amax/127`, the stored scale `d'` is `d` rounded to f16
/// (relative error <= 2^-11 for normal values) and `q = round(x/d)`, so
/// `|x − q·d'| <= |x − q·d| + |q|·|d − d'| <= d/2 + 127·2^-11·d`.
/// Both paths read identical weight values `w`, so per output
/// `|err| <= Σ_blocks (0.5 + 127·2^-11)·d_b·Σ_j |w_j|`, plus f32 rounding of the two sums,
/// bounded here by `1e-5 · Σ |w|·|x|`.
fn activation_error_bound(x: &[f32], w_row: &[f32]) -> f32 {
    let mut bound = 0.0f64;
    let mut mag = 0.0f64;
    for (xb, wb) in x.chunks(32).zip(w_row.chunks(32)) {
        let amax = xb.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
        let d = amax / 127.0;
        let wsum: f64 = wb.iter().map(|v| v.abs() as f64).sum();
        bound += (0.5 + 127.0 / 2048.0) * d * wsum;
        mag += xb
            .iter()
            .zip(wb)
            .map(|(a, b)| (a * b).abs() as f64)
            .sum::<f64>();
    }
    (bound + 1e-5 * mag + 1e-30) as f32
}

fn check_against_reference(dtype: DType, x: &[f32], xdims: &[usize], w: &[f32], out_f: usize) {
    let in_f = *xdims.last().unwrap();
    let wq = quantize(dtype, w, out_f, in_f);
    let xt = Tensor::from_f32(x.to_vec(), xdims).unwrap();
    let fused = xt.quantized_matmul(&wq).unwrap();
    let wf = wq.to_dtype(DType::F32).unwrap();
    let rows = x.len() / in_f;
    let reference = xt
        .reshape([rows, in_f])
        .unwrap()
        .matmul(&wf.transpose(0, 1).unwrap())
        .unwrap();
    let mut want_dims = xdims.to_vec();
    *want_dims.last_mut().unwrap() = out_f;
    assert_eq!(fused.dims(), &want_dims[..]);
    let (got, want) = (fused.to_vec_f32().unwrap(), reference.to_vec_f32().unwrap());
    let wvals = wf.to_vec_f32().unwrap();
    for (i, (g, r)) in got.iter().zip(&want).enumerate() {
        let (row, o) = (i / out_f, i % out_f);
        let bound = activation_error_bound(
            &x[row * in_f..(row + 1) * in_f],
            &wvals[o * in_f..(o + 1) * in_f],
        );
        assert!(
            (g - r).abs() <= bound,
            "{dtype} out {i}: fused {g}, reference {r}, bound {bound}"
        );
    }
}

#[test]
fn quantized_matmul_agrees_with_dequantize_then_matmul_random() {
    let mut rng = Rng::new(11);
    for dtype in [DType::Q4_0, DType::Q8_0] {
        for (xdims, out_f) in [
            (vec![1, 64], 7),
            (vec![5, 96], 16),
            (vec![2, 3, 32], 3),
            (vec![256], 5),
        ] {
            let in_f = *xdims.last().unwrap();
            let n: usize = xdims.iter().product();
            let x = rng.vec(n, 3.0);
            let w = rng.vec(out_f * in_f, 1.0);
            check_against_reference(dtype, &x, &xdims, &w, out_f);
        }
    }
}

#[test]
fn quantized_matmul_adversarial_blocks() {
    let in_f = 96;
    let mut x = vec![0.0f32; 2 * in_f];
    // Row 0: first block all zero, second block at large magnitude, third mixed tiny/huge.
    for (j, v) in x.iter_mut().enumerate().take(64).skip(32) {
        *v = if j % 2 == 0 { 60000.0 } else { -60000.0 };
    }
    x[64] = 1e-3;
    x[65] = -4000.0;
    // Row 1: all zero (d = 0 everywhere).
    let mut w = vec![0.0f32; 3 * in_f];
    for (i, v) in w.iter_mut().enumerate() {
        *v = match i / 32 % 3 {
            0 => 0.0, // all-zero weight blocks
            1 => {
                if i % 3 == 0 {
                    -1000.0
                } else {
                    1000.0
                }
            } // max-magnitude blocks
            _ => (i as f32 * 0.37).sin(),
        };
    }
    for dtype in [DType::Q4_0, DType::Q8_0] {
        check_against_reference(dtype, &x, &[2, in_f], &w, 3);
        let out = Tensor::from_f32(x.clone(), [2, in_f])
            .unwrap()
            .quantized_matmul(&quantize(dtype, &w, 3, in_f))
            .unwrap();
        assert_eq!(
            &out.to_vec_f32().unwrap()[3..],
            &[0.0, 0.0, 0.0],
            "zero activations give exact zeros"
        );
    }
}

#[test]
fn quantized_matmul_errors() {
    let w = quantize(DType::Q4_0, &[0.5; 64], 2, 32);
    let x = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    assert_err(
        Tensor::from_i32(vec![0; 32], [1, 32])
            .unwrap()
            .quantized_matmul(&w),
        "DTypeMismatch",
    );
    assert_err(x.quantized_matmul(&x), "UnsupportedDType");
    assert_err(
        Tensor::from_f32(vec![1.0; 64], [1, 64])
            .unwrap()
            .quantized_matmul(&w),
        "ShapeMismatch",
    );
    let w3 = Tensor::from_quantized(DType::Q8_0, vec![0; 34 * 2], [2, 1, 32]).unwrap();
    assert_err(x.quantized_matmul(&w3), "ShapeMismatch");
    assert_err(
        Tensor::from_f32(vec![1.0], ())
            .unwrap()
            .quantized_matmul(&w),
        "ShapeMismatch",
    );
}

#[test]
fn matmul_many_equals_separate_matmuls() {
    use kopitiam_wasm::quant::{matmul_into, matmul_many, MatmulScratch};
    let mut rng = Rng::new(77);
    // A q/k/v-like trio: one row of it (0.55 MB of Q4_0, 1.04 MB of Q8_0, both under the 1 MiB
    // split threshold) leaves each matrix one task; three or six rows split every matrix into
    // several (with two or more threads).
    let cols = 640;
    let sizes = [1024, 256, 256];
    for rows in [1usize, 3, 6] {
        for dtype in [DType::Q4_0, DType::Q8_0] {
            let ws: Vec<Tensor> = sizes
                .iter()
                .map(|&n| quantize(dtype, &rng.vec(n * cols, 1.0), n, cols))
                .collect();
            let x = rng.vec(rows * cols, 2.0);
            let mut mm = MatmulScratch::default();
            let mut want: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![0.0; rows * n]).collect();
            for (w, o) in ws.iter().zip(want.iter_mut()) {
                matmul_into(&x, w, &mut mm, o).unwrap();
            }
            let mut got: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![f32::NAN; rows * n]).collect();
            let (a, rest) = got.split_at_mut(1);
            let (b, c) = rest.split_at_mut(1);
            matmul_many(
                &x,
                &[&ws[0], &ws[1], &ws[2]],
                &mut mm,
                &mut [&mut a[0], &mut b[0], &mut c[0]],
            )
            .unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    g.iter().zip(w).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{dtype:?}, {rows} rows"
                );
            }
            // A wrong output length is a shape error, not a panic.
            let mut short = vec![0.0; 1];
            let err = matmul_many(&x, &[&ws[0]], &mut mm, &mut [&mut short]).unwrap_err();
            assert_eq!(err.code(), "ShapeMismatch");
        }
    }
}

/// The LM head's greedy pick: `matmul_argmax` writes the plain matmul's bits and returns the
/// first largest of them (a naive search over the whole row), with the largest repeated in
/// every task (the weight rows repeat every 1,000, so each 8,192-row task holds each value) and
/// NaN outputs from NaN scales; all NaN gives `None`, a wrong length a shape error.
#[test]
fn matmul_argmax_is_the_first_largest_of_the_matmul() {
    use kopitiam_wasm::quant::{matmul_argmax, matmul_into, MatmulScratch, QWeight};
    let mut rng = Rng::new(93);
    let (rows, cols) = (40_000, 64);
    for dtype in [DType::Q4_0, DType::Q8_0] {
        let pattern = rng.vec(1_000 * cols, 1.0);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| pattern[i % pattern.len()])
            .collect();
        let mut t = quantize(dtype, &w, rows, cols);
        let row_bytes = dtype.storage_bytes(cols).unwrap();
        let mut bytes = t.quantized_bytes().unwrap().to_vec();
        for r in [5, 12_345, 39_999] {
            bytes[r * row_bytes..][..2].copy_from_slice(&f16::NAN.to_bits().to_le_bytes());
        }
        t = Tensor::from_quantized(dtype, bytes, [rows, cols]).unwrap();
        let x = rng.vec(cols, 2.0);
        let mut mm = MatmulScratch::default();
        let mut want = vec![0.0; rows];
        matmul_into(&x, &t, &mut mm, &mut want).unwrap();
        let top = want
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .reduce(f32::max);
        let first = want.iter().position(|&v| Some(v) == top);
        assert!(want[5].is_nan() && first.is_some_and(|i| i < 1_000));
        let w = QWeight::try_from(&t).unwrap();
        let mut got = vec![f32::NAN; rows];
        assert_eq!(
            matmul_argmax(&x, w, &mut mm, &mut got).unwrap(),
            first,
            "{dtype:?}"
        );
        assert!(got
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(
            matmul_argmax(&x, w, &mut mm, &mut got[1..])
                .unwrap_err()
                .code(),
            "ShapeMismatch"
        );
    }
    // Four Q8_0 rows of one block each (a NaN scale, then 32 quants of 1): every output NaN.
    let block: Vec<u8> = f16::NAN
        .to_bits()
        .to_le_bytes()
        .into_iter()
        .chain([1; 32])
        .collect();
    let t = Tensor::from_quantized(DType::Q8_0, block.repeat(4), [4, 32]).unwrap();
    let mut out = [0.0; 4];
    let top = matmul_argmax(
        &[1.0; 32],
        QWeight::try_from(&t).unwrap(),
        &mut MatmulScratch::default(),
        &mut out,
    );
    assert_eq!(top.unwrap(), None);
    assert!(out.iter().all(|v| v.is_nan()));
}

/// Prefill and decode take different kernels (tiled over activation rows, or one row against
/// the weights); every output must have the same bits either way, for every fused format.
#[test]
fn a_batch_of_rows_equals_its_rows_one_at_a_time_bit_for_bit() {
    use kopitiam_wasm::quant::{matmul_into, MatmulScratch};
    let mut rng = Rng::new(41);
    let (n_in, n_out) = (512, 24);
    for dtype in [
        DType::Q4_0,
        DType::Q8_0,
        DType::Q5_0,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
    ] {
        let bytes: Vec<u8> = (0..dtype.storage_bytes(n_in * n_out).unwrap())
            .map(|_| rng.next_u64() as u8)
            .collect();
        let mut w = bytes;
        // Finite scales: every f16 field a small value (the layouts put them in different places).
        let (bb, at): (usize, &[usize]) = match dtype {
            DType::Q6_K => (210, &[208]),
            DType::Q4_K | DType::Q5_K => (dtype.block_bytes(), &[0, 2]),
            _ => (dtype.block_bytes(), &[0]),
        };
        for block in w.chunks_exact_mut(bb) {
            for &a in at {
                block[a..a + 2].copy_from_slice(&f16_bytes(0.01 + 0.02 * rng.f32().abs()));
            }
        }
        let weight = Tensor::from_quantized(dtype, w, [n_out, n_in]).unwrap();
        for rows in [4, 7, 9] {
            let x: Vec<f32> = (0..rows * n_in).map(|_| rng.f32() * 2.0).collect();
            let mut mm = MatmulScratch::default();
            let mut all = vec![0.0f32; rows * n_out];
            matmul_into(&x, &weight, &mut mm, &mut all).unwrap();
            for r in 0..rows {
                let mut one = vec![0.0f32; n_out];
                matmul_into(&x[r * n_in..(r + 1) * n_in], &weight, &mut mm, &mut one).unwrap();
                let same = one
                    .iter()
                    .zip(&all[r * n_out..])
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same,
                    "{dtype}, {rows} rows: row {r} differs from its single-row result"
                );
            }
        }
    }
}
