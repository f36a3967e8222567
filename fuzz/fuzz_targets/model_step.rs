//! Fuzzes model loading and one step of the forward pass: any file must load or fail cleanly,
//! and a model that loads must evaluate without panicking. Seeded with the tiny Gemma 3 fixture
//! (`scripts/fuzz.sh` copies it in), so most inputs are that file with a few bytes changed.
//!
//! The last bytes of the input pick the token ids. Per input: an out-of-range id must be an
//! error that leaves the session empty; two in-range ids must give `n_vocab` logits or an error.
#![no_main]

use kopitiam_wasm::model::{Logits, Model};
use libfuzzer_sys::fuzz_target;

/// KV-cache positions per session: enough for the two evaluated tokens, small to stay fast.
const CONTEXT: usize = 4;

fn tail_u16(data: &[u8], from_end: usize) -> u32 {
    let at = data.len().saturating_sub(from_end);
    let b = |i: usize| data.get(at + i).copied().unwrap_or(0) as u32;
    b(0) | (b(1) << 8)
}

fuzz_target!(
    init: {
        // The pool's helper threads would only spin beside one libFuzzer process.
        std::env::set_var("RAYON_NUM_THREADS", "1");
    },
    |data: &[u8]| {
        let Ok(model) = Model::load(data.to_vec()) else {
            return;
        };
        let n_vocab = model.config().n_vocab;
        assert_eq!(model.tokenizer().vocab_size(), n_vocab);
        let Ok(mut session) = model.session(CONTEXT) else {
            return;
        };
        let a = tail_u16(data, 2) % n_vocab as u32;
        let b = tail_u16(data, 4) % n_vocab as u32;
        let bad = (n_vocab as u32).saturating_add(tail_u16(data, 6));

        assert!(session.eval(&model, &[a, bad], Logits::Last).is_err());
        assert!(session.tokens().is_empty(), "a failed eval kept its tokens");
        if let Ok(logits) = session.eval(&model, &[a, b], Logits::Last) {
            assert_eq!(logits.len(), n_vocab);
            assert_eq!(session.tokens(), &[a, b]);
        }
    }
);
