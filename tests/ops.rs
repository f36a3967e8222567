//! Reference ops against hand-computed values and naive loops.

mod common;

use common::{assert_close, assert_err, indices, Rng};
use kopitiam_wasm::{DType, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

type BinOp = fn(&Tensor, &Tensor) -> kopitiam_wasm::Result<Tensor>;
type ScalarOp = fn(f32, f32) -> f32;

fn t(data: &[f32], dims: &[usize]) -> Tensor {
    Tensor::from_f32(data.to_vec(), dims).unwrap()
}

/// Broadcasting by explicit repetition: read `x` (with `dims`) at an index of the output shape.
fn read_broadcast(x: &[f32], dims: &[usize], out_idx: &[usize]) -> f32 {
    let lead = out_idx.len() - dims.len();
    let mut off = 0;
    for (ax, &d) in dims.iter().enumerate() {
        let i = if d == 1 { 0 } else { out_idx[lead + ax] };
        off = off * d + i;
    }
    x[off]
}

#[test]
fn binary_ops_broadcast_like_explicit_repetition() {
    let mut rng = Rng::new(1);
    let cases: [(&[usize], &[usize]); 5] = [
        (&[2, 3], &[2, 3]),
        (&[2, 3], &[3]),
        (&[4, 1, 3], &[2, 1]),
        (&[1], &[5, 2]),
        (&[], &[2, 2]),
    ];
    for (da, db) in cases {
        let na: usize = da.iter().product();
        let nb: usize = db.iter().product();
        let (xa, xb) = (rng.vec(na, 4.0), rng.vec(nb, 4.0));
        let (a, b) = (t(&xa, da), t(&xb, db));
        let ops: [(BinOp, ScalarOp); 6] = [
            (Tensor::add, |x, y| x + y),
            (Tensor::sub, |x, y| x - y),
            (Tensor::mul, |x, y| x * y),
            (Tensor::div, |x, y| x / y),
            (Tensor::lt, |x, y| (x < y) as i32 as f32),
            (Tensor::maximum, f32::max),
        ];
        for (op, f) in ops {
            let out = op(&a, &b).unwrap();
            let dims = out.dims().to_vec();
            let want: Vec<f32> = indices(&dims)
                .iter()
                .map(|idx| f(read_broadcast(&xa, da, idx), read_broadcast(&xb, db, idx)))
                .collect();
            assert_eq!(out.to_vec_f32().unwrap(), want, "{da:?} op {db:?}");
        }
    }
    // Works on strided views too.
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).transpose(0, 1).unwrap();
    assert_eq!(
        a.add(&a).unwrap().to_vec_f32().unwrap(),
        vec![2.0, 6.0, 4.0, 8.0]
    );
}

#[test]
fn division_follows_ieee() {
    let out = t(&[1.0, -1.0, 0.0], &[3])
        .div(&t(&[0.0], &[1]))
        .unwrap()
        .to_vec_f32()
        .unwrap();
    assert_eq!(out[0], f32::INFINITY);
    assert_eq!(out[1], f32::NEG_INFINITY);
    assert!(out[2].is_nan());
}

#[test]
fn comparisons() {
    let a = t(&[1.0, 2.0, f32::NAN], &[3]);
    let b = t(&[2.0, 2.0, 2.0], &[3]);
    let v = |r: kopitiam_wasm::Result<Tensor>| r.unwrap().to_vec_f32().unwrap();
    assert_eq!(v(a.eq(&b)), vec![0.0, 1.0, 0.0]);
    assert_eq!(v(a.ne(&b)), vec![1.0, 0.0, 1.0]);
    assert_eq!(v(a.lt(&b)), vec![1.0, 0.0, 0.0]);
    assert_eq!(v(a.le(&b)), vec![1.0, 1.0, 0.0]);
    assert_eq!(v(a.gt(&b)), vec![0.0, 0.0, 0.0]);
    assert_eq!(v(a.ge(&b)), vec![0.0, 1.0, 0.0]);
}

#[test]
fn reductions() {
    // [[1, 5, 2], [7, 0, 7]]
    let x = t(&[1.0, 5.0, 2.0, 7.0, 0.0, 7.0], &[2, 3]);
    assert_eq!(
        x.sum(1, false).unwrap().to_vec_f32().unwrap(),
        vec![8.0, 14.0]
    );
    let s0 = x.sum(0, true).unwrap();
    assert_eq!(
        (s0.dims(), s0.to_vec_f32().unwrap()),
        (&[1usize, 3][..], vec![8.0, 5.0, 9.0])
    );
    assert_eq!(
        x.max(1, false).unwrap().to_vec_f32().unwrap(),
        vec![5.0, 7.0]
    );
    let am = x.argmax(1, false).unwrap();
    assert_eq!(am.dtype(), DType::I32);
    assert_eq!(am.to_vec_i32().unwrap(), vec![1, 0]); // tie 7, 7 -> first
    assert_eq!(x.argmax(0, true).unwrap().dims(), &[1, 3]);
    assert_eq!(
        x.transpose(0, 1)
            .unwrap()
            .sum(0, false)
            .unwrap()
            .to_vec_f32()
            .unwrap(),
        vec![8.0, 14.0]
    );
    // NaN never wins argmax; max propagates NaN.
    let n = t(&[f32::NAN, 1.0, 3.0, f32::NAN], &[4]);
    assert_eq!(n.argmax(0, false).unwrap().to_vec_i32().unwrap(), vec![2]);
    assert!(n.max(0, false).unwrap().to_vec_f32().unwrap()[0].is_nan());
    // f64 accumulation: 1e8 + 1 + ... + 1 - 1e8 keeps the ones.
    let mut v = vec![1.0f32; 1001];
    v[0] = 1e8;
    v.push(-1e8);
    assert_eq!(
        t(&v, &[1002]).sum(0, false).unwrap().to_vec_f32().unwrap(),
        vec![1000.0]
    );
    // Empty axis: sum is 0, max/argmax are errors.
    let e = t(&[], &[2, 0]);
    assert_eq!(
        e.sum(1, false).unwrap().to_vec_f32().unwrap(),
        vec![0.0, 0.0]
    );
    assert_err(e.max(1, false), "InvalidArgument");
    assert_err(e.argmax(1, false), "InvalidArgument");
}

#[test]
fn softmax_is_stable_and_matches_formula() {
    let x = t(&[1000.0, -1000.0, 999.0, 0.0, 1.0, 2.0], &[2, 3]);
    let s = x.softmax(1).unwrap().to_vec_f32().unwrap();
    let e1 = (-1.0f64).exp();
    let want0 = [1.0 / (1.0 + e1), 0.0, e1 / (1.0 + e1)];
    let z: f64 = (0..3).map(|i| (i as f64).exp()).sum();
    let want1: Vec<f64> = (0..3).map(|i| (i as f64).exp() / z).collect();
    let want: Vec<f32> = want0.iter().chain(&want1).map(|&v| v as f32).collect();
    assert!(s.iter().all(|v| v.is_finite()));
    assert_close(&s, &want, 1e-6);
    // Along axis 0 as well.
    let s0 = x.softmax(0).unwrap().to_vec_f32().unwrap();
    assert_close(&[s0[0] + s0[3], s0[1] + s0[4]], &[1.0, 1.0], 1e-6);
}

#[test]
fn norms() {
    let x = t(&[1.0, 2.0, 3.0, 4.0, -1.0, 0.5], &[2, 3]);
    let w = t(&[1.0, 0.5, 2.0], &[3]);
    let r = x.rms_norm(&w, 1e-6).unwrap().to_vec_f32().unwrap();
    let mut want = vec![];
    for row in [[1.0f64, 2.0, 3.0], [4.0, -1.0, 0.5]] {
        let rms = ((row.iter().map(|v| v * v).sum::<f64>() / 3.0) + 1e-6).sqrt();
        for (v, w) in row.iter().zip([1.0, 0.5, 2.0]) {
            want.push((v / rms * w) as f32);
        }
    }
    assert_close(&r, &want, 1e-6);
    let b = t(&[0.0, 1.0, -1.0], &[3]);
    let l = x.layer_norm(&w, &b, 1e-5).unwrap().to_vec_f32().unwrap();
    let mut want = vec![];
    for row in [[1.0f64, 2.0, 3.0], [4.0, -1.0, 0.5]] {
        let mean = row.iter().sum::<f64>() / 3.0;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0;
        for ((v, w), b) in row.iter().zip([1.0, 0.5, 2.0]).zip([0.0, 1.0, -1.0]) {
            want.push(((v - mean) / (var + 1e-5).sqrt() * w + b) as f32);
        }
    }
    assert_close(&l, &want, 1e-6);
    assert_err(x.rms_norm(&t(&[1.0, 2.0], &[2]), 1e-6), "ShapeMismatch");
}

#[test]
fn activations_match_formulas() {
    let xs: Vec<f32> = (-40..=40).map(|i| i as f32 * 0.25).collect();
    let x = t(&xs, &[81]);
    let check = |got: Tensor, f: &dyn Fn(f64) -> f64| {
        let want: Vec<f32> = xs.iter().map(|&v| f(v as f64) as f32).collect();
        assert_close(&got.to_vec_f32().unwrap(), &want, 1e-6);
    };
    check(x.silu().unwrap(), &|v| v / (1.0 + (-v).exp()));
    check(x.gelu().unwrap(), &|v| {
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
    });
    check(x.tanh().unwrap(), &f64::tanh);
    check(x.sigmoid().unwrap(), &|v| 1.0 / (1.0 + (-v).exp()));
    check(x.logistic().unwrap(), &|v| 1.0 / (1.0 + (-v).exp()));
    check(x.exp().unwrap(), &f64::exp);
    check(x.relu().unwrap(), &|v| v.max(0.0));
    check(x.neg().unwrap(), &|v| -v);
    check(x.affine(2.0, 1.0).unwrap(), &|v| 2.0 * v + 1.0);
}

#[test]
fn matmul_matches_triple_loop_with_broadcast_batches() {
    let mut rng = Rng::new(3);
    let cases: [(&[usize], &[usize]); 5] = [
        (&[3, 4], &[4, 5]),
        (&[2, 3, 4], &[4, 2]),
        (&[2, 1, 3, 4], &[3, 4, 5]),
        (&[1, 7], &[7, 1]),
        (&[0, 3], &[3, 2]),
    ];
    for (da, db) in cases {
        let na: usize = da.iter().product();
        let nb: usize = db.iter().product();
        let (xa, xb) = (rng.vec(na, 1.0), rng.vec(nb, 1.0));
        let out = t(&xa, da).matmul(&t(&xb, db)).unwrap();
        let (m, k, n) = (da[da.len() - 2], da[da.len() - 1], db[db.len() - 1]);
        let dims = out.dims().to_vec();
        let batch = &dims[..dims.len() - 2];
        let got = out.to_vec_f32().unwrap();
        let mut pos = 0;
        for bidx in indices(batch) {
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0.0f32;
                    for p in 0..k {
                        let mut ia = bidx.clone();
                        ia.extend([i, p]);
                        let mut ib = bidx.clone();
                        ib.extend([p, j]);
                        acc += read_broadcast(&xa, da, &ia) * read_broadcast(&xb, db, &ib);
                    }
                    assert_eq!(got[pos], acc, "{da:?} @ {db:?}");
                    pos += 1;
                }
            }
        }
        assert_eq!(pos, got.len());
    }
    // Transposed operand (a view) gives the same result as its contiguous copy.
    let a = t(&rng.vec(12, 1.0), &[4, 3]);
    let b = t(&rng.vec(8, 1.0), &[4, 2]);
    let at = a.transpose(0, 1).unwrap();
    assert_eq!(
        at.matmul(&b).unwrap().to_vec_f32().unwrap(),
        at.contiguous()
            .unwrap()
            .matmul(&b)
            .unwrap()
            .to_vec_f32()
            .unwrap()
    );
}

#[test]
fn lstm_cell_matches_formula() {
    let (i, f, g, o, c) = (
        [0.5f32, -1.0],
        [2.0f32, 0.0],
        [0.3f32, -0.7],
        [1.0f32, -2.0],
        [0.1f32, 0.9],
    );
    let s = Tensor::lstm_cell(
        &t(&i, &[2]),
        &t(&f, &[2]),
        &t(&g, &[2]),
        &t(&o, &[2]),
        &t(&c, &[2]),
    )
    .unwrap();
    let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
    let cell: Vec<f32> = (0..2)
        .map(|k| sig(f[k]) * c[k] + sig(i[k]) * g[k].tanh())
        .collect();
    let hidden: Vec<f32> = (0..2).map(|k| sig(o[k]) * cell[k].tanh()).collect();
    assert_close(&s.cell.to_vec_f32().unwrap(), &cell, 1e-6);
    assert_close(&s.hidden.to_vec_f32().unwrap(), &hidden, 1e-6);
    let bad = t(&[0.0; 3], &[3]);
    assert_err(
        Tensor::lstm_cell(&t(&i, &[2]), &bad, &t(&g, &[2]), &t(&o, &[2]), &t(&c, &[2])),
        "ShapeMismatch",
    );
}

#[test]
fn conv1d_and_maxpool1d() {
    // 2 input channels, length 5; 1 output channel, kernel 2, stride 2.
    let x = t(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0],
        &[2, 5],
    );
    let w = t(&[1.0, -1.0, 0.5, 0.25], &[1, 2, 2]);
    let b = t(&[100.0], &[1]);
    let y = x.conv1d(&w, Some(&b), 2).unwrap();
    // t=0: 1-2 + 0.5*10+0.25*20 = 9 ; t=1: 3-4 + 15+10 = 24 (+100 bias)
    assert_eq!(
        (y.dims(), y.to_vec_f32().unwrap()),
        (&[1usize, 2][..], vec![109.0, 124.0])
    );
    assert_eq!(
        x.conv1d(&w, None, 1).unwrap().to_vec_f32().unwrap(),
        vec![9.0, 16.5, 24.0, 31.5]
    );
    let p = x.maxpool1d(2, 2).unwrap();
    assert_eq!(p.to_vec_f32().unwrap(), vec![2.0, 4.0, 20.0, 40.0]);
    assert_err(x.conv1d(&w, None, 0), "ShapeMismatch");
    assert_err(
        x.conv1d(&t(&[0.0; 6], &[1, 1, 6]), None, 1),
        "ShapeMismatch",
    );
    assert_err(x.maxpool1d(6, 1), "ShapeMismatch");
}

#[test]
fn gather_rows_concat_tessdata() {
    let table = t(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2]);
    let ids = Tensor::from_i32(vec![2, 0, 2], [3]).unwrap();
    let g = table.gather_rows(&ids).unwrap();
    assert_eq!(
        (g.dims(), g.to_vec_f32().unwrap()),
        (&[3usize, 2][..], vec![20.0, 21.0, 0.0, 1.0, 20.0, 21.0])
    );
    assert_err(
        table.gather_rows(&Tensor::from_i32(vec![3], [1]).unwrap()),
        "IndexOutOfRange",
    );
    assert_err(
        table.gather_rows(&Tensor::from_i32(vec![-1], [1]).unwrap()),
        "IndexOutOfRange",
    );
    assert_err(table.gather_rows(&t(&[0.0], &[1])), "DTypeMismatch");

    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = t(&[5.0, 6.0], &[2, 1]);
    let c = Tensor::concat(&[a.clone(), b.clone()], 1).unwrap();
    assert_eq!(
        (c.dims(), c.to_vec_f32().unwrap()),
        (&[2usize, 3][..], vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0])
    );
    let c0 = Tensor::concat(&[a.clone(), a.transpose(0, 1).unwrap()], 0).unwrap();
    assert_eq!(
        c0.to_vec_f32().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 1.0, 3.0, 2.0, 4.0]
    );
    let ci = Tensor::concat(
        &[
            Tensor::from_i32(vec![1], [1]).unwrap(),
            Tensor::from_i32(vec![2, 3], [2]).unwrap(),
        ],
        0,
    )
    .unwrap();
    assert_eq!(ci.to_vec_i32().unwrap(), vec![1, 2, 3]);
    assert_err(Tensor::concat(&[a.clone(), b.clone()], 0), "ShapeMismatch");
    assert_err(Tensor::concat(&[], 0), "InvalidArgument");
    assert_err(
        Tensor::concat(std::slice::from_ref(&a), 2),
        "AxisOutOfRange",
    );

    let d = Tensor::tessdata_int8_to_f32(&[1, -2, 127, 0], &[0.5, 2.0], 2, 2).unwrap();
    assert_eq!(d.to_vec_f32().unwrap(), vec![0.5, -1.0, 254.0, 0.0]);
    assert_err(
        Tensor::tessdata_int8_to_f32(&[1, 2, 3], &[1.0], 2, 2),
        "ShapeMismatch",
    );
}

#[test]
fn blocked_matmul_equals_triple_loop_beyond_one_tile() {
    // n > 256 and k > 64 cross the column and depth tiles; a strided rhs takes the scalar path.
    let mut rng = Rng::new(8);
    let (m, k, n) = (3, 150, 300);
    let (xa, xb) = (rng.vec(m * k, 1.0), rng.vec(k * n, 1.0));
    let got = t(&xa, &[m, k])
        .matmul(&t(&xb, &[k, n]))
        .unwrap()
        .to_vec_f32()
        .unwrap();
    let bt = t(&xb, &[k, n])
        .transpose(0, 1)
        .unwrap()
        .contiguous()
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let got_strided = t(&xa, &[m, k]).matmul(&bt).unwrap().to_vec_f32().unwrap();
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in 0..k {
                acc += xa[i * k + p] * xb[p * n + j];
            }
            assert_eq!(got[i * n + j], acc, "({i}, {j})");
            assert_eq!(got_strided[i * n + j], acc, "strided ({i}, {j})");
        }
    }
}

#[test]
fn fused_softmax_equals_the_three_op_definition() {
    let mut rng = Rng::new(12);
    let x = t(&rng.vec(4 * 37, 20.0), &[4, 37]);
    let fused = x.softmax(1).unwrap().to_vec_f32().unwrap();
    let e = x.sub(&x.max(1, true).unwrap()).unwrap().exp().unwrap();
    let three = e
        .div(&e.sum(1, true).unwrap())
        .unwrap()
        .to_vec_f32()
        .unwrap();
    assert!(fused
        .iter()
        .zip(&three)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // A transposed view takes the gathered-row path and must agree too.
    let xt = x
        .transpose(0, 1)
        .unwrap()
        .contiguous()
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    assert_eq!(xt.softmax(1).unwrap().to_vec_f32().unwrap(), fused);
}
