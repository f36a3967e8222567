//! Fidelity of the real Gemma 3 270M (the Q4_0 file we requantize, or the Q4_K_M file people
//! download: mixed Q5_0/Q8_0/Q4_K/Q6_K) against llama.cpp's outputs (tests/fixtures/
//! gemma-3-270m-q4_0 and -q4_k_m, from shared/reference). The models are not in the repo (Gemma
//! Terms of Use): `scripts/prepare-model.sh` puts both in the cache.
//!
//!   cargo run --release --example fidelity_real -- MODEL.gguf [REFERENCE_DIR]
//!
//! REFERENCE_DIR (default: the Q4_0 one) holds `logits.json` or `reference.json` (`[{prompt,
//! tokens, top5, greedy}]`), `last_logits.f32`, and optionally `tokenizer.json`.
//!
//! Checks (exit status 1 on failure): identical token ids for every tokenizer prompt; top-1
//! agreement at every prompt position where llama.cpp's top-1/top-2 margin exceeds 2 × the
//! tolerance; greedy continuations teacher-forced with the same margin rule. Reports max-abs and
//! cosine of the last-position logits.

use kopitiam_wasm::model::{Logits, Model};
use serde_json::Value;

const DEFAULT_DIR: &str = "tests/fixtures/gemma-3-270m-q4_0";
const TOL: f32 = 0.25;

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b })
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: fidelity_real MODEL.gguf");
    let dir = std::env::args()
        .nth(2)
        .unwrap_or_else(|| DEFAULT_DIR.to_string());
    let model = Model::load(std::fs::read(&path).unwrap()).unwrap();
    let vocab = model.config().n_vocab;
    let mut failures = 0;
    let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
    let logits_json = read("logits.json").or_else(|| read("reference.json"));
    let lg: Value =
        serde_json::from_str(&logits_json.expect("no logits.json or reference.json")).unwrap();
    // The tokenizer prompts: tokenizer.json where there is one, else the logit prompts.
    let tok: Value = read("tokenizer.json")
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|| lg.clone());
    let cases = tok.as_array().unwrap();
    let same = cases
        .iter()
        .filter(|c| {
            let ok = model
                .tokenizer()
                .encode(c["prompt"].as_str().unwrap(), true, true)
                == ids(&c["tokens"]);
            if !ok {
                eprintln!("token mismatch: {:?}", c["prompt"]);
            }
            ok
        })
        .count();
    println!(
        "tokenizer: {same}/{} prompts identical to llama.cpp",
        cases.len()
    );
    failures += cases.len() - same;

    let last = std::fs::read(format!("{dir}/last_logits.f32")).unwrap();
    let (mut top1, mut positions, mut decisive_miss, mut greedy_same, mut greedy_steps) =
        (0, 0, 0, 0, 0);
    for (ci, c) in lg.as_array().unwrap().iter().enumerate() {
        let tokens = ids(&c["tokens"]);
        let mut s = model.session(tokens.len() + 40).unwrap();
        let all = s.eval(&model, &tokens, Logits::All).unwrap().to_vec();
        for (p, top) in c["top5"].as_array().unwrap().iter().enumerate() {
            let row = &all[p * vocab..(p + 1) * vocab];
            let (want, margin) = (
                top[0][0].as_u64().unwrap() as usize,
                (top[0][1].as_f64().unwrap() - top[1][1].as_f64().unwrap()) as f32,
            );
            positions += 1;
            if argmax(row) == want {
                top1 += 1;
            } else if margin > 2.0 * TOL {
                decisive_miss += 1;
                eprintln!(
                    "prompt {ci} position {p}: top-1 {} vs llama.cpp {want} (margin {margin})",
                    argmax(row)
                );
            }
        }
        let ours = &all[(tokens.len() - 1) * vocab..tokens.len() * vocab];
        let theirs: Vec<f32> = last[ci * vocab * 4..(ci + 1) * vocab * 4]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let max_abs = ours
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        let dot: f64 = ours
            .iter()
            .zip(&theirs)
            .map(|(&a, &b)| a as f64 * b as f64)
            .sum();
        let na: f64 = ours
            .iter()
            .map(|&a| a as f64 * a as f64)
            .sum::<f64>()
            .sqrt();
        let nb: f64 = theirs
            .iter()
            .map(|&b| b as f64 * b as f64)
            .sum::<f64>()
            .sqrt();
        println!(
            "prompt {ci}: last-logit max-abs {max_abs:.4}, cosine {:.6}",
            dot / (na * nb)
        );

        let mut logits = ours.to_vec();
        for &want in &ids(&c["greedy"]) {
            let mine = argmax(&logits);
            let gap = logits[mine] - logits[want as usize];
            greedy_steps += 1;
            if mine == want as usize {
                greedy_same += 1;
            } else if gap > 2.0 * TOL {
                decisive_miss += 1;
                eprintln!("prompt {ci}: greedy chose {mine} over {want} by {gap}");
            }
            logits = s.eval(&model, &[want], Logits::Last).unwrap().to_vec();
        }
    }
    println!("top-1 agreement: {top1}/{positions} prompt positions; greedy: {greedy_same}/{greedy_steps} steps");
    failures += decisive_miss;
    if failures > 0 {
        eprintln!("{failures} failures");
        std::process::exit(1);
    }
}
