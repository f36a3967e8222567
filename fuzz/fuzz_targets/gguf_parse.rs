//! Fuzzes the GGUF reader: any input must parse or fail cleanly, never panic, hang or allocate
//! without bound. Accepted files are also run through every typed getter and `tensor_bytes`, and
//! re-written with `GgufWriter`: the rewrite must parse, and rewriting it again must give the
//! same bytes.
#![no_main]

use kopitiam_wasm::gguf::{GgufFile, GgufWriter};
use libfuzzer_sys::fuzz_target;

fn rewrite(f: &GgufFile, bytes: &[u8]) -> Vec<u8> {
    let mut w = GgufWriter::new(f.alignment);
    for (k, v) in &f.metadata {
        w.add_metadata(k.clone(), v.clone());
    }
    for t in &f.tensors {
        let data = f
            .tensor_bytes(bytes, t)
            .expect("validated tensor in bounds");
        w.add_tensor(t.name.clone(), t.dtype, &t.shape(), data.to_vec())
            .expect("a parsed tensor is a valid writer tensor");
    }
    w.to_bytes().expect("a parsed file can be written")
}

fuzz_target!(|data: &[u8]| {
    let Ok(f) = GgufFile::parse(data) else {
        return;
    };
    let _ = f.architecture();
    for (k, v) in &f.metadata {
        let _ = v.type_name();
        let _ = (f.get_u32(k), f.get_f32(k), f.get_bool(k), f.get_str(k));
        let _ = (f.get_str_array(k), f.get_f32_array(k), f.get_i32_array(k));
    }
    for t in &f.tensors {
        let b = f.tensor_bytes(data, t).expect("validated tensor in bounds");
        assert_eq!(b.len(), t.nbytes);
        assert_eq!(t.offset % f.alignment, 0);
        let _ = t.shape();
    }
    let once = rewrite(&f, data);
    let g = GgufFile::parse(&once).expect("the writer's output parses");
    assert_eq!(g.tensors.len(), f.tensors.len());
    assert_eq!(g.metadata.len(), f.metadata.len());
    let twice = rewrite(&g, &once);
    assert!(once == twice, "rewriting is not idempotent");
});
