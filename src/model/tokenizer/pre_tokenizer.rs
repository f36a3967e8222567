//! Byte-level BPE pre-tokenizers: llama.cpp's expressions for each `tokenizer.ggml.pre`, written
//! as scanners (as llama.cpp's own `unicode_regex_split_custom_*` are) over a compact table of
//! the Unicode classes they use, instead of a regex engine that would add ~0.7 MB to the wasm.
//! Steps run in order, each splitting the pieces the previous one left; the text between two
//! matches stays a piece of its own, and every piece is scanned on its own (a look-ahead never
//! sees past it), as in llama.cpp's `unicode_regex_split`. `tests/pre_tokenizer.rs` checks every
//! scanner against the expression itself run by a regex engine.

use super::unicode_tables::{LETTER, NUMBER, PUNCTUATION, WHITE_SPACE};
use crate::{Error, Result};

/// One step: where a match that starts at `s[i]` ends, `None` if none starts there.
type Step = fn(&[char], usize) -> Option<usize>;

/// The `tokenizer.ggml.pre` names supported, their steps, and whether a pre-token found whole
/// in the vocabulary skips the merges (llama.cpp's `ignore_merges`, set for Llama 3).
const TABLE: &[(&[&str], &[Step], bool)] = &[
    (&["llama-bpe", "llama3", "llama-v3"], &[llama3], true),
    (&["qwen2", "deepseek-r1-qwen"], &[qwen2], false),
    (&["smollm"], &[one_number, gpt2], false),
    (&["gpt-2"], &[gpt2], false),
    (
        &["default"],
        &[punctuation_run, gpt2, number_run, three_ascii_digits],
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

/// The pre-tokens of `text` as byte ranges, for the pre-tokenizer called `name`.
pub fn pre_tokenize(name: &str, text: &str) -> Result<Vec<(usize, usize)>> {
    Ok(PreTokenizer::new(name)?.split(text))
}

#[derive(Clone)]
pub(super) struct PreTokenizer {
    steps: &'static [Step],
    /// llama.cpp's `ignore_merges`.
    pub(super) ignore_merges: bool,
}

impl PreTokenizer {
    /// The pre-tokenizer called `name` in the GGUF (a missing key means `default`, as in
    /// llama.cpp).
    pub(super) fn new(name: &str) -> Result<PreTokenizer> {
        let (_, steps, ignore_merges) = TABLE
            .iter()
            .find(|(names, ..)| names.contains(&name))
            .ok_or_else(|| Error::UnsupportedModel {
                reason: format!(
                    "pre-tokenizer {name:?} (supported: {})",
                    supported_names().join(", ")
                ),
            })?;
        Ok(PreTokenizer {
            steps,
            ignore_merges: *ignore_merges,
        })
    }

    /// Splits `text` into the byte ranges of its pre-tokens, in order.
    pub(super) fn split(&self, text: &str) -> Vec<(usize, usize)> {
        let chars: Vec<char> = text.chars().collect();
        let mut bytes = Vec::with_capacity(chars.len() + 1);
        bytes.extend(text.char_indices().map(|(b, _)| b));
        bytes.push(text.len());
        let mut pieces = vec![(0, chars.len())];
        for &step in self.steps {
            let mut next = Vec::with_capacity(pieces.len());
            for &(lo, hi) in &pieces {
                scan(step, &chars[lo..hi], lo, &mut next);
            }
            pieces = next;
        }
        pieces.iter().map(|&(a, b)| (bytes[a], bytes[b])).collect()
    }
}

/// The matches of `step` in `s` (leftmost first, as a regex's `find_iter`) and the gaps between
/// them, as char ranges offset by `base`.
fn scan(step: Step, s: &[char], base: usize, out: &mut Vec<(usize, usize)>) {
    let (mut i, mut gap) = (0, 0);
    while i < s.len() {
        match step(s, i) {
            Some(end) if end > i => {
                if gap < i {
                    out.push((base + gap, base + i));
                }
                out.push((base + i, base + end));
                i = end;
                gap = end;
            }
            _ => i += 1,
        }
    }
    if gap < s.len() {
        out.push((base + gap, base + s.len()));
    }
}

// ------------------------------------------------------------------------- character classes

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `\p{L}`
fn letter(c: char) -> bool {
    c.is_ascii_alphabetic() || (!c.is_ascii() && in_table(&LETTER, c))
}

/// `\p{N}`
fn number(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && in_table(&NUMBER, c))
}

/// `\s` (Unicode White_Space)
fn space(c: char) -> bool {
    in_table(&WHITE_SPACE, c)
}

/// `[^\s\p{L}\p{N}]`
fn other(c: char) -> bool {
    !space(c) && !letter(c) && !number(c)
}

fn newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// The end of the run of `class` characters that starts at `i`.
fn run(s: &[char], i: usize, class: fn(char) -> bool) -> usize {
    i + s[i..].iter().take_while(|&&c| class(c)).count()
}

// ------------------------------------------------------------------------- the steps

/// `'s|'t|'re|'ve|'m|'ll|'d`, case-insensitively when `fold`.
fn contraction(s: &[char], i: usize, fold: bool) -> Option<usize> {
    let at = |k: usize| {
        s.get(k)
            .map(|&c| if fold { c.to_ascii_lowercase() } else { c })
    };
    if s[i] != '\'' {
        return None;
    }
    match (at(i + 1)?, at(i + 2)) {
        ('s' | 't' | 'm' | 'd', _) => Some(i + 2),
        ('r', Some('e')) | ('v', Some('e')) | ('l', Some('l')) => Some(i + 3),
        _ => None,
    }
}

/// `\s*[\r\n]+|\s+(?!\S)|\s+` at a whitespace character (`trailing`: the last alternative is
/// part of the expression).
fn whitespace(s: &[char], i: usize, newlines: bool, trailing: bool) -> Option<usize> {
    let r = run(s, i, space);
    if newlines {
        if let Some(last) = (i..r).rev().find(|&k| newline(s[k])) {
            return Some(last + 1);
        }
    }
    if r == s.len() {
        Some(r)
    } else if r - i >= 2 {
        Some(r - 1) // leave the last space to the word after it
    } else if trailing {
        Some(r)
    } else {
        None
    }
}

/// Llama 3 (`max_digits` 3) and Qwen 2 (`max_digits` 1):
/// `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|
/// \p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
fn llama3_like(s: &[char], i: usize, max_digits: usize) -> Option<usize> {
    let c = s[i];
    if let Some(end) = contraction(s, i, true) {
        return Some(end);
    }
    if letter(c) {
        return Some(run(s, i, letter));
    }
    if !newline(c) && !number(c) && s.get(i + 1).is_some_and(|&n| letter(n)) {
        return Some(run(s, i + 1, letter));
    }
    if number(c) {
        return Some(
            i + s[i..]
                .iter()
                .take(max_digits)
                .take_while(|&&c| number(c))
                .count(),
        );
    }
    let start = if c == ' ' && s.get(i + 1).is_some_and(|&n| other(n)) {
        i + 1
    } else {
        i
    };
    if other(s[start]) {
        let end = run(s, start, other);
        return Some(run(s, end, newline));
    }
    if space(c) {
        return whitespace(s, i, true, true);
    }
    None
}

fn llama3(s: &[char], i: usize) -> Option<usize> {
    llama3_like(s, i, 3)
}

fn qwen2(s: &[char], i: usize) -> Option<usize> {
    llama3_like(s, i, 1)
}

/// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
fn gpt2(s: &[char], i: usize) -> Option<usize> {
    if let Some(end) = contraction(s, i, false) {
        return Some(end);
    }
    for class in [letter as fn(char) -> bool, number, other] {
        if s[i] == ' ' && s.get(i + 1).is_some_and(|&n| class(n)) {
            return Some(run(s, i + 1, class));
        }
        if class(s[i]) {
            return Some(run(s, i, class));
        }
    }
    if space(s[i]) {
        return whitespace(s, i, false, false);
    }
    None
}

/// `\p{N}`
fn one_number(s: &[char], i: usize) -> Option<usize> {
    number(s[i]).then_some(i + 1)
}

/// `\p{N}+`
fn number_run(s: &[char], i: usize) -> Option<usize> {
    number(s[i]).then(|| run(s, i, number))
}

/// `[\p{P}\$\+<=>\^~\|]+`
fn punctuation_run(s: &[char], i: usize) -> Option<usize> {
    let class = |c: char| in_table(&PUNCTUATION, c) || "$+<=>^~|".contains(c);
    class(s[i]).then(|| i + s[i..].iter().take_while(|&&c| class(c)).count())
}

/// `[0-9][0-9][0-9]`
fn three_ascii_digits(s: &[char], i: usize) -> Option<usize> {
    let digits = s.get(i..i + 3)?;
    digits.iter().all(char::is_ascii_digit).then_some(i + 3)
}
