//! The hand-written pre-tokenizer scanners against llama.cpp's expressions themselves, run by a
//! regex engine with look-ahead (fancy-regex, a dev-dependency), on the 137 stress strings and on
//! random strings drawn from letters, digits, punctuation and whitespace of several scripts.

mod common;

use common::Rng;
use fancy_regex::Regex;
use kopitiam_wasm::model::tokenizer::pre_tokenize;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// llama.cpp's expressions (llama-vocab.cpp), per pre-tokenizer name, in step order.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const EXPRESSIONS: &[(&str, &[&str])] = &[
    (
        "llama-bpe",
        &[
            r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ],
    ),
    (
        "qwen2",
        &[
            r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ],
    ),
    ("smollm", &[r"\p{N}", GPT2]),
    ("gpt-2", &[GPT2]),
    (
        "default",
        &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    ),
];

/// What llama.cpp's `unicode_regex_split` makes of `text`: each expression splits each piece of
/// the previous one into its matches and the gaps between them.
fn oracle(steps: &[Regex], text: &str) -> Vec<(usize, usize)> {
    let mut pieces = vec![(0, text.len())];
    for re in steps {
        let mut next = Vec::new();
        for &(lo, hi) in &pieces {
            let mut at = lo;
            for m in re.find_iter(&text[lo..hi]) {
                let m = m.unwrap();
                let (s, e) = (lo + m.start(), lo + m.end());
                if s == e {
                    continue;
                }
                if s > at {
                    next.push((at, s));
                }
                next.push((s, e));
                at = e;
            }
            if at < hi {
                next.push((at, hi));
            }
        }
        pieces = next;
    }
    pieces
}

fn compiled() -> Vec<(&'static str, Vec<Regex>)> {
    EXPRESSIONS
        .iter()
        .map(|(name, exprs)| {
            (
                *name,
                exprs.iter().map(|e| Regex::new(e).unwrap()).collect(),
            )
        })
        .collect()
}

fn check(texts: impl IntoIterator<Item = String>) -> usize {
    let all = compiled();
    let mut n = 0;
    for text in texts {
        for (name, steps) in &all {
            let want = oracle(steps, &text);
            assert_eq!(pre_tokenize(name, &text).unwrap(), want, "{name} {text:?}");
        }
        n += 1;
    }
    n
}

#[test]
fn scanners_equal_the_expressions_on_the_stress_strings() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("fixtures/tokenizers/qwen.json")).unwrap();
    let texts = cases
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string());
    assert_eq!(check(texts), 137);
}

#[test]
fn scanners_equal_the_expressions_on_random_strings() {
    // Characters whose classes are the same in every recent Unicode version.
    const POOL: &str = "aZé ß'sStTrReEvVmMlLdD0123456789٠١२३๑ ¼½Ⅻ\t\n\r\u{b}\u{c}\u{a0}\u{2003}\u{3000}\u{85}\
        .,;:!?-_()[]{}<>@#$%^&*+=|~`\"/\\«»“”¿¡…—中文한국어русскийΑθήναעבריתالعربيةहिन्दी😀👍🏽\u{200d}\u{301}";
    let pool: Vec<char> = POOL.chars().collect();
    let mut rng = Rng::new(7);
    let texts = (0..3000).map(|_| {
        let len = 1 + rng.below(24);
        (0..len)
            .map(|_| pool[rng.below(pool.len())])
            .collect::<String>()
    });
    assert_eq!(check(texts), 3000);
}

#[test]
fn unknown_pre_tokenizers_are_named() {
    let e = pre_tokenize("mystery", "x").unwrap_err();
    assert_eq!(e.code(), "UnsupportedModel");
    assert!(e.to_string().contains("mystery") && e.to_string().contains("llama-bpe"));
}
