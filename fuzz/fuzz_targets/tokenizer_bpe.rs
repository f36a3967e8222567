//! Fuzzes byte-level BPE with the full Qwen vocabulary (151,936 tokens, pre-tokenizer `qwen2`):
//! any text must encode, and byte-level BPE loses nothing, so without special handling the ids
//! decode back to the very text — also through the streaming decoder, piece by piece.
#![no_main]

use std::sync::OnceLock;

use kopitiam_wasm::gguf::GgufFile;
use kopitiam_wasm::model::tokenizer::{StreamDecoder, Tokenizer};
use kopitiam_wasm::model::tokenizer_from_gguf;
use libfuzzer_sys::fuzz_target;

const GGUF: &[u8] = include_bytes!("../../tests/fixtures/tokenizers/qwen-vocab.gguf");

fn tokenizer() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| tokenizer_from_gguf(&GgufFile::parse(GGUF).unwrap()).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let tok = tokenizer();
    let text = String::from_utf8_lossy(data);
    let plain = tok.encode(&text, false, false);
    assert_eq!(tok.decode(&plain, false).unwrap(), text);
    let mut stream = StreamDecoder::new();
    let mut streamed = String::new();
    for &id in &plain {
        streamed.push_str(&stream.push(tok, id).unwrap());
    }
    streamed.push_str(&stream.finish());
    assert_eq!(streamed, text);
    // With special tokens parsed the text may turn into control tokens: ids stay in range.
    let special = tok.encode(&text, true, true);
    assert!(special.iter().all(|&id| (id as usize) < tok.vocab_size()));
});
