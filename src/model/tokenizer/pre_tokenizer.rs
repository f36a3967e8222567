//! Byte-level BPE pre-tokenizers: the regular expressions llama.cpp applies for each
//! `tokenizer.ggml.pre`, in order, each one splitting the pieces the previous one left. The text
//! between two matches stays a piece of its own, and every piece is matched on its own (a
//! look-ahead never sees past it), as in llama.cpp's `unicode_regex_split`.

use fancy_regex::Regex;

use crate::{Error, Result};

/// GPT-2's expression (llama.cpp `gpt-2`, the second step of `default` and `smollm`).
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// Llama 3's expression (`llama-bpe`): case-insensitive contractions, a letter run with one
/// optional leading non-letter, digits in threes, punctuation with its newlines.
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2's: Llama 3's with every digit on its own.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The `tokenizer.ggml.pre` names this crate supports and their expressions; the last field
/// says whether a pre-token found whole in the vocabulary skips the merges (llama.cpp's
/// `ignore_merges`, set for Llama 3).
const TABLE: &[(&[&str], &[&str], bool)] = &[
    (&["llama-bpe", "llama3", "llama-v3"], &[LLAMA3], true),
    (&["qwen2", "deepseek-r1-qwen"], &[QWEN2], false),
    (&["smollm"], &[r"\p{N}", GPT2], false),
    (&["gpt-2"], &[GPT2], false),
    (
        &["default"],
        &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
        false,
    ),
];

/// Every name [`PreTokenizer::new`] accepts.
pub fn supported_names() -> Vec<&'static str> {
    TABLE
        .iter()
        .flat_map(|(names, ..)| names.iter().copied())
        .collect()
}

#[derive(Clone)]
pub(super) struct PreTokenizer {
    steps: Vec<Regex>,
    /// llama.cpp's `ignore_merges`.
    pub(super) ignore_merges: bool,
}

impl PreTokenizer {
    /// The pre-tokenizer called `name` in the GGUF (a missing key means `default`, as in
    /// llama.cpp).
    pub(super) fn new(name: &str) -> Result<PreTokenizer> {
        let (_, exprs, ignore_merges) = TABLE
            .iter()
            .find(|(names, ..)| names.contains(&name))
            .ok_or_else(|| Error::UnsupportedModel {
                reason: format!(
                    "pre-tokenizer {name:?} (supported: {})",
                    supported_names().join(", ")
                ),
            })?;
        let steps = exprs
            .iter()
            .map(|e| {
                Regex::new(e).map_err(|err| Error::InvalidArgument {
                    op: "PreTokenizer",
                    reason: err.to_string(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(PreTokenizer {
            steps,
            ignore_merges: *ignore_merges,
        })
    }

    /// Splits `text` into the byte ranges of its pre-tokens, in order.
    pub(super) fn split(&self, text: &str) -> Vec<(usize, usize)> {
        let mut pieces = vec![(0, text.len())];
        for re in &self.steps {
            let mut next = Vec::with_capacity(pieces.len());
            for &(start, end) in &pieces {
                let mut at = start;
                // A regex error is only a backtracking limit hit on a pathological input:
                // the rest of that piece then stays whole.
                for m in re.find_iter(&text[start..end]).map_while(|m| m.ok()) {
                    let (s, e) = (start + m.start(), start + m.end());
                    if s == e {
                        continue;
                    }
                    if s > at {
                        next.push((at, s));
                    }
                    next.push((s, e));
                    at = e;
                }
                if at < end {
                    next.push((at, end));
                }
            }
            pieces = next;
        }
        pieces
    }
}
