//! Byte-level BPE against llama.cpp: the full Qwen vocabulary (`tests/fixtures/tokenizers/`,
//! Apache-2.0) and the full Llama 3 one (read from `../shared`: Meta Llama 3 licence, not in this
//! repo) on 137 stress strings — ids with and without special handling, and every piece — plus
//! the cut vocabularies of the tiny model fixtures on their prompts.

mod common;

use common::json_ids as ids;
use kopitiam_wasm::gguf::GgufFile;
use kopitiam_wasm::model::tokenizer::{StreamDecoder, Tokenizer};
use kopitiam_wasm::model::tokenizer_from_gguf;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn tokenizer(gguf: &[u8]) -> Tokenizer {
    tokenizer_from_gguf(&GgufFile::parse(gguf).unwrap()).unwrap()
}

/// A reference piece: raw text, or `{"hex": …}` for bytes that are not UTF-8 on their own.
fn piece_bytes(p: &serde_json::Value) -> Vec<u8> {
    match p.as_str() {
        Some(s) => s.as_bytes().to_vec(),
        None => {
            let hex = p["hex"].as_str().unwrap();
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        }
    }
}

/// Every stress string: ids (add_special, parse_special), ids_plain (neither), pieces, the
/// decoded text of the plain ids and the streaming decoder over them. Returns the count.
fn check_stress(name: &str, tok: &Tokenizer, reference: &str) -> usize {
    let cases: Vec<serde_json::Value> = serde_json::from_str(reference).unwrap();
    for c in &cases {
        let text = c["text"].as_str().unwrap();
        let want = ids(&c["ids"]);
        assert_eq!(tok.encode(text, true, true), want, "{name} {text:?}");
        let plain = ids(&c["ids_plain"]);
        assert_eq!(
            tok.encode(text, false, false),
            plain,
            "{name} plain {text:?}"
        );
        for (id, p) in want.iter().zip(c["pieces"].as_array().unwrap()) {
            let got = tok.token_bytes(*id, true).unwrap();
            assert_eq!(&*got, &piece_bytes(p)[..], "{name} {text:?}: piece of {id}");
        }
        // Byte-level BPE loses nothing: the plain ids decode to the text, also streamed.
        assert_eq!(
            tok.decode(&plain, false).unwrap(),
            text,
            "{name} decode {text:?}"
        );
        let mut stream = StreamDecoder::new();
        let mut streamed = String::new();
        for &id in &plain {
            streamed.push_str(&stream.push(tok, id).unwrap());
        }
        streamed.push_str(&stream.finish());
        assert_eq!(streamed, text, "{name} stream {text:?}");
    }
    cases.len()
}

#[test]
fn qwen_full_vocabulary_matches_llama_cpp() {
    let tok = tokenizer(include_bytes!("fixtures/tokenizers/qwen-vocab.gguf"));
    assert_eq!(tok.kind(), "bpe");
    let n = check_stress("qwen", &tok, include_str!("fixtures/tokenizers/qwen.json"));
    assert_eq!(n, 137);
}

/// The Llama 3 vocabulary is read from `../shared` at run time (not redistributed here).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn llama3_full_vocabulary_matches_llama_cpp() {
    let names = ["llama3-vocab.gguf", "llama3.json"];
    let Some([gguf, reference]) = common::shared_files("reference/tokenizers", names) else {
        return;
    };
    let n = check_stress(
        "llama3",
        &tokenizer(&gguf),
        std::str::from_utf8(&reference).unwrap(),
    );
    assert_eq!(n, 137);
}

/// Each tiny fixture's prompts tokenize to llama.cpp's ids with its cut vocabulary.
fn check_fixture(name: &str, gguf: &[u8], reference: &str) {
    let tok = tokenizer(gguf);
    let cases: Vec<serde_json::Value> = serde_json::from_str(reference).unwrap();
    for c in &cases {
        let prompt = c["prompt"].as_str().unwrap();
        assert_eq!(
            tok.encode(prompt, true, true),
            ids(&c["tokens"]),
            "{name} {prompt:?}"
        );
    }
}

#[test]
fn tiny_qwen_fixtures_match_llama_cpp() {
    check_fixture(
        "tiny-qwen2",
        include_bytes!("fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf"),
        include_str!("fixtures/tiny-qwen2/reference.json"),
    );
    check_fixture(
        "tiny-qwen3",
        include_bytes!("fixtures/tiny-qwen3/tiny-qwen3-q4_0.gguf"),
        include_str!("fixtures/tiny-qwen3/reference.json"),
    );
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn tiny_llama3_fixture_matches_llama_cpp() {
    let names = ["tiny-llama3-q4_0.gguf", "reference.json"];
    let Some([gguf, reference]) = common::shared_files("fixtures/tiny-llama3", names) else {
        return;
    };
    check_fixture(
        "tiny-llama3",
        &gguf,
        std::str::from_utf8(&reference).unwrap(),
    );
}

/// End-of-generation sets as llama.cpp derives them (`shared/README.md` lists them per fixture).
#[test]
fn end_of_generation_sets_match_llama_cpp() {
    let eog = |gguf: &[u8]| {
        let tok = tokenizer(gguf);
        let texts: Vec<String> = tok
            .eog_ids()
            .iter()
            .map(|&id| tok.token_text(id).unwrap().to_string())
            .collect();
        texts
    };
    let qwen = eog(include_bytes!("fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf"));
    let mut want = [
        "<|endoftext|>",
        "<|im_end|>",
        "<|fim_pad|>",
        "<|repo_name|>",
        "<|file_sep|>",
    ];
    want.sort();
    let mut got = qwen.clone();
    got.sort();
    assert_eq!(got, want);
    let phi3 = eog(include_bytes!("fixtures/tiny-phi3/tiny-phi3-q4_0.gguf"));
    assert_eq!(phi3, ["</s>", "<|endoftext|>", "<|end|>"]);
    let gemma = eog(include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf"));
    assert_eq!(gemma, ["<eos>", "<end_of_turn>"]);
}

#[test]
fn tiny_phi3_fixture_matches_llama_cpp() {
    check_fixture(
        "tiny-phi3",
        include_bytes!("fixtures/tiny-phi3/tiny-phi3-q4_0.gguf"),
        include_str!("fixtures/tiny-phi3/reference.json"),
    );
}
