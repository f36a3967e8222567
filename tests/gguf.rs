//! GGUF v3 reader and writer: the real tiny-gemma3 fixture, writer round trips, every kind of
//! malformed input (each must be a clean `InvalidGguf` with a sensible offset, never a panic or a
//! huge allocation), and a seeded mutation fuzz.

mod common;

use common::{assert_err, Rng};
use kopitiam_wasm::gguf::{
    Array, GgufFile, GgufWriter, StrArray, TensorInfo, Value, DEFAULT_ALIGNMENT, GGUF_MAGIC,
};
use kopitiam_wasm::{DType, Error};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const FIXTURE: &[u8] = include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");

/// Unwraps an `InvalidGguf` error into (offset, reason), failing on anything else.
#[track_caller]
fn invalid<T: std::fmt::Debug>(r: kopitiam_wasm::Result<T>) -> (u64, String) {
    match r {
        Err(Error::InvalidGguf { offset, reason }) => (offset, reason),
        other => panic!("expected InvalidGguf, got {other:?}"),
    }
}

/// Asserts an `InvalidGguf` at `offset` whose reason contains `needle`.
#[track_caller]
fn assert_invalid_at<T: std::fmt::Debug>(r: kopitiam_wasm::Result<T>, offset: u64, needle: &str) {
    let (off, reason) = invalid(r);
    assert_eq!(off, offset, "offset (reason: {reason})");
    assert!(
        reason.contains(needle),
        "reason {reason:?} does not mention {needle:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// A byte builder for hand-made (mostly malformed) files
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct B(Vec<u8>);

impl B {
    /// Magic, version 3, the two counts.
    fn header(n_tensors: u64, n_kv: u64) -> B {
        let mut b = B::default();
        b.raw(&GGUF_MAGIC).u32(3).u64(n_tensors).u64(n_kv);
        b
    }
    fn raw(&mut self, x: &[u8]) -> &mut Self {
        self.0.extend_from_slice(x);
        self
    }
    fn u8(&mut self, x: u8) -> &mut Self {
        self.raw(&[x])
    }
    fn u32(&mut self, x: u32) -> &mut Self {
        self.raw(&x.to_le_bytes())
    }
    fn i32(&mut self, x: i32) -> &mut Self {
        self.raw(&x.to_le_bytes())
    }
    fn u64(&mut self, x: u64) -> &mut Self {
        self.raw(&x.to_le_bytes())
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).raw(s.as_bytes())
    }
    /// key + type id (the caller appends the value).
    fn kv(&mut self, key: &str, ty: i32) -> &mut Self {
        self.str(key).i32(ty)
    }
    fn tensor_info(&mut self, name: &str, ne: &[u64], ty: i32, offset: u64) -> &mut Self {
        self.str(name).u32(ne.len() as u32);
        for &d in ne {
            self.u64(d);
        }
        self.i32(ty).u64(offset)
    }
    fn pad(&mut self, align: usize) -> &mut Self {
        while self.0.len() % align != 0 {
            self.0.push(0);
        }
        self
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

/// A file with no metadata and the given tensor infos, padded to 32, plus `data_len` data bytes.
fn tensor_file(infos: &[(&str, &[u64], i32, u64)], data_len: usize) -> Vec<u8> {
    let mut b = B::header(infos.len() as u64, 0);
    for &(name, ne, ty, off) in infos {
        b.tensor_info(name, ne, ty, off);
    }
    b.pad(32);
    b.0.resize(b.0.len() + data_len, 0x5a);
    b.0
}

fn rand_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

// ---------------------------------------------------------------------------------------------
// The real fixture
// ---------------------------------------------------------------------------------------------

// Expected values come from shared/README.md's description of the fixture (gemma3 architecture,
// 6 layers, hidden 64, FFN 128, 2 query heads sharing 1 KV head, head size 32, 512-token vocab,
// all matrices Q4_0, norms F32, layer 5 global with sliding window 4) and from the layout rules
// of shared/spec/gemma3-gguf.md §1 (ne[0] innermost, so token_embd is ne=[64, 512] = row-major
// [512, 64]; Q4_0 = 18 bytes per 32 elements). They were cross-checked against an independent
// throwaway Python `struct` dump of the file's header (26 KVs, 80 tensor infos, infos ending at
// byte 16217, data at 16224, last tensor ending exactly at the file's 167008 bytes).
#[test]
fn fixture_header_and_metadata() {
    let f = GgufFile::parse(FIXTURE).unwrap();
    assert_eq!(f.version, 3);
    assert_eq!(f.alignment, DEFAULT_ALIGNMENT);
    assert_eq!(f.data_offset, 16224);
    assert_eq!(f.data_offset % 32, 0);
    assert_eq!(f.metadata.len(), 26);
    assert_eq!(f.metadata[0].0, "general.architecture");
    assert_eq!(f.architecture().unwrap(), "gemma3");
    assert_eq!(f.get_str("general.name").unwrap(), "tiny-gemma3-test");
    assert_eq!(f.get_u32("gemma3.block_count").unwrap(), 6);
    assert_eq!(f.get_u32("gemma3.embedding_length").unwrap(), 64);
    assert_eq!(f.get_u32("gemma3.feed_forward_length").unwrap(), 128);
    assert_eq!(f.get_u32("gemma3.attention.head_count").unwrap(), 2);
    assert_eq!(f.get_u32("gemma3.attention.head_count_kv").unwrap(), 1);
    assert_eq!(f.get_u32("gemma3.attention.key_length").unwrap(), 32);
    assert_eq!(f.get_u32("gemma3.attention.value_length").unwrap(), 32);
    assert_eq!(f.get_u32("gemma3.attention.sliding_window").unwrap(), 4);
    assert_eq!(f.get_f32("gemma3.rope.freq_base").unwrap(), 1e6);
    assert_eq!(
        f.get_f32("gemma3.attention.layer_norm_rms_epsilon")
            .unwrap(),
        1e-6
    );
    // llama_ftype MOSTLY_Q4_0 = 2 (spec §1.7).
    assert_eq!(f.get_u32("general.file_type").unwrap(), 2);
    assert_eq!(f.get_str("tokenizer.ggml.model").unwrap(), "llama");
    let tokens = f.get_str_array("tokenizer.ggml.tokens").unwrap();
    assert_eq!(tokens.len(), 512);
    // Spec §4.1: the first tokens are <pad>, <eos>, <bos>, <unk>; ids bos 2, eos 1, unk 3, pad 0.
    assert_eq!(
        tokens.iter().take(4).collect::<Vec<_>>(),
        ["<pad>", "<eos>", "<bos>", "<unk>"]
    );
    assert!(tokens.iter().any(|t| t == "<0x0A>"), "byte fallback tokens");
    assert_eq!(f.get_f32_array("tokenizer.ggml.scores").unwrap().len(), 512);
    let types = f.get_i32_array("tokenizer.ggml.token_type").unwrap();
    assert_eq!(types.len(), 512);
    assert_eq!(&types[..3], [3, 3, 3], "<pad>, <eos>, <bos> are CONTROL");
    assert_eq!(f.get_u32("tokenizer.ggml.bos_token_id").unwrap(), 2);
    assert_eq!(f.get_u32("tokenizer.ggml.eos_token_id").unwrap(), 1);
    assert_eq!(f.get_u32("tokenizer.ggml.unknown_token_id").unwrap(), 3);
    assert_eq!(f.get_u32("tokenizer.ggml.padding_token_id").unwrap(), 0);
    assert!(f.get_bool("tokenizer.ggml.add_bos_token").unwrap());
    assert!(!f.get_bool("tokenizer.ggml.add_space_prefix").unwrap());
}

#[test]
fn fixture_tensor_infos() {
    let f = GgufFile::parse(FIXTURE).unwrap();
    // 2 global tensors (token_embd, output_norm) + 13 per layer × 6; tied LM head: no output.weight.
    assert_eq!(f.tensors.len(), 2 + 13 * 6);
    assert!(f.tensor("output.weight").is_none());

    let emb = f.tensor("token_embd.weight").unwrap();
    assert_eq!(emb.dtype, DType::Q4_0);
    assert_eq!(emb.dims, [64, 512]);
    assert_eq!(emb.shape(), [512, 64]);
    assert_eq!(emb.nbytes, 512 * 64 / 32 * 18);
    assert_eq!(emb.offset, f.data_offset);

    let norm = f.tensor("blk.0.attn_norm.weight").unwrap();
    assert_eq!(norm.dtype, DType::F32);
    assert_eq!(norm.shape(), [64]);
    assert_eq!(norm.nbytes, 256);
    let bytes = f.tensor_bytes(FIXTURE, norm).unwrap();
    assert_eq!(bytes.len(), 256);
    assert!(bytes
        .chunks_exact(4)
        .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite()));

    let q = f.tensor("blk.3.attn_q.weight").unwrap();
    assert_eq!((q.dtype, q.shape()), (DType::Q4_0, vec![64, 64]));
    // 2 query heads × head size 32 = 64 rows; 1 KV head × 32 = 32 rows.
    let k = f.tensor("blk.0.attn_k.weight").unwrap();
    assert_eq!((k.dtype, k.shape()), (DType::Q4_0, vec![32, 64]));
    let qn = f.tensor("blk.5.attn_q_norm.weight").unwrap();
    assert_eq!((qn.dtype, qn.shape()), (DType::F32, vec![32]));
    let down = f.tensor("blk.5.ffn_down.weight").unwrap();
    assert_eq!((down.dtype, down.shape()), (DType::Q4_0, vec![64, 128]));
    let gate = f.tensor("blk.5.ffn_gate.weight").unwrap();
    assert_eq!(gate.shape(), [128, 64]);

    for t in &f.tensors {
        assert_eq!(t.offset % 32, 0, "{}", t.name);
        assert_eq!(f.tensor_bytes(FIXTURE, t).unwrap().len(), t.nbytes);
    }
    let last = f.tensors.last().unwrap();
    assert_eq!(
        last.offset + last.nbytes,
        FIXTURE.len(),
        "no trailing bytes"
    );
}

#[test]
fn typed_getters_convert_and_report() {
    let mut w = GgufWriter::new(32);
    w.add_metadata("u8", Value::U8(7));
    w.add_metadata("u16", Value::U16(700));
    w.add_metadata("i32", Value::I32(70_000));
    w.add_metadata("i32neg", Value::I32(-1));
    w.add_metadata("u64", Value::U64(5));
    w.add_metadata("u64big", Value::U64(1 << 40));
    w.add_metadata("f64", Value::F64(0.1));
    w.add_metadata("s", Value::String("x".into()));
    w.add_metadata("b", Value::Bool(true));
    w.add_metadata("ai", Value::Array(Array::I32(vec![1, -2])));
    let bytes = w.to_bytes().unwrap();
    let f = GgufFile::parse(&bytes).unwrap();
    assert_eq!(f.get_u32("u8").unwrap(), 7);
    assert_eq!(f.get_u32("u16").unwrap(), 700);
    assert_eq!(f.get_u32("i32").unwrap(), 70_000);
    assert_eq!(f.get_u32("u64").unwrap(), 5);
    assert_err(f.get_u32("i32neg"), "MissingMetadata");
    assert_err(f.get_u32("u64big"), "MissingMetadata");
    assert_err(f.get_u32("s"), "MissingMetadata");
    assert_err(f.get_u32("absent"), "MissingMetadata");
    assert_eq!(f.get_f32("f64").unwrap(), 0.1f32);
    assert_err(f.get_f32("u8"), "MissingMetadata");
    assert!(f.get_bool("b").unwrap());
    assert_err(f.get_bool("u8"), "MissingMetadata");
    assert_eq!(f.get_str("s").unwrap(), "x");
    assert_err(f.get_str("b"), "MissingMetadata");
    assert_eq!(f.get_i32_array("ai").unwrap(), [1, -2]);
    assert_err(f.get_f32_array("ai"), "MissingMetadata");
    assert_err(f.get_str_array("ai"), "MissingMetadata");
    assert_err(f.architecture(), "MissingMetadata");
    match f.get_str("u8") {
        Err(Error::MissingMetadata { key, reason }) => {
            assert_eq!(key, "u8");
            assert!(reason.contains("u8"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.get("ai").unwrap().type_name(), "array<i32>");
    assert!(f.get("absent").is_none());
}

// ---------------------------------------------------------------------------------------------
// Writer round trips
// ---------------------------------------------------------------------------------------------

fn every_value() -> Vec<(String, Value)> {
    let v = |k: &str, v: Value| (k.to_string(), v);
    vec![
        v("general.architecture", Value::String("test".into())),
        v("t.u8", Value::U8(255)),
        v("t.i8", Value::I8(-128)),
        v("t.u16", Value::U16(65535)),
        v("t.i16", Value::I16(-32768)),
        v("t.u32", Value::U32(u32::MAX)),
        v("t.i32", Value::I32(i32::MIN)),
        v("t.f32", Value::F32(-0.0)),
        v("t.f32.inf", Value::F32(f32::INFINITY)),
        v("t.f32.sub", Value::F32(f32::MIN_POSITIVE / 8.0)),
        v("t.bool.t", Value::Bool(true)),
        v("t.bool.f", Value::Bool(false)),
        v(
            "t.str",
            Value::String("kopi ☕ teh tarik 🍵 — ünïcødé".into()),
        ),
        v("t.str.empty", Value::String(String::new())),
        v("t.u64", Value::U64(u64::MAX)),
        v("t.i64", Value::I64(i64::MIN)),
        v("t.f64", Value::F64(std::f64::consts::PI)),
        v("t.a.u8", Value::Array(Array::U8(vec![0, 1, 255]))),
        v("t.a.i8", Value::Array(Array::I8(vec![-1, 0, 127]))),
        v("t.a.u16", Value::Array(Array::U16(vec![1, 65535]))),
        v("t.a.i16", Value::Array(Array::I16(vec![-300, 300]))),
        v("t.a.u32", Value::Array(Array::U32(vec![1, 2, 3, u32::MAX]))),
        v("t.a.i32", Value::Array(Array::I32(vec![-5, 5]))),
        v("t.a.f32", Value::Array(Array::F32(vec![1.5, -2.25, 1e-30]))),
        v(
            "t.a.bool",
            Value::Array(Array::Bool(vec![true, false, true])),
        ),
        v(
            "t.a.str",
            Value::Array(Array::String(StrArray::from(vec![
                "▁hello",
                "",
                "<0x0A>",
                "日本語",
            ]))),
        ),
        v("t.a.u64", Value::Array(Array::U64(vec![u64::MAX, 0]))),
        v(
            "t.a.i64",
            Value::Array(Array::I64(vec![i64::MIN, i64::MAX])),
        ),
        v("t.a.f64", Value::Array(Array::F64(vec![1e300, -1e-300]))),
        v("t.a.empty.u32", Value::Array(Array::U32(vec![]))),
        v(
            "t.a.empty.str",
            Value::Array(Array::String(StrArray::new())),
        ),
        v("t.ключ.🔑", Value::U8(1)),
    ]
}

/// (name, dtype, row-major shape, data) for a few tensors of assorted types and sizes.
fn some_tensors(rng: &mut Rng) -> Vec<(String, DType, Vec<usize>, Vec<u8>)> {
    let mk = |rng: &mut Rng, name: &str, dtype: DType, shape: Vec<usize>| {
        let numel: usize = shape.iter().product();
        let data = rand_bytes(rng, dtype.storage_bytes(numel).unwrap());
        (name.to_string(), dtype, shape, data)
    };
    vec![
        mk(rng, "a.f32", DType::F32, vec![3]), // 12 bytes: padding follows
        mk(rng, "b.q4_0", DType::Q4_0, vec![3, 64]),
        mk(rng, "c.q8_0", DType::Q8_0, vec![2, 1, 32]),
        mk(rng, "d.f16.3d", DType::F16, vec![2, 3, 5]),
        mk(rng, "e.scalar", DType::F32, vec![]),
        mk(rng, "f.empty", DType::F32, vec![0, 4]),
        mk(rng, "g.q6_k", DType::Q6_K, vec![1, 256]),
        mk(rng, "h.i32.4d", DType::I32, vec![1, 2, 1, 3]),
    ]
}

fn build(alignment: usize, rng: &mut Rng) -> (GgufWriter, Vec<(String, Value)>, Vec<Vec<u8>>) {
    let mut w = GgufWriter::new(alignment);
    let meta = every_value();
    for (k, v) in &meta {
        w.add_metadata(k.clone(), v.clone());
    }
    let mut datas = Vec::new();
    for (name, dtype, shape, data) in some_tensors(rng) {
        datas.push(data.clone());
        w.add_tensor(name, dtype, &shape, data).unwrap();
    }
    (w, meta, datas)
}

#[test]
fn writer_round_trip_every_type() {
    for alignment in [32usize, 64, 1, 8, 4096] {
        let mut rng = Rng::new(alignment as u64);
        let (w, mut meta, datas) = build(alignment, &mut rng);
        let bytes = w.to_bytes().unwrap();
        let mut streamed = Vec::new();
        w.write_to(&mut streamed).unwrap();
        assert_eq!(bytes, streamed, "write_to == to_bytes");

        let f = GgufFile::parse(&bytes).unwrap();
        assert_eq!(f.version, 3);
        assert_eq!(f.alignment, alignment);
        if alignment != DEFAULT_ALIGNMENT {
            // The writer records a non-default alignment after the caller's metadata.
            meta.push(("general.alignment".into(), Value::U32(alignment as u32)));
        }
        assert_eq!(f.metadata, meta);
        assert_eq!(f.data_offset % alignment, 0);
        let want = some_tensors(&mut Rng::new(alignment as u64));
        assert_eq!(f.tensors.len(), want.len());
        for ((t, (name, dtype, shape, _)), data) in f.tensors.iter().zip(&want).zip(&datas) {
            assert_eq!(&t.name, name);
            assert_eq!(t.dtype, *dtype);
            assert_eq!(&t.shape(), shape);
            let mut dims = shape.clone();
            dims.reverse();
            assert_eq!(t.dims, dims);
            assert_eq!(t.offset % alignment, 0, "{name} aligned");
            assert_eq!(
                f.tensor_bytes(&bytes, t).unwrap(),
                &data[..],
                "{name} bytes"
            );
        }
        // Each tensor's data is padded: the next one starts at the padded end.
        for pair in f.tensors.windows(2) {
            let end = pair[0].offset + pair[0].nbytes;
            assert_eq!(pair[1].offset, end.div_ceil(alignment) * alignment);
        }
        let last = f.tensors.last().unwrap();
        assert_eq!(
            bytes.len(),
            (last.offset + last.nbytes).div_ceil(alignment) * alignment
        );
        // Padding is zeros.
        assert!(bytes[f.tensors[0].offset + 12..f.tensors[1].offset]
            .iter()
            .all(|&b| b == 0));
    }
}

#[test]
fn writer_explicit_alignment_key() {
    let mut w = GgufWriter::new(64);
    w.add_metadata("general.alignment", Value::U32(64));
    w.add_tensor("x", DType::F32, &[5], vec![0; 20]).unwrap();
    w.add_tensor("y", DType::F32, &[5], vec![1; 20]).unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = GgufFile::parse(&bytes).unwrap();
    assert_eq!(f.metadata.len(), 1, "no second alignment key");
    assert_eq!(f.alignment, 64);
    assert_eq!(f.tensors[1].offset - f.tensors[0].offset, 64);

    let mut bad = GgufWriter::new(64);
    bad.add_metadata("general.alignment", Value::U32(32));
    assert_err(bad.to_bytes(), "InvalidArgument");
    let mut bad = GgufWriter::new(32);
    bad.add_metadata("general.alignment", Value::U64(32));
    assert_err(bad.to_bytes(), "InvalidArgument");
}

#[test]
fn writer_rejects_bad_input() {
    for a in [0usize, 3, 48] {
        assert_err(GgufWriter::new(a).to_bytes(), "InvalidArgument");
        assert_err(
            GgufWriter::new(a).write_to(&mut Vec::new()),
            "InvalidArgument",
        );
    }
    let mut w = GgufWriter::new(32);
    w.add_metadata("k", Value::U8(1));
    w.add_metadata("k", Value::U8(2));
    assert_err(w.to_bytes(), "InvalidArgument");
    let mut w = GgufWriter::new(32);
    w.add_metadata("", Value::U8(1));
    assert_err(w.to_bytes(), "InvalidArgument");

    let mut w = GgufWriter::new(32);
    assert_err(
        w.add_tensor("t", DType::F32, &[4], vec![0; 15]),
        "LengthMismatch",
    );
    assert_err(
        w.add_tensor("t", DType::Q4_0, &[2, 16], vec![0; 18]),
        "PartialQuantizedBlock",
    );
    assert_err(
        w.add_tensor("t", DType::F32, &[1, 1, 1, 1, 1], vec![0; 4]),
        "InvalidArgument",
    );
    assert_err(
        w.add_tensor("n".repeat(64), DType::F32, &[1], vec![0; 4]),
        "InvalidArgument",
    );
    assert_err(
        w.add_tensor("t", DType::F32, &[usize::MAX / 2, 4], vec![]),
        "SizeOverflow",
    );
    // Zero elements, but the other dims overflow: the reader would reject it, so does the writer.
    assert_err(
        w.add_tensor("t", DType::F32, &[0, usize::MAX / 2, 4], vec![]),
        "SizeOverflow",
    );
    assert_err(
        w.add_tensor("t", DType::F32, &[usize::MAX / 2, 0], vec![]),
        "SizeOverflow",
    );
    w.add_tensor("n".repeat(63), DType::F32, &[1], vec![0; 4])
        .unwrap();
    w.add_tensor("t", DType::F32, &[1], vec![0; 4]).unwrap();
    assert_err(
        w.add_tensor("t", DType::F32, &[1], vec![0; 4]),
        "InvalidArgument",
    );
    GgufFile::parse(&w.to_bytes().unwrap()).unwrap();

    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match w.write_to(&mut Broken) {
        Err(Error::InvalidArgument { op, reason }) => {
            assert_eq!(op, "gguf write");
            assert!(reason.contains("disk full"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn fixture_rewrite_round_trips() {
    let f = GgufFile::parse(FIXTURE).unwrap();
    let bytes = rewrite(&f, FIXTURE);
    let g = GgufFile::parse(&bytes).unwrap();
    assert_eq!(g.metadata, f.metadata);
    assert_eq!(g.tensors.len(), f.tensors.len());
    for (a, b) in f.tensors.iter().zip(&g.tensors) {
        assert_eq!(
            (&a.name, &a.dims, a.dtype, a.nbytes),
            (&b.name, &b.dims, b.dtype, b.nbytes)
        );
        assert_eq!(
            f.tensor_bytes(FIXTURE, a).unwrap(),
            g.tensor_bytes(&bytes, b).unwrap()
        );
    }
    // The fixture follows the same writer conventions (llama.cpp's), so the bytes are identical.
    assert_eq!(bytes.len(), FIXTURE.len());
    assert!(
        bytes == FIXTURE,
        "rewritten fixture differs from the original"
    );
}

// ---------------------------------------------------------------------------------------------
// Malformed inputs
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_magic_and_versions() {
    let good = GgufWriter::new(32).to_bytes().unwrap();
    GgufFile::parse(&good).unwrap();

    let mut b = good.clone();
    b[0] = b'g';
    assert_invalid_at(GgufFile::parse(&b), 0, "magic");
    assert_invalid_at(GgufFile::parse(b"GGML\x03\0\0\0"), 0, "magic");
    assert_invalid_at(GgufFile::parse(b""), 0, "magic");

    for v in [1u32, 2] {
        let mut b = good.clone();
        b[4..8].copy_from_slice(&v.to_le_bytes());
        assert_invalid_at(GgufFile::parse(&b), 4, &format!("version {v}"));
    }
    let mut b = good.clone();
    b[4..8].copy_from_slice(&4u32.to_le_bytes());
    assert_invalid_at(GgufFile::parse(&b), 4, "version 4");
    let mut b = good.clone();
    b[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert_invalid_at(GgufFile::parse(&b), 4, "byte-swapped");
}

/// A small valid file whose last tensor needs no padding, so that every proper prefix is
/// truncated somewhere that matters.
fn small_file() -> Vec<u8> {
    let mut w = GgufWriter::new(32);
    w.add_metadata("general.architecture", Value::String("tiny".into()));
    w.add_metadata(
        "s",
        Value::Array(Array::String(StrArray::from(vec!["ab", ""]))),
    );
    w.add_metadata("f", Value::Array(Array::F32(vec![1.0, 2.0])));
    w.add_metadata("b", Value::Bool(true));
    w.add_metadata("e", Value::Array(Array::Bool(vec![])));
    let mut rng = Rng::new(7);
    w.add_tensor("w", DType::Q4_0, &[2, 32], rand_bytes(&mut rng, 36))
        .unwrap();
    w.add_tensor("z", DType::F32, &[0], vec![]).unwrap();
    w.add_tensor("n", DType::F32, &[8], rand_bytes(&mut rng, 32))
        .unwrap();
    let bytes = w.to_bytes().unwrap();
    let f = GgufFile::parse(&bytes).unwrap();
    let last = f.tensors.last().unwrap();
    assert_eq!(last.offset + last.nbytes, bytes.len());
    bytes
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = small_file();
    for n in 0..bytes.len() {
        let (off, reason) = invalid(GgufFile::parse(&bytes[..n]));
        assert!(
            off <= n as u64,
            "prefix {n}: offset {off} past the end ({reason})"
        );
        assert!(!reason.is_empty());
    }
    // A file cut inside the data section names the tensor that is cut.
    let f = GgufFile::parse(&bytes).unwrap();
    let cut = f.tensor("n").unwrap().offset + 5;
    assert_invalid_at(GgufFile::parse(&bytes[..cut]), cut as u64, "\"n\"");
}

#[test]
fn fixture_truncations_are_errors() {
    let f = GgufFile::parse(FIXTURE).unwrap();
    let header_end = f.data_offset + 64;
    let mut n = 0;
    while n < FIXTURE.len() {
        let (off, _) = invalid(GgufFile::parse(&FIXTURE[..n]));
        assert!(off <= n as u64);
        n += if n < header_end { 1 } else { 997 };
    }
    let (off, reason) = invalid(GgufFile::parse(&FIXTURE[..FIXTURE.len() - 1]));
    assert_eq!(off, FIXTURE.len() as u64 - 1);
    assert!(reason.contains("blk.5.post_ffw_norm.weight"), "{reason}");
}

#[test]
fn huge_counts_do_not_allocate() {
    for huge in [u64::MAX, 1 << 40, i64::MAX as u64, 1 << 32, 1000] {
        // tensor_count, then kv_count.
        let mut b = B::header(huge, 0);
        b.raw(&[0; 64]);
        let (off, _) = invalid(GgufFile::parse(&b.0));
        assert_eq!(off, 8);
        let mut b = B::header(0, huge);
        b.raw(&[0; 64]);
        let (off, _) = invalid(GgufFile::parse(&b.0));
        assert_eq!(off, 16);

        // Array lengths for every element type.
        for ty in [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12] {
            let mut b = B::header(0, 1);
            b.kv("k", 9).i32(ty);
            let at = b.len();
            b.u64(huge).raw(&[0; 64]);
            assert_invalid_at(GgufFile::parse(&b.0), at, "array length");
        }
        // String lengths: key, value, array element, tensor name.
        let mut b = B::header(0, 1);
        b.u64(huge).raw(&[b'a'; 64]);
        assert_invalid_at(GgufFile::parse(&b.0), 24, "string length");
        let mut b = B::header(0, 1);
        b.kv("k", 8).u64(huge).raw(&[b'a'; 64]);
        assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4, "string length");
        let mut b = B::header(0, 1);
        b.kv("k", 9).i32(8).u64(2).str("x");
        let at = b.len();
        b.u64(huge).raw(&[b'a'; 64]);
        assert_invalid_at(GgufFile::parse(&b.0), at, "string length");
        let mut b = B::header(1, 0);
        b.u64(huge).raw(&[b'a'; 64]);
        assert_invalid_at(GgufFile::parse(&b.0), 24, "string length");
    }
    // Each KV needs >= 14 bytes and each tensor info >= 24: a count backed by too few bytes
    // fails before anything is read or allocated.
    let mut b = B::header(0, 3);
    b.raw(&[0; 41]);
    assert_invalid_at(GgufFile::parse(&b.0), 16, "metadata count");
    let mut b = B::header(2, 0);
    b.raw(&[0; 31]);
    assert_invalid_at(GgufFile::parse(&b.0), 8, "tensor count");
    // ... re-checked once the metadata has been read.
    let mut b = B::header(2, 0);
    b.raw(&[0; 47]);
    assert_invalid_at(GgufFile::parse(&b.0), 24, "tensor infos");
}

#[test]
fn bad_value_types() {
    for ty in [13, 99, -1, i32::MIN] {
        let mut b = B::header(0, 1);
        b.kv("key.x", ty).u32(0);
        let (off, reason) = invalid(GgufFile::parse(&b.0));
        assert_eq!(off, 24 + 8 + 5);
        assert!(reason.contains(&ty.to_string()), "{reason}");
        assert!(reason.contains("key.x"), "{reason}");
        // As an array element type.
        let mut b = B::header(0, 1);
        b.kv("k", 9).i32(ty).u64(0);
        assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4, &ty.to_string());
    }
    // Nested array.
    let mut b = B::header(0, 1);
    b.kv("k", 9).i32(9).u64(1).i32(4).u64(1).u32(5);
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4, "nested");
    // Bool bytes other than 0/1.
    let mut b = B::header(0, 1);
    b.kv("k", 7).u8(2);
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4, "bool");
    let mut b = B::header(0, 1);
    b.kv("k", 9).i32(7).u64(3).raw(&[1, 0, 0xff]);
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4 + 12 + 2, "bool");
}

#[test]
fn invalid_utf8_is_rejected_with_its_offset() {
    // In a key: the bad byte is the 3rd of the key.
    let mut b = B::header(0, 1);
    b.u64(4).raw(b"ab\xffd").i32(4).u32(1);
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 8 + 2, "UTF-8");
    // In a string value.
    let mut b = B::header(0, 1);
    b.kv("k", 8).u64(3).raw(b"\xe2\x96x");
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4 + 8, "UTF-8");
    // In an array string.
    let mut b = B::header(0, 1);
    b.kv("k", 9).i32(8).u64(2).str("ok").u64(1).raw(b"\x80");
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 9 + 4 + 12 + 10 + 8, "UTF-8");
    // In a tensor name.
    let mut b = B::header(1, 0);
    b.u64(2).raw(b"w\xc0").u32(1).u64(1).i32(0).u64(0);
    assert_invalid_at(GgufFile::parse(&b.0), 24 + 8 + 1, "UTF-8");
}

#[test]
fn duplicate_and_empty_keys() {
    let mut b = B::header(0, 2);
    b.kv("a.b", 4).u32(1);
    let at = b.len();
    b.kv("a.b", 8).str("x");
    assert_invalid_at(GgufFile::parse(&b.0), at, "duplicate metadata key \"a.b\"");
    let mut b = B::header(0, 1);
    b.kv("", 4).u32(1);
    assert_invalid_at(GgufFile::parse(&b.0), 24, "empty");
}

#[test]
fn bad_alignment_values() {
    let at = 24 + 8 + "general.alignment".len() as u64;
    for a in [0u32, 3, 48, u32::MAX] {
        let mut b = B::header(0, 1);
        b.kv("general.alignment", 4).u32(a);
        assert_invalid_at(GgufFile::parse(&b.0), at, "power of two");
    }
    let mut b = B::header(0, 1);
    b.kv("general.alignment", 10).u64(32);
    assert_invalid_at(GgufFile::parse(&b.0), at, "u32");
    let mut b = B::header(0, 1);
    b.kv("general.alignment", 5).i32(32);
    assert_invalid_at(GgufFile::parse(&b.0), at, "u32");
    let mut b = B::header(0, 1);
    b.kv("general.alignment", 8).str("32");
    assert_invalid_at(GgufFile::parse(&b.0), at, "u32");
    // A valid large alignment works.
    let mut b = B::header(0, 1);
    b.kv("general.alignment", 4).u32(1 << 31);
    let f = GgufFile::parse(&b.0).unwrap();
    assert_eq!(f.alignment, 1 << 31);
}

#[test]
fn bad_tensor_infos() {
    let info_at = 24u64; // first tensor info right after the header
    let after_name = |name: &str| info_at + 8 + name.len() as u64;

    // Unknown or unsupported ggml type ids, named in the message.
    for ty in [99, 4, 9, 39, -1] {
        let b = tensor_file(&[("w", &[32], ty, 0)], 128);
        let (off, reason) = invalid(GgufFile::parse(&b));
        assert_eq!(off, after_name("w") + 4 + 8);
        assert!(reason.contains(&ty.to_string()), "{reason}");
    }
    // n_dims 5.
    let b = tensor_file(&[("w", &[1, 1, 1, 1, 1], 0, 0)], 4);
    assert_invalid_at(GgufFile::parse(&b), after_name("w"), "5 dimensions");
    // Dims whose product overflows, a "negative" dim, a byte size that overflows.
    // 2^31 · 2^31 overflows a 32-bit usize (wasm32) at dimension 1, a 64-bit one at dimension 2.
    let b = tensor_file(&[("w", &[1 << 31, 1 << 31, 1 << 31], 0, 0)], 4);
    let overflow_dim = if usize::BITS == 64 { 2 } else { 1 };
    assert_invalid_at(
        GgufFile::parse(&b),
        after_name("w") + 4 + 8 * overflow_dim,
        "overflows",
    );
    // A zero dimension makes the element count 0, but the other dims must still not overflow
    // (in any order): 2 · 0 · 2^62 · 2^62.
    let b = tensor_file(&[("w", &[2, 0, 1 << 62, 1 << 62], 0, 0)], 4);
    invalid(GgufFile::parse(&b));
    let b = tensor_file(&[("w", &[1 << 62, 0], 0, 0)], 4);
    invalid(GgufFile::parse(&b)); // 2^62 f32 = 2^64 bytes
    let b = tensor_file(&[("w", &[1 << 10, 0, 1 << 10], 0, 0)], 4);
    let f = GgufFile::parse(&b).unwrap();
    assert_eq!(
        (f.tensors[0].nbytes, f.tensors[0].shape()),
        (0, vec![1 << 10, 0, 1 << 10])
    );
    // 2^40 elements: too large for wasm32's usize, past the end of the file on 64-bit.
    let b = tensor_file(&[("w", &[1 << 40], 0, 0)], 4);
    invalid(GgufFile::parse(&b));
    let b = tensor_file(&[("w", &[u64::MAX], 0, 0)], 4);
    assert_invalid_at(GgufFile::parse(&b), after_name("w") + 4, "negative");
    let b = tensor_file(&[("w", &[1 << 62], 0, 0)], 4);
    invalid(GgufFile::parse(&b));
    // ne[0] not a multiple of the block size (but ne[1] is).
    let b = tensor_file(&[("w", &[16, 32], 2, 0)], 1024);
    assert_invalid_at(GgufFile::parse(&b), after_name("w"), "multiple");
    let b = tensor_file(&[("w", &[], 8, 0)], 1024);
    assert_invalid_at(GgufFile::parse(&b), after_name("w"), "multiple");
    // Data out of bounds: offset past the end, and a tensor one byte short.
    let b = tensor_file(&[("w", &[8], 0, 1 << 20)], 32);
    assert_invalid_at(GgufFile::parse(&b), b.len() as u64, "\"w\"");
    let b = tensor_file(&[("w", &[8], 0, u64::MAX - 31)], 32);
    invalid(GgufFile::parse(&b));
    let b = tensor_file(&[("a", &[8], 0, 0), ("w", &[9], 0, 32)], 32 + 35);
    let (off, reason) = invalid(GgufFile::parse(&b));
    assert_eq!(off, b.len() as u64);
    assert!(
        reason.contains("\"w\"") && reason.contains("truncated"),
        "{reason}"
    );
    GgufFile::parse(&tensor_file(
        &[("a", &[8], 0, 0), ("w", &[9], 0, 32)],
        32 + 36,
    ))
    .unwrap();
    // Misaligned offset.
    let b = tensor_file(&[("w", &[8], 0, 16)], 64);
    assert_invalid_at(
        GgufFile::parse(&b),
        after_name("w") + 4 + 8 + 4,
        "not a multiple of the alignment 32",
    );
    // Duplicate tensor names.
    let b = tensor_file(&[("w", &[8], 0, 0), ("w", &[8], 0, 32)], 64);
    let second = info_at + (8 + 1 + 4 + 8 + 4 + 8);
    assert_invalid_at(GgufFile::parse(&b), second, "duplicate tensor name \"w\"");
    // Names of 64 bytes are too long; 63 is fine.
    let long = "x".repeat(64);
    let b = tensor_file(&[(long.as_str(), &[8], 0, 0)], 32);
    assert_invalid_at(GgufFile::parse(&b), info_at, "shorter than 64");
    let ok = "x".repeat(63);
    GgufFile::parse(&tensor_file(&[(ok.as_str(), &[8], 0, 0)], 32)).unwrap();
    // A zero-sized tensor needs no bytes but is still bounds-checked.
    GgufFile::parse(&tensor_file(&[("z", &[0, 7], 0, 0)], 0)).unwrap();
}

#[test]
fn tensor_bytes_checks_its_arguments() {
    let f = GgufFile::parse(FIXTURE).unwrap();
    let t = f.tensor("token_embd.weight").unwrap();
    assert_err(f.tensor_bytes(&FIXTURE[..100], t), "InvalidGguf");
    let bogus = TensorInfo {
        offset: usize::MAX,
        nbytes: 2,
        ..t.clone()
    };
    assert_err(f.tensor_bytes(FIXTURE, &bogus), "InvalidGguf");
}

// ---------------------------------------------------------------------------------------------
// Mutation fuzz
// ---------------------------------------------------------------------------------------------

/// `f` written again as it is.
fn rewrite(f: &GgufFile, bytes: &[u8]) -> Vec<u8> {
    common::rewrite_gguf(f, bytes, |_, v| v.clone())
}

#[test]
fn random_mutations_never_panic() {
    let base = small_file();
    let mut rng = Rng::new(0x6767_7566);
    let interesting: [u64; 8] = [0, 1, 2, 63, 64, u32::MAX as u64, 1 << 40, u64::MAX];
    let (mut ok, mut err) = (0, 0);
    for _ in 0..2000 {
        let mut b = base.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(b.len() + 1);
            match rng.below(5) {
                0 if at < b.len() => b[at] ^= 1 << rng.below(8),
                1 if at < b.len() => b[at] = rng.next_u64() as u8,
                2 => b.insert(at, rng.next_u64() as u8),
                3 if at < b.len() => {
                    b.remove(at);
                }
                4 if at + 8 <= b.len() => {
                    let v = interesting[rng.below(interesting.len())];
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
                _ => {}
            }
        }
        match GgufFile::parse(&b) {
            Ok(f) => {
                ok += 1;
                let _ = f.architecture();
                for (k, _) in &f.metadata {
                    let _ = (f.get_u32(k), f.get_f32(k), f.get_bool(k), f.get_str(k));
                    let _ = (f.get_str_array(k), f.get_f32_array(k), f.get_i32_array(k));
                }
                for t in &f.tensors {
                    assert_eq!(f.tensor_bytes(&b, t).unwrap().len(), t.nbytes);
                    assert_eq!(t.offset % f.alignment, 0);
                    assert!(f.tensor(&t.name).is_some());
                }
                // Whatever the reader accepts, the writer accepts and reads back the same.
                let once = rewrite(&f, &b);
                let g = GgufFile::parse(&once).unwrap();
                assert_eq!(g.tensors.len(), f.tensors.len());
                assert_eq!(rewrite(&g, &once), once);
            }
            Err(e) => {
                err += 1;
                assert!(
                    matches!(e.code(), "InvalidGguf" | "AllocationFailed"),
                    "unexpected error {e}"
                );
            }
        }
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

/// A tensor's byte size is whole blocks × block bytes: Gemma 3 270M's 640 × 262144 Q8_0
/// embedding (178 MB) fits a 32-bit address space, though its element count times the block size
/// (34) would not. Here the data section is missing, so parsing stops at the data bounds — and
/// not, as it once did on wasm32, at a false "byte size overflows" in the header.
#[test]
fn a_large_q8_0_matrix_is_not_a_size_overflow() {
    let q8_0 = 8;
    let file = tensor_file(&[("token_embd.weight", &[640, 262144], q8_0, 0)], 0);
    let (_, reason) = invalid(GgufFile::parse(&file));
    assert!(!reason.contains("overflows"), "{reason}");
    assert!(reason.contains("token_embd.weight"), "{reason}");
}
