//! Every input the fuzz targets (fuzz/README.md) once crashed on, kept under
//! `tests/fixtures/fuzz/<target>/` and replayed through the target's code path: each must now
//! give `Ok` or a typed error. Native only, as it lists the folders at run time.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use kopitiam_wasm::gguf::GgufFile;
use kopitiam_wasm::model::tokenizer::StreamDecoder;
use kopitiam_wasm::model::{tokenizer_from_gguf, Logits, Model};

const TINY: &[u8] = include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");

/// The files of `tests/fixtures/fuzz/<target>/` (none when the folder does not exist).
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn gguf_parse_reproducers() {
    for (name, bytes) in inputs("gguf_parse") {
        eprintln!("{name}");
        if let Ok(f) = GgufFile::parse(&bytes) {
            for t in &f.tensors {
                f.tensor_bytes(&bytes, t).unwrap();
            }
        }
    }
}

#[test]
fn model_step_reproducers() {
    for (name, bytes) in inputs("model_step") {
        let model = match Model::load(bytes) {
            Ok(model) => model,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let n_vocab = model.config().n_vocab as u32;
        let Ok(mut session) = model.session(4) else {
            continue;
        };
        assert!(session.eval(&model, &[0, n_vocab], Logits::Last).is_err());
        let _ = session.eval(&model, &[0, n_vocab - 1], Logits::Last);
    }
}

#[test]
fn tokenizer_reproducers() {
    let tok = tokenizer_from_gguf(&GgufFile::parse(TINY).unwrap()).unwrap();
    for (name, bytes) in inputs("tokenizer") {
        eprintln!("{name}");
        let text = String::from_utf8_lossy(&bytes);
        for (add_special, parse_special) in [(false, false), (true, true)] {
            let ids = tok.encode(&text, add_special, parse_special);
            tok.decode(&ids, true).unwrap();
        }
        let ids: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let _ = tok.decode(&ids, true);
        let mut d = StreamDecoder::new();
        for &id in &ids {
            let _ = d.push(&tok, id);
        }
        d.finish();
    }
}
