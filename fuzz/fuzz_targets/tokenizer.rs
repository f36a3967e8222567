//! Fuzzes the SPM tokenizer of the tiny Gemma 3 fixture (512 tokens, all 256 byte tokens, no
//! space prefix): any text must encode, any ids must decode or fail with `IndexOutOfRange`.
//!
//! Properties checked, each guaranteed by the fixture's vocabulary:
//! * with every byte covered by a byte token, `decode(encode(text), special = true)` is the text
//!   with `▁` read as a space (NORMAL tokens unescape it), with or without `parse_special`;
//! * `add_special` only prepends BOS (`add_bos`, no `add_eos`);
//! * the streaming decoder's pushes plus `finish` equal `decode` (no space prefix to strip);
//! * ids taken from the input bytes decode iff all are in range, and the streaming decoder skips
//!   (and is unchanged by) the out-of-range ones.
#![no_main]

use std::sync::OnceLock;

use kopitiam_wasm::gguf::GgufFile;
use kopitiam_wasm::model::tokenizer::{StreamDecoder, Tokenizer};
use kopitiam_wasm::model::tokenizer_from_gguf;
use kopitiam_wasm::Error;
use libfuzzer_sys::fuzz_target;

const GGUF: &[u8] = include_bytes!("../../tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");

fn tokenizer() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        let g = GgufFile::parse(GGUF).expect("fixture parses");
        let t = tokenizer_from_gguf(&g).expect("fixture tokenizer loads");
        let c = t.config();
        assert!(c.add_bos && !c.add_eos && !c.add_space_prefix && c.bos.is_some());
        t
    })
}

/// The streamed text of `ids`; out-of-range ids must be errors that change nothing.
fn stream(tok: &Tokenizer, ids: &[u32], special: bool) -> String {
    let mut d = StreamDecoder::with_special(special);
    let mut out = String::new();
    for &id in ids {
        let pending = d.has_pending();
        match d.push(tok, id) {
            Ok(s) => out.push_str(&s),
            Err(e) => {
                assert!(matches!(e, Error::IndexOutOfRange { .. }), "{e:?}");
                assert!((id as usize) >= tok.vocab_size());
                assert_eq!(d.has_pending(), pending);
            }
        }
    }
    out + &d.finish()
}

fn check_text(tok: &Tokenizer, text: &str) {
    let expected = text.replace('\u{2581}', " ");
    for parse_special in [false, true] {
        let ids = tok.encode(text, false, parse_special);
        let with_bos = tok.encode(text, true, parse_special);
        assert_eq!(with_bos.first().copied(), tok.bos());
        assert_eq!(&with_bos[1..], &ids[..]);
        for special in [false, true] {
            let decoded = tok.decode(&ids, special).expect("encoded ids are in range");
            assert_eq!(stream(tok, &ids, special), decoded);
            if special {
                assert_eq!(
                    decoded, expected,
                    "round trip, parse_special {parse_special}"
                );
            }
        }
    }
}

fn check_ids(tok: &Tokenizer, ids: &[u32]) {
    let in_range: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|&id| (id as usize) < tok.vocab_size())
        .collect();
    for special in [false, true] {
        match tok.decode(ids, special) {
            Ok(s) => {
                assert_eq!(in_range.len(), ids.len());
                assert_eq!(stream(tok, ids, special), s);
            }
            Err(e) => {
                assert!(matches!(e, Error::IndexOutOfRange { .. }), "{e:?}");
                assert!(in_range.len() < ids.len());
                let s = tok.decode(&in_range, special).expect("in range");
                assert_eq!(stream(tok, ids, special), s);
            }
        }
        for &id in ids {
            assert_eq!(
                tok.token_bytes(id, special).is_ok(),
                (id as usize) < tok.vocab_size()
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let tok = tokenizer();
    check_text(tok, &String::from_utf8_lossy(data));
    // Small ids (mostly in range, a few just past the end) and raw 32-bit ones.
    let n = tok.vocab_size() as u32 + 8;
    let small: Vec<u32> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32 % n)
        .collect();
    check_ids(tok, &small);
    let raw: Vec<u32> = data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    check_ids(tok, &raw);
});
