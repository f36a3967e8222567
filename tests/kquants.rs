//! Q4_1, Q5_0, Q5_1 and the K formats (Q4_K, Q5_K, Q6_K, Q8_K): dequantization of hand-built
//! blocks checked against values worked out by hand from the bit layouts, the Q8_K reference
//! quantizer, and the fused quantized matmul against dequantize + reference matmul.

mod common;

use common::{assert_err, Rng};
use half::f16;
use kopitiam_wasm::quant::{
    dequantize_row_q4_1, dequantize_row_q4_k, dequantize_row_q5_0, dequantize_row_q5_1,
    dequantize_row_q5_k, dequantize_row_q6_k, dequantize_row_q8_k, quantize_row_q8_0,
    quantize_row_q8_k, vec_dot_q4_k_q8_k, vec_dot_q5_0_q8_0, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k,
};
use kopitiam_wasm::{DType, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_bits().to_le_bytes()
}

/// Dequantizes `bytes` through the public tensor path (`from_quantized` + `to_dtype`).
fn dequant(dtype: DType, bytes: Vec<u8>, dims: [usize; 2]) -> Vec<f32> {
    Tensor::from_quantized(dtype, bytes, dims)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec_f32()
        .unwrap()
}

#[test]
fn q4_1_block_dequantizes_per_layout() {
    // d = 0.5, m = -1; byte j: element j (low nibble), element j + 16 (high nibble).
    let mut block = f16_bytes(0.5).to_vec();
    block.extend(f16_bytes(-1.0));
    block.extend([0x88; 16]); // q = 8 -> 8*0.5 - 1 = 3
    block[4] = 0xF0; // element 0: q = 0 -> -1;  element 16: q = 15 -> 6.5
    block[4 + 9] = 0x3C; // element 9: q = 12 -> 5; element 25: q = 3 -> 0.5
    let got = dequant(DType::Q4_1, block, [1, 32]);
    let mut want = vec![3.0f32; 32];
    want[0] = -1.0;
    want[16] = 6.5;
    want[9] = 5.0;
    want[25] = 0.5;
    assert_eq!(got, want);
}

/// `qh` = 0x8005_0003: bits 0, 1, 16, 18, 31. Element j < 16 takes bit j, element j + 16 takes
/// bit j + 16, so elements 0, 1, 16, 18, 31 get +16 and elements 2 and 17 do not.
const QH: [u8; 4] = [0x03, 0x00, 0x05, 0x80];

/// 16 nibble bytes: default 0x88 (q = 8 in both halves) plus four hand-picked bytes.
fn q5_nibbles() -> [u8; 16] {
    let mut qs = [0x88; 16];
    qs[0] = 0x2F; // e0: 15 | 16 = 31;  e16: 2 | 16 = 18
    qs[1] = 0x00; // e1:  0 | 16 = 16;  e17: 0
    qs[2] = 0x77; // e2:  7;            e18: 7 | 16 = 23
    qs[15] = 0xA5; // e15: 5;           e31: 10 | 16 = 26
    qs
}

#[test]
fn q5_0_block_dequantizes_per_layout() {
    // d = 0.5, x = (q - 16) * 0.5.
    let mut block = f16_bytes(0.5).to_vec();
    block.extend(QH);
    block.extend(q5_nibbles());
    let got = dequant(DType::Q5_0, block, [1, 32]);
    let mut want = vec![-4.0f32; 32]; // q = 8
    for (e, v) in [
        (0, 7.5),   // 31
        (16, 1.0),  // 18
        (1, 0.0),   // 16
        (17, -8.0), // 0
        (2, -4.5),  // 7
        (18, 3.5),  // 23
        (15, -5.5), // 5
        (31, 5.0),  // 26
    ] {
        want[e] = v;
    }
    assert_eq!(got, want);
}

#[test]
fn q5_1_block_dequantizes_per_layout() {
    // d = 0.25, m = 1.5, x = q * 0.25 + 1.5; same qh / nibbles as the Q5_0 test.
    let mut block = f16_bytes(0.25).to_vec();
    block.extend(f16_bytes(1.5));
    block.extend(QH);
    block.extend(q5_nibbles());
    let got = dequant(DType::Q5_1, block, [1, 32]);
    let mut want = vec![3.5f32; 32]; // q = 8
    for (e, v) in [
        (0, 9.25),  // 31
        (16, 6.0),  // 18
        (1, 5.5),   // 16
        (17, 1.5),  // 0
        (2, 3.25),  // 7
        (18, 7.25), // 23
        (15, 2.75), // 5
        (31, 8.0),  // 26
    ] {
        want[e] = v;
    }
    assert_eq!(got, want);
}

/// Packed scales/mins with the top two bits of bytes 0..8 set in a pattern, so sub-blocks 4..8
/// depend on them:
/// - j < 4: sc = scales[j] & 63 = 1, 2, 3, 4;  m = scales[j + 4] & 63 = 5, 6, 7, 8.
/// - j = 4: sc = (0x21 & 15) | (0xC1 >> 6) << 4 = 1 | 48 = 49;  m = (0x21 >> 4) | (0xC5 >> 6) << 4 = 2 | 48 = 50.
/// - j = 5: sc = 3 | (0x42 >> 6) << 4 = 19;  m = 4 | (0x06 >> 6) << 4 = 4.
/// - j = 6: sc = 5 | (0x03 >> 6) << 4 = 5;   m = 6 | (0x47 >> 6) << 4 = 22.
/// - j = 7: sc = 7 | (0x84 >> 6) << 4 = 39;  m = 8 | (0x88 >> 6) << 4 = 40.
const K_SCALES: [u8; 12] = [
    0xC1, 0x42, 0x03, 0x84, 0xC5, 0x06, 0x47, 0x88, 0x21, 0x43, 0x65, 0x87,
];

/// `qs` for the Q4_K/Q5_K tests: every byte 0x31 (sub-blocks 2c get q = 1, 2c + 1 get q = 3),
/// except qs[69] = 0xF0 (chunk 2, l = 5: element 133 q = 0, element 165 q = 15) and
/// qs[127] = 0x0F (chunk 3, l = 31: element 223 q = 15, element 255 q = 0).
fn k_qs() -> [u8; 128] {
    let mut qs = [0x31; 128];
    qs[69] = 0xF0;
    qs[127] = 0x0F;
    qs
}

fn k_header(d: f32, dmin: f32) -> Vec<u8> {
    let mut b = f16_bytes(d).to_vec();
    b.extend(f16_bytes(dmin));
    b.extend(K_SCALES);
    b
}

/// x = d·sc·q − dmin·m with d = 0.5, dmin = 0.25, q = 1 (even sub-blocks) or 3 (odd):
/// 0.5·1 − 1.25, 1.5·2 − 1.5, 0.5·3 − 1.75, 1.5·4 − 2, 0.5·49 − 12.5, 1.5·19 − 1, 0.5·5 − 5.5,
/// 1.5·39 − 10.
const K_DEFAULTS: [f32; 8] = [-0.75, 1.5, -0.25, 4.0, 12.0, 27.5, -3.0, 48.5];

#[test]
fn q4_k_block_dequantizes_per_layout() {
    let mut block = k_header(0.5, 0.25);
    block.extend(k_qs());
    assert_eq!(block.len(), 144);
    let got = dequant(DType::Q4_K, block, [1, 256]);
    let mut want: Vec<f32> = (0..256).map(|e| K_DEFAULTS[e / 32]).collect();
    want[133] = -12.5; // sub-block 4, q = 0: -0.25·50
    want[165] = 141.5; // sub-block 5, q = 15: 0.5·19·15 - 0.25·4
    want[223] = 32.0; // sub-block 6, q = 15: 0.5·5·15 - 0.25·22
    want[255] = -10.0; // sub-block 7, q = 0: -0.25·40
    assert_eq!(got, want);
}

#[test]
fn q5_k_block_dequantizes_per_layout() {
    // Element 64c + l takes bit 2c of qh[l], element 64c + 32 + l takes bit 2c + 1.
    let mut qh = [0u8; 32];
    qh[0] = 0b0000_0101; // bit 0: element 0; bit 2: element 64
    qh[5] = 0b1000_0010; // bit 1: element 37; bit 7: element 229
    qh[31] = 0b0100_0000; // bit 6: element 223
    let mut block = k_header(0.5, 0.25);
    block.extend(qh);
    block.extend(k_qs());
    assert_eq!(block.len(), 176);
    let got = dequant(DType::Q5_K, block, [1, 256]);
    let mut want: Vec<f32> = (0..256).map(|e| K_DEFAULTS[e / 32]).collect();
    want[0] = 7.25; // sub-block 0, q = 1 + 16: 0.5·1·17 - 1.25
    want[64] = 23.75; // sub-block 2, q = 17: 0.5·3·17 - 1.75
    want[37] = 17.5; // sub-block 1, q = 3 + 16: 0.5·2·19 - 1.5
    want[229] = 360.5; // sub-block 7, q = 19: 0.5·39·19 - 10
    want[223] = 72.0; // sub-block 6, q = 15 + 16: 0.5·5·31 - 5.5
    want[255] = -10.0; // q = 0, bit 7 of qh[31] clear
    want[133] = -12.5; // q = 0, bit 4 of qh[5] clear
    want[165] = 141.5; // q = 15, bit 5 of qh[5] clear
    assert_eq!(got, want);
}

#[test]
fn q6_k_block_dequantizes_per_layout() {
    // Group g of 16 elements uses scales[g]; x = d·sc·(q − 32), d = 0.25.
    let scales: [i8; 16] = [
        1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 127, -128,
    ];
    let mut ql = [0u8; 128];
    // Every 2-bit qh field = 2, so untouched elements have q = 0 | 2 << 4 = 32 -> x = 0.
    let mut qh = [0b1010_1010u8; 64];
    // Half 0, l = 0. qh fields (bits 0-1, 2-3, 4-5, 6-7) = 2, 0, 1, 3.
    ql[0] = 0x5A;
    ql[32] = 0xC3;
    qh[0] = 0xD2;
    // Half 0, l = 17 (second group of each quarter). Fields 0, 1, 3, 0.
    ql[17] = 0x0F;
    ql[49] = 0xF0;
    qh[17] = 0x34;
    // Half 1, l = 0: ql[64], ql[96], qh[32]. Fields 3, 3, 3, 3.
    ql[64] = 0x0F;
    ql[96] = 0x00;
    qh[32] = 0xFF;
    // Half 1, l = 31: ql[95], ql[127], qh[63]. Fields 3, 2, 1, 0.
    ql[95] = 0x21;
    ql[127] = 0x43;
    qh[63] = 0x1B;
    let mut block = ql.to_vec();
    block.extend(qh);
    block.extend(scales.map(|s| s as u8));
    block.extend(f16_bytes(0.25));
    assert_eq!(block.len(), 210);
    let got = dequant(DType::Q6_K, block, [1, 256]);
    let mut want = vec![0.0f32; 256];
    for (e, v) in [
        (0, 2.5),     // lo(ql[0]) 10 | 2<<4 = 42 -> 10;  group 0, sc 1
        (32, -21.75), // lo(ql[32]) 3 | 0 = 3 -> -29;     group 2, sc 3
        (64, -13.75), // hi(ql[0]) 5 | 1<<4 = 21 -> -11;  group 4, sc 5
        (96, 49.0),   // hi(ql[32]) 12 | 3<<4 = 60 -> 28; group 6, sc 7
        (17, 8.5),    // 15 | 0 -> -17;   group 1, sc -2
        (49, 16.0),   // 0 | 16 -> -16;   group 3, sc -4
        (81, -24.0),  // 0 | 48 -> 16;    group 5, sc -6
        (113, 34.0),  // 15 | 0 -> -17;   group 7, sc -8
        (128, 69.75), // 15 | 48 -> 31;   group 8, sc 9
        (160, 44.0),  // 0 | 48 -> 16;    group 10, sc 11
        (192, 52.0),  // 0 | 48 -> 16;    group 12, sc 13
        (224, 508.0), // 0 | 48 -> 16;    group 14, sc 127
        (159, -42.5), // 1 | 48 -> 17;    group 9, sc -10
        (191, -9.0),  // 3 | 32 -> 3;     group 11, sc -12
        (223, 49.0),  // 2 | 16 -> -14;   group 13, sc -14
        (255, 896.0), // 4 | 0 -> -28;    group 15, sc -128
    ] {
        want[e] = v;
    }
    assert_eq!(got, want);
}

#[test]
fn q8_k_block_dequantizes_per_layout() {
    // d = -0.125 (f32), qs[e] = e as i8: 0..=127 then -128..=-1; bsums are not read.
    let mut block = (-0.125f32).to_le_bytes().to_vec();
    block.extend((0..=255u8).collect::<Vec<_>>());
    block.extend([0xAB; 32]);
    let got = dequant(DType::Q8_K, block, [1, 256]);
    assert_eq!(got[0], 0.0);
    assert_eq!(got[1], -0.125);
    assert_eq!(got[127], -15.875);
    assert_eq!(got[128], 16.0);
    assert_eq!(got[255], 0.125);
}

fn bsum(block: &[u8], g: usize) -> i16 {
    i16::from_le_bytes([block[260 + 2 * g], block[261 + 2 * g]])
}

#[test]
fn quantize_row_q8_k_on_hand_computed_blocks() {
    let mut x = vec![0.0f32; 3 * 256];
    // Block 0: max = -254 (first of two elements with |x| = 254) -> iscale = -127/-254 = 0.5,
    // d = 1/iscale = 2; q = nearest_int(x/2), halves to even.
    x[0] = -254.0; // -127
    x[1] = 5.0; // 2.5 -> 2 (away from zero would give 3)
    x[2] = 7.0; // 3.5 -> 4
    x[3] = -3.0; // -1.5 -> -2
    x[4] = 1.0; // 0.5 -> 0
    x[5] = 254.0; // 127 (not chosen as max: ties keep the first)
    x[6] = 100.2; // 50.1 -> 50
    x[16] = 20.0; // 10
    x[17] = -9.0; // -4.5 -> -4
    x[255] = 3.0; // 1.5 -> 2
                  // Block 1: all zero. Block 2: max = +3 -> iscale = -127/3 < 0, so d < 0 and q(3) = -127.
    x[512] = 3.0;
    x[513] = -1.0; // 42.33 -> 42
    let mut out = vec![0xAAu8; 3 * 292];
    quantize_row_q8_k(&x, &mut out);

    let b0 = &out[..292];
    assert_eq!(&b0[..4], &2.0f32.to_le_bytes());
    let q0: Vec<i8> = b0[4..260].iter().map(|&b| b as i8).collect();
    assert_eq!(&q0[..7], &[-127, 2, 4, -2, 0, 127, 50]);
    assert_eq!(&q0[16..18], &[10, -4]);
    assert_eq!(q0[255], 2);
    assert_eq!(q0.iter().filter(|&&q| q != 0).count(), 9);
    // bsums: group 0 = -127 + 2 + 4 - 2 + 0 + 127 + 50 = 54; group 1 = 10 - 4; group 15 = 2.
    let sums: Vec<i16> = (0..16).map(|g| bsum(b0, g)).collect();
    let mut want = [0i16; 16];
    want[0] = 54;
    want[1] = 6;
    want[15] = 2;
    assert_eq!(sums, want);

    // All-zero block: d = 0, qs = 0, bsums = 0 (the 0xAA fill is overwritten).
    assert!(out[292..584].iter().all(|&b| b == 0));

    let b2 = &out[584..];
    let d = f32::from_le_bytes([b2[0], b2[1], b2[2], b2[3]]);
    assert_eq!(d, 1.0 / (-127.0f32 / 3.0), "d = 1/iscale, in f32");
    assert!((d + 3.0 / 127.0).abs() < 1e-8);
    assert_eq!((b2[4] as i8, b2[5] as i8), (-127, 42));
    assert_eq!(bsum(b2, 0), -85);
}

/// Random weight blocks: random quant/scale bytes, with every f16 `d` (and `dmin`) field set to
/// a magnitude in [0.01, 0.1] (`d` of the symmetric formats with a random sign).
fn random_weights(rng: &mut Rng, dtype: DType, rows: usize, cols: usize) -> Vec<u8> {
    let n = dtype.storage_bytes(rows * cols).unwrap();
    let mut bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
    for block in bytes.chunks_exact_mut(dtype.block_bytes()) {
        let mut scale = |signed: bool| {
            let v = 0.055 + 0.045 * rng.f32();
            let s = if signed && rng.below(2) == 0 { -v } else { v };
            f16_bytes(s)
        };
        match dtype {
            DType::Q5_0 => block[..2].copy_from_slice(&scale(true)),
            DType::Q4_K | DType::Q5_K => {
                block[..2].copy_from_slice(&scale(false));
                block[2..4].copy_from_slice(&scale(false));
            }
            DType::Q6_K => block[208..].copy_from_slice(&scale(true)),
            _ => unreachable!(),
        }
    }
    bytes
}

/// Per-element magnitudes the f32 rounding of a weight is relative to.
///
/// Q4_K/Q5_K weights are `d·sc·q − dmin·m`, a difference that may cancel, so their rounding is
/// relative to `|d·sc·q| + |dmin·m|`: the dequantization of the same bytes with `dmin` zeroed
/// plus that with `d` zeroed. The other formats are a single product, relative to `|w|`.
fn magnitudes(dtype: DType, bytes: &[u8], rows: usize, cols: usize) -> Vec<f32> {
    let deq = |zero: std::ops::Range<usize>| {
        let mut b = bytes.to_vec();
        for block in b.chunks_exact_mut(dtype.block_bytes()) {
            block[zero.clone()].fill(0);
        }
        dequant(dtype, b, [rows, cols])
    };
    match dtype {
        DType::Q4_K | DType::Q5_K => deq(2..4)
            .iter()
            .zip(deq(0..2))
            .map(|(a, b)| a.abs() + b.abs())
            .collect(),
        _ => deq(0..0).iter().map(|v| v.abs()).collect(),
    }
}

/// Relative f32 rounding allowed per unit of `Σ mag·|x|` for a length-`n` dot product.
///
/// The reference rounds each dequantized weight (at most 3 roundings of its magnitude), each
/// product, and n − 1 additions in whatever order `matmul` uses; the fused dot rounds the
/// integer sum, two scale products and, per (super-)block, one or two additions. Together that
/// is below `(n + 2·n_blocks + 8)·2^-24`, and `2·(n + 16)·2^-24` covers it.
fn rounding_coefficient(n: usize) -> f64 {
    2.0 * (n + 16) as f64 * (2.0f64).powi(-24)
}

/// The bound on |fused − reference(f32 x)| that activation quantization alone allows.
///
/// Per activation block `b` with `d_b = amax_b / 127`:
/// - **Q8_K**: `d = 1/iscale = −max/127` is stored as f32 (no f16 rounding) and
///   `q = nearest_int(iscale·x)`, so `|x − q·d| ≤ d/2` up to a few f32 roundings of
///   `iscale`, `iscale·x` and `1/iscale` (relative ~2^-23 of 127·d), i.e. `≤ (0.5 + 1e-4)·d`.
/// - **Q8_0**: `d` is stored as f16 (relative error ≤ 2^-11), so `|x − q·d'| ≤ d/2 + 127·2^-11·d`.
///
/// Both paths see the same weight values `w`, so `|Σ w·(x̂ − x)| ≤ Σ_b coef·d_b·Σ_{e∈b} |w_e|`.
/// Rounding adds [`rounding_coefficient`] of `Σ mag_e·(|x_e| + d_b)` (`|x̂_e| ≤ |x_e| + d_b`).
fn activation_error_bound(act: DType, x: &[f32], w: &[f32], mag: &[f32]) -> f32 {
    let coef = match act {
        DType::Q8_K => 0.5 + 1e-4,
        _ => 0.5 + 127.0 / 2048.0 + 1e-4,
    };
    let block = act.block_elems();
    let (mut quant, mut round) = (0.0f64, 0.0f64);
    for ((xb, wb), mb) in x.chunks(block).zip(w.chunks(block)).zip(mag.chunks(block)) {
        let d = xb.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64 / 127.0;
        quant += coef * d * wb.iter().map(|v| v.abs() as f64).sum::<f64>();
        round += xb
            .iter()
            .zip(mb)
            .map(|(a, m)| *m as f64 * (a.abs() as f64 + d))
            .sum::<f64>();
    }
    (quant + rounding_coefficient(x.len()) * round + 1e-30) as f32
}

/// Checks `x.quantized_matmul(w)` against two references built from the dequantized weight:
/// - with the f32 activations `x`, within [`activation_error_bound`];
/// - with the dequantized quantized activations `x̂`, within f32 rounding only. This one pins the
///   fused kernel to the dequantizer: any disagreement in bits or scales shows up.
fn check_fused(rng: &mut Rng, dtype: DType, rows: usize, in_f: usize, out_f: usize) {
    let act = if dtype == DType::Q5_0 {
        DType::Q8_0
    } else {
        DType::Q8_K
    };
    let wbytes = random_weights(rng, dtype, out_f, in_f);
    let mag = magnitudes(dtype, &wbytes, out_f, in_f);
    let wq = Tensor::from_quantized(dtype, wbytes, [out_f, in_f]).unwrap();
    let wf = wq.to_dtype(DType::F32).unwrap();
    let wt = wf.transpose(0, 1).unwrap();
    let wvals = wf.to_vec_f32().unwrap();

    let mut x = rng.vec(rows * in_f, 3.0);
    x[..act.block_elems()].iter_mut().for_each(|v| *v *= 1e-3); // a small first block
    x[(rows - 1) * in_f..].fill(0.0); // last row all zero
    let xt = Tensor::from_f32(x.clone(), [rows, in_f]).unwrap();
    let fused = xt.quantized_matmul(&wq).unwrap();
    assert_eq!(fused.dims(), &[rows, out_f]);
    let got = fused.to_vec_f32().unwrap();

    let mut xq = vec![0u8; act.storage_bytes(rows * in_f).unwrap()];
    match act {
        DType::Q8_0 => quantize_row_q8_0(&x, &mut xq),
        _ => quantize_row_q8_k(&x, &mut xq),
    }
    let xhat = dequant(act, xq, [rows, in_f]);
    let reference = xt.matmul(&wt).unwrap().to_vec_f32().unwrap();
    let reference_hat = Tensor::from_f32(xhat.clone(), [rows, in_f])
        .unwrap()
        .matmul(&wt)
        .unwrap()
        .to_vec_f32()
        .unwrap();

    for (i, ((g, r), rh)) in got.iter().zip(&reference).zip(&reference_hat).enumerate() {
        let (row, o) = (i / out_f, i % out_f);
        let (xr, xhr) = (
            &x[row * in_f..(row + 1) * in_f],
            &xhat[row * in_f..(row + 1) * in_f],
        );
        let (wr, mr) = (
            &wvals[o * in_f..(o + 1) * in_f],
            &mag[o * in_f..(o + 1) * in_f],
        );
        let bound = activation_error_bound(act, xr, wr, mr);
        assert!(
            (g - r).abs() <= bound,
            "{dtype} out {i}: fused {g}, reference {r}, bound {bound}"
        );
        let tight = rounding_coefficient(in_f)
            * xhr
                .iter()
                .zip(mr)
                .map(|(a, m)| (a.abs() * m) as f64)
                .sum::<f64>();
        assert!(
            (g - rh).abs() as f64 <= tight + 1e-30,
            "{dtype} out {i}: fused {g}, dequantized-activation reference {rh}, bound {tight}"
        );
        if row == rows - 1 {
            assert_eq!(*g, 0.0, "zero activations give exact zeros");
        }
    }
}

#[test]
fn quantized_matmul_agrees_with_dequantize_then_matmul_random() {
    let mut rng = Rng::new(29);
    for (in_f, out_f) in [(64, 7), (96, 5)] {
        check_fused(&mut rng, DType::Q5_0, 3, in_f, out_f);
    }
    for dtype in [DType::Q4_K, DType::Q5_K, DType::Q6_K] {
        for (in_f, out_f) in [(256, 9), (512, 6)] {
            check_fused(&mut rng, dtype, 3, in_f, out_f);
        }
    }
}

#[test]
fn gather_rows_dequantizes_new_formats() {
    let mut rng = Rng::new(3);
    for dtype in [
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
    ] {
        let hidden = 256;
        let bytes: Vec<u8> = (0..dtype.storage_bytes(4 * hidden).unwrap())
            .map(|_| rng.next_u64() as u8)
            .collect();
        let table = Tensor::from_quantized(dtype, bytes, [4, hidden]).unwrap();
        let all = table.to_dtype(DType::F32).unwrap().to_vec_f32().unwrap();
        let ids = Tensor::from_i32(vec![2, 0, 2], [3]).unwrap();
        let got = table.gather_rows(&ids).unwrap().to_vec_f32().unwrap();
        let mut want = all[2 * hidden..3 * hidden].to_vec();
        want.extend(&all[..hidden]);
        want.extend(&all[2 * hidden..3 * hidden]);
        // Random f16 bytes may be NaN: compare bits.
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{dtype}");
    }
}

#[test]
fn row_kernels_ignore_partial_blocks() {
    // Trailing bytes or outputs beyond the last whole block pair are left alone, never a panic.
    let mut rng = Rng::new(5);
    let bytes: Vec<u8> = (0..2 * 292).map(|_| rng.next_u64() as u8).collect();
    type Dequantize = fn(&[u8], &mut [f32]);
    let deqs: [(DType, Dequantize); 7] = [
        (DType::Q4_1, dequantize_row_q4_1),
        (DType::Q5_0, dequantize_row_q5_0),
        (DType::Q5_1, dequantize_row_q5_1),
        (DType::Q4_K, dequantize_row_q4_k),
        (DType::Q5_K, dequantize_row_q5_k),
        (DType::Q6_K, dequantize_row_q6_k),
        (DType::Q8_K, dequantize_row_q8_k),
    ];
    for (dtype, f) in deqs {
        let (bb, be) = (dtype.block_bytes(), dtype.block_elems());
        let mut out = vec![7.0f32; be + 3];
        f(&bytes[..bb + 5], &mut out);
        assert_eq!(&out[be..], &[7.0; 3], "{dtype}");
        let mut short = vec![7.0f32; be - 1];
        f(&bytes[..bb], &mut short);
        assert!(short.iter().all(|&v| v == 7.0), "{dtype}");
    }

    let x = rng.vec(256, 1.0);
    let mut q8k = vec![0u8; 292];
    quantize_row_q8_k(&x, &mut q8k);
    let mut tiny = [0u8; 10];
    quantize_row_q8_k(&x, &mut tiny);
    assert_eq!(tiny, [0; 10]);
    let mut again = q8k.clone();
    quantize_row_q8_k(&x[..100], &mut again);
    assert_eq!(again, q8k);
    let mut q80 = vec![0u8; 34];
    quantize_row_q8_0(&x[..32], &mut q80);
    type Dot = fn(&[u8], &[u8]) -> f32;
    for (dtype, dot, xq) in [
        (DType::Q4_K, vec_dot_q4_k_q8_k as Dot, &q8k),
        (DType::Q5_K, vec_dot_q5_k_q8_k, &q8k),
        (DType::Q6_K, vec_dot_q6_k_q8_k, &q8k),
        (DType::Q5_0, vec_dot_q5_0_q8_0, &q80),
    ] {
        let mut w = random_weights(&mut rng, dtype, 1, dtype.block_elems());
        let one = dot(&w, xq);
        w.extend([0x55; 17]);
        assert_eq!(dot(&w, xq).to_bits(), one.to_bits(), "{dtype}");
        assert_eq!(dot(&w[..w.len() / 2], xq), 0.0, "{dtype}");
    }
}

#[test]
fn k_format_errors() {
    assert_err(
        Tensor::from_quantized(DType::Q4_K, vec![0; 144], [1, 128]),
        "PartialQuantizedBlock",
    );
    assert_err(
        Tensor::from_quantized(DType::Q6_K, vec![0; 210 * 2], [1, 288]),
        "PartialQuantizedBlock",
    );
    let x = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    let q4_1 = Tensor::from_quantized(DType::Q4_1, vec![0; 20], [1, 32]).unwrap();
    assert_err(x.quantized_matmul(&q4_1), "UnsupportedDType");
    let q5_1 = Tensor::from_quantized(DType::Q5_1, vec![0; 24], [1, 32]).unwrap();
    assert_err(x.quantized_matmul(&q5_1), "UnsupportedDType");
    // K weights need a whole number of 256-element activation blocks.
    let q4k = Tensor::from_quantized(DType::Q4_K, vec![0; 144], [1, 256]).unwrap();
    assert_err(x.quantized_matmul(&q4k), "ShapeMismatch");
}
