//! Every public op called with bad dtypes, shapes, axes and ids returns the matching error
//! variant instead of panicking.

mod common;

use common::assert_err;
use kopitiam_wasm::{DType, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

type Op = (
    &'static str,
    fn(&Tensor, &Tensor) -> kopitiam_wasm::Result<Tensor>,
);

fn ops() -> Vec<Op> {
    vec![
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("eq", |a, b| a.eq(b)),
        ("lt", |a, b| a.lt(b)),
        ("matmul", |a, b| a.matmul(b)),
        ("rms_norm", |a, b| a.rms_norm(b, 1e-6)),
        ("layer_norm", |a, b| a.layer_norm(b, b, 1e-6)),
        ("conv1d", |a, b| a.conv1d(b, None, 1)),
        ("exp", |a, _| a.exp()),
        ("silu", |a, _| a.silu()),
        ("gelu", |a, _| a.gelu()),
        ("tanh", |a, _| a.tanh()),
        ("sigmoid", |a, _| a.sigmoid()),
        ("softmax", |a, _| a.softmax(0)),
        ("sum", |a, _| a.sum(0, false)),
        ("max", |a, _| a.max(0, false)),
        ("argmax", |a, _| a.argmax(0, true)),
        ("maxpool1d", |a, _| a.maxpool1d(1, 1)),
        ("transpose", |a, _| a.transpose(0, 1)),
        ("narrow", |a, _| a.narrow(0, 0, 1)),
        ("reshape", |a, _| a.reshape([32])),
        ("to_vec", |a, _| a.to_vec_f32().map(|_| a.clone())),
    ]
}

#[test]
fn non_f32_inputs_are_dtype_errors() {
    let i = Tensor::from_i32(vec![1; 32], [1, 32]).unwrap();
    let h = Tensor::from_f16(vec![0; 32], [1, 32]).unwrap();
    let f = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    for (name, op) in ops() {
        for bad in [&i, &h] {
            let r = op(bad, &f);
            // Pure data movement (views) accepts every plain dtype.
            if ["transpose", "narrow", "reshape"].contains(&name) {
                assert!(r.is_ok(), "{name}");
            } else {
                assert_err(r, "DTypeMismatch");
            }
        }
    }
}

#[test]
fn quantized_inputs_are_element_access_errors() {
    let q = Tensor::from_quantized(DType::Q8_0, vec![0; 34], [1, 32]).unwrap();
    let f = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    for (name, op) in ops() {
        let r = op(&q, &f);
        assert!(
            matches!(r, Err(ref e) if e.code() == "QuantizedElementAccess"),
            "{name}: {r:?}"
        );
    }
    // And as the second operand of binary ops.
    assert_err(f.add(&q), "QuantizedElementAccess");
    assert_err(f.matmul(&q), "QuantizedElementAccess");
    assert_err(
        Tensor::concat(&[q.clone(), q.clone()], 0),
        "QuantizedElementAccess",
    );
}

#[test]
fn bad_shapes_and_axes() {
    let a = Tensor::from_f32(vec![1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_f32(vec![1.0; 4], [2, 2]).unwrap();
    let v = Tensor::from_f32(vec![1.0; 3], [3]).unwrap();
    assert_err(a.add(&b), "NotBroadcastable");
    assert_err(a.matmul(&a), "ShapeMismatch");
    assert_err(a.matmul(&v), "ShapeMismatch");
    let batch_a = Tensor::from_f32(vec![1.0; 12], [2, 2, 3]).unwrap();
    let batch_b = Tensor::from_f32(vec![1.0; 27], [3, 3, 3]).unwrap();
    assert_err(batch_a.matmul(&batch_b), "NotBroadcastable");
    for axis in [2, 99] {
        assert_err(a.sum(axis, false), "AxisOutOfRange");
        assert_err(a.max(axis, true), "AxisOutOfRange");
        assert_err(a.argmax(axis, false), "AxisOutOfRange");
        assert_err(a.softmax(axis), "AxisOutOfRange");
    }
    assert_err(a.layer_norm(&v, &b, 1e-5), "ShapeMismatch");
    assert_err(v.conv1d(&a, None, 1), "ShapeMismatch");
    assert_err(v.maxpool1d(1, 1), "ShapeMismatch");
    assert_err(a.maxpool1d(0, 1), "ShapeMismatch");
    assert_err(
        a.gather_rows(&Tensor::from_i32(vec![2], [1]).unwrap()),
        "IndexOutOfRange",
    );
    assert_err(
        v.gather_rows(&Tensor::from_i32(vec![0], [1]).unwrap()),
        "ShapeMismatch",
    );
    assert_err(
        a.gather_rows(&Tensor::from_i32(vec![i32::MIN], [1]).unwrap()),
        "IndexOutOfRange",
    );
}

#[test]
fn errors_have_helpful_messages() {
    let a = Tensor::from_f32(vec![1.0; 6], [2, 3]).unwrap();
    let e = a.matmul(&a).unwrap_err();
    assert!(e.to_string().contains("[2, 3] @ [2, 3]"), "{e}");
    let e = a.narrow(1, 2, 5).unwrap_err();
    assert!(e.to_string().contains("size 3"), "{e}");
}
