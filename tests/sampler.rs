//! Greedy and seeded sampling: filters checked on hand-made distributions, reproducibility, and
//! a statistical check of the final draw.

mod common;

use common::{assert_err, Rng};
use kopitiam_wasm::model::sampler::{greedy, Sampler, SamplerConfig};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// No filters, temperature 1: a plain softmax draw.
fn plain(seed: u64) -> SamplerConfig {
    SamplerConfig {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        repeat_penalty: 1.0,
        repeat_last_n: 64,
        seed,
    }
}

fn ln(p: &[f32]) -> Vec<f32> {
    p.iter().map(|p| p.ln()).collect()
}

/// Candidate ids, sorted.
fn cand_ids(s: &mut Sampler, logits: &[f32], history: &[u32]) -> Vec<u32> {
    let mut ids: Vec<u32> = s
        .candidates(logits, history)
        .unwrap()
        .iter()
        .map(|c| c.0)
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn default_config() {
    let c = SamplerConfig::default();
    assert_eq!(c.temperature, 1.0);
    assert_eq!(c.top_k, 40);
    assert_eq!(c.top_p, 0.95);
    assert_eq!(c.min_p, 0.05);
    assert_eq!(c.repeat_penalty, 1.0);
    assert_eq!(c.repeat_last_n, 64);
    assert_eq!(c.seed, 0);
    assert_eq!(Sampler::new(c).config(), &c);
}

#[test]
fn greedy_takes_the_first_maximum_and_ignores_nan() {
    assert_eq!(greedy(&[1.0, 3.0, 3.0, 2.0]), Some(1));
    assert_eq!(greedy(&[7.0]), Some(0));
    assert_eq!(greedy(&[f32::NAN, 1.0, f32::NAN, 5.0, f32::NAN]), Some(3));
    assert_eq!(greedy(&[f32::NAN, -1.0]), Some(1));
    assert_eq!(greedy(&[2.0, f32::INFINITY, f32::INFINITY]), Some(1));
    assert_eq!(greedy(&[f32::NEG_INFINITY, f32::NEG_INFINITY]), Some(0));
    assert_eq!(greedy(&[-0.0, 0.0]), Some(0));
    assert_eq!(greedy(&[]), None);
    assert_eq!(greedy(&[f32::NAN, f32::NAN]), None);
}

#[test]
fn temperature_zero_is_greedy() {
    let mut rng = Rng::new(1);
    for seed in 0..20 {
        let mut logits = rng.vec(1000, 4.0);
        logits[rng.below(1000)] = f32::NAN;
        // Quantize to create ties.
        logits.iter_mut().for_each(|l| *l = (*l * 2.0).round());
        for temperature in [0.0, -1.0] {
            let mut s = Sampler::new(SamplerConfig {
                temperature,
                seed,
                ..SamplerConfig::default()
            });
            assert_eq!(Some(s.sample(&logits, &[]).unwrap()), greedy(&logits));
        }
    }
}

#[test]
fn top_k_one_is_greedy_for_any_seed() {
    let mut rng = Rng::new(2);
    for seed in 0..50 {
        let mut logits = rng.vec(500, 3.0);
        logits.iter_mut().for_each(|l| *l = l.round()); // many ties at the maximum
        logits[rng.below(500)] = f32::NAN;
        let mut s = Sampler::new(SamplerConfig {
            top_k: 1,
            temperature: 1.5,
            ..plain(seed)
        });
        for _ in 0..3 {
            assert_eq!(Some(s.sample(&logits, &[]).unwrap()), greedy(&logits));
        }
    }
}

#[test]
fn same_seed_same_sequence() {
    let mut rng = Rng::new(3);
    let steps: Vec<Vec<f32>> = (0..200).map(|_| rng.vec(64, 1.0)).collect();
    let run = |seed: u64| -> Vec<u32> {
        let mut s = Sampler::new(plain(seed));
        let mut history = Vec::new();
        for l in &steps {
            let id = s.sample(l, &history).unwrap();
            history.push(id);
        }
        history
    };
    assert_eq!(run(5), run(5));
    assert_eq!(run(0), run(0));
    assert_ne!(run(5), run(6));
    assert_ne!(run(0), run(1));

    // reseed restarts the sequence; candidates() does not consume randomness.
    let mut s = Sampler::new(plain(9));
    let first: Vec<u32> = steps.iter().map(|l| s.sample(l, &[]).unwrap()).collect();
    s.reseed(9);
    assert_eq!(s.config().seed, 9);
    let mut again = Vec::new();
    for l in &steps {
        s.candidates(l, &[]).unwrap();
        again.push(s.sample(l, &[]).unwrap());
    }
    assert_eq!(first, again);
}

#[test]
fn top_k_keeps_the_k_largest_with_low_ids_on_ties() {
    let mut s = Sampler::new(SamplerConfig {
        top_k: 3,
        ..plain(0)
    });
    let logits = [1.0, 5.0, 3.0, 5.0, 3.0, 0.0];
    assert_eq!(cand_ids(&mut s, &logits, &[]), vec![1, 2, 3]);
    // k >= n keeps everything.
    let mut s = Sampler::new(SamplerConfig {
        top_k: 10,
        ..plain(0)
    });
    assert_eq!(cand_ids(&mut s, &logits, &[]), vec![0, 1, 2, 3, 4, 5]);
    // Samples stay inside the top-k.
    let mut s = Sampler::new(SamplerConfig {
        top_k: 2,
        ..plain(4)
    });
    for _ in 0..200 {
        let id = s.sample(&logits, &[]).unwrap();
        assert!(id == 1 || id == 3, "{id}");
    }
}

/// Top-k over thousands of logits against a full sort (NaN dropped, ties to the lower id):
/// few distinct values, so ties fall across the blocks the filter skips by their maximum; a NaN
/// run over several blocks; rising and falling trends, so the bar rises early or late.
#[test]
fn top_k_on_long_logits_matches_a_full_sort() {
    let mut rng = Rng::new(17);
    let n = 5_000;
    let shapes: [&dyn Fn(usize) -> f32; 3] = [&|_| 0.0, &|i| i as f32 / 1_000.0, &|i| {
        -(i as f32) / 1_000.0
    }];
    for (c, trend) in shapes.iter().enumerate() {
        let logits: Vec<f32> = (0..n)
            .map(|i| match i {
                700..1_500 => f32::NAN,
                _ => trend(i) + (rng.f32() * 8.0).floor(),
            })
            .collect();
        for k in [1, 5, 40, 300] {
            let mut want: Vec<u32> = (0..n as u32)
                .filter(|&i| !logits[i as usize].is_nan())
                .collect();
            want.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
            want.truncate(k);
            want.sort_unstable();
            let mut s = Sampler::new(SamplerConfig {
                top_k: k,
                ..plain(0)
            });
            assert_eq!(cand_ids(&mut s, &logits, &[]), want, "shape {c}, k {k}");
        }
    }
}

/// A sampler picks the top exactly for a valid greedy configuration without a repetition
/// penalty; for each that does, `sample` returns the first largest logit (a naive search) with
/// the history holding it.
#[test]
fn picks_the_top_only_where_sample_returns_the_first_largest() {
    let logits = [1.0, 4.0, f32::NAN, 4.0, -2.0, 3.5];
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..plain(3)
    };
    for (c, picks) in [
        (greedy, true),
        (
            SamplerConfig {
                temperature: -1.0,
                top_k: 2,
                ..greedy
            },
            true,
        ),
        (
            SamplerConfig {
                repeat_penalty: 2.0,
                repeat_last_n: 0,
                ..greedy
            },
            true,
        ),
        (
            SamplerConfig {
                repeat_penalty: 2.0,
                ..greedy
            },
            false,
        ),
        (
            SamplerConfig {
                top_p: 2.0,
                ..greedy
            },
            false,
        ),
        (plain(3), false),
    ] {
        let mut s = Sampler::new(c);
        assert_eq!(s.picks_the_top(), picks, "{c:?}");
        if picks {
            assert_eq!(s.sample(&logits, &[1, 3]).unwrap(), 1, "{c:?}");
        }
    }
}

#[test]
fn top_p_keeps_the_smallest_sufficient_prefix() {
    // p = 0.5 (id 3), 0.2 (id 0), 0.15 (id 4), 0.1 (id 1), 0.05 (id 2).
    let logits = ln(&[0.2, 0.1, 0.05, 0.5, 0.15]);
    let check = |top_p: f32, want: &[u32]| {
        let mut s = Sampler::new(SamplerConfig { top_p, ..plain(0) });
        assert_eq!(cand_ids(&mut s, &logits, &[]), want, "top_p {top_p}");
    };
    check(0.45, &[3]); // 0.5 >= 0.45
    check(0.6, &[0, 3]); // 0.5 < 0.6 <= 0.7
    check(0.75, &[0, 3, 4]); // 0.7 < 0.75 <= 0.85
    check(0.9, &[0, 1, 3, 4]); // 0.85 < 0.9 <= 0.95
    check(0.99, &[0, 1, 2, 3, 4]);
    check(1.0, &[0, 1, 2, 3, 4]); // off
    check(0.0, &[3]); // always at least one
}

#[test]
fn top_p_on_a_large_vocabulary_matches_a_full_sort() {
    // More candidates than the first sorted chunk, so the prefix has to grow.
    let mut rng = Rng::new(4);
    let cases = [
        (0.5f32, false),
        (0.9, false),
        (0.99, false),
        (0.999, false),
        (0.3, true),
        (0.95, true),
    ];
    for (round, (top_p, ties)) in cases.into_iter().enumerate() {
        let mut logits = rng.vec(5000, 3.0);
        if ties {
            // Few distinct values: the cut falls among equal logits, which go by id.
            logits
                .iter_mut()
                .for_each(|l| *l = (*l * 2.0).round() / 2.0 + 0.0); // + 0.0: no -0
        }
        let mut order: Vec<usize> = (0..logits.len()).collect();
        order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
        let max = logits[order[0]];
        let total: f64 = logits.iter().map(|&l| ((l - max) as f64).exp()).sum();
        let mut cum = 0.0;
        let mut want = Vec::new();
        for &i in &order {
            cum += ((logits[i] - max) as f64).exp();
            want.push(i as u32);
            if cum >= top_p as f64 * total {
                break;
            }
        }
        want.sort_unstable();
        let mut s = Sampler::new(SamplerConfig { top_p, ..plain(0) });
        let got = cand_ids(&mut s, &logits, &[]);
        // Summation order may move the cut by one token at most.
        assert!(
            (got.len() as i64 - want.len() as i64).abs() <= 1,
            "round {round}: {} vs {}",
            got.len(),
            want.len()
        );
        let common = got.len().min(want.len());
        assert!(common > 100, "round {round}: only {common} candidates");
        let (shorter, longer) = if got.len() <= want.len() {
            (&got, &want)
        } else {
            (&want, &got)
        };
        assert!(shorter.iter().all(|i| longer.contains(i)), "round {round}");
    }
}

#[test]
fn min_p_drops_tokens_below_a_fraction_of_the_best() {
    // p = 0.5, 0.2, 0.04, 0.3, 0.01.
    let logits = ln(&[0.5, 0.2, 0.04, 0.3, 0.01]);
    let check = |min_p: f32, want: &[u32]| {
        let mut s = Sampler::new(SamplerConfig { min_p, ..plain(0) });
        assert_eq!(cand_ids(&mut s, &logits, &[]), want, "min_p {min_p}");
    };
    check(0.1, &[0, 1, 3]); // p >= 0.05
    check(0.5, &[0, 3]); // p >= 0.25
    check(0.05, &[0, 1, 2, 3]); // p >= 0.025
    check(0.0, &[0, 1, 2, 3, 4]); // off
    check(1.0, &[0]);
    check(5.0, &[0]); // the best token always stays
}

#[test]
fn filters_chain_in_order() {
    // top-k 4 → {0.3, 0.25, 0.2, 0.15}; top-p 0.6 over those (renormalized by 0.9):
    // 0.333, 0.611 → {0.3, 0.25}; min-p 0.9 → p >= 0.27 → {0.3}.
    let logits = ln(&[0.05, 0.3, 0.15, 0.05, 0.25, 0.2]);
    let base = SamplerConfig {
        top_k: 4,
        ..plain(0)
    };
    let mut s = Sampler::new(base);
    assert_eq!(cand_ids(&mut s, &logits, &[]), vec![1, 2, 4, 5]);
    let mut s = Sampler::new(SamplerConfig { top_p: 0.6, ..base });
    assert_eq!(cand_ids(&mut s, &logits, &[]), vec![1, 4]);
    let mut s = Sampler::new(SamplerConfig {
        top_p: 0.6,
        min_p: 0.9,
        ..base
    });
    assert_eq!(cand_ids(&mut s, &logits, &[]), vec![1]);
    assert_eq!(s.sample(&logits, &[]).unwrap(), 1);
}

#[test]
fn repetition_penalty_flips_the_choice() {
    let greedy_cfg = |penalty: f32, last_n: usize| SamplerConfig {
        temperature: 0.0,
        repeat_penalty: penalty,
        repeat_last_n: last_n,
        ..plain(0)
    };
    // Positive logit: 2.0 / 1.2 = 1.67 < 1.8.
    let mut s = Sampler::new(greedy_cfg(1.2, 64));
    assert_eq!(s.sample(&[2.0, 1.8], &[]).unwrap(), 0);
    assert_eq!(s.sample(&[2.0, 1.8], &[0]).unwrap(), 1);
    // Non-positive logit: -1.0 * 1.2 = -1.2 < -1.1.
    assert_eq!(s.sample(&[-1.0, -1.1], &[]).unwrap(), 0);
    assert_eq!(s.sample(&[-1.0, -1.1], &[0]).unwrap(), 1);
    // Applied once per distinct id however often it repeats: 2.0 / 1.2 > 1.5.
    assert_eq!(s.sample(&[2.0, 1.5], &[0, 0, 0, 0]).unwrap(), 0);
    // Only the last `repeat_last_n` ids count; ids outside the logits are ignored.
    let mut s = Sampler::new(greedy_cfg(1.2, 2));
    assert_eq!(s.sample(&[2.0, 1.8, 0.0], &[0, 2, 2]).unwrap(), 0);
    assert_eq!(s.sample(&[2.0, 1.8, 0.0], &[2, 0, 99]).unwrap(), 1);
    // Off when the penalty is 1 or the window is 0.
    let mut s = Sampler::new(greedy_cfg(1.0, 64));
    assert_eq!(s.sample(&[2.0, 1.8], &[0]).unwrap(), 0);
    let mut s = Sampler::new(greedy_cfg(1.2, 0));
    assert_eq!(s.sample(&[2.0, 1.8], &[0]).unwrap(), 0);
    // The penalized logits are what the candidates report.
    let mut s = Sampler::new(SamplerConfig {
        repeat_penalty: 2.0,
        ..plain(0)
    });
    let mut c = s.candidates(&[4.0, -1.0, 1.0], &[0, 1]).unwrap().to_vec();
    c.sort_by_key(|x| x.0);
    assert_eq!(c, vec![(0, 2.0), (1, -2.0), (2, 1.0)]);
}

#[test]
fn draws_follow_the_softmax() {
    // logits [ln 1, ln 3] at temperature 1: id 1 with probability 0.75.
    let logits = ln(&[1.0, 3.0]);
    let mut s = Sampler::new(plain(11));
    let n = 20_000;
    let ones = (0..n)
        .filter(|_| s.sample(&logits, &[]).unwrap() == 1)
        .count();
    let frac = ones as f64 / n as f64;
    assert!((frac - 0.75).abs() < 0.02, "{frac}");

    // Temperature 0.5 squares the odds: p ∝ [1, 9] → 0.9.
    let mut s = Sampler::new(SamplerConfig {
        temperature: 0.5,
        ..plain(12)
    });
    let ones = (0..n)
        .filter(|_| s.sample(&logits, &[]).unwrap() == 1)
        .count();
    let frac = ones as f64 / n as f64;
    assert!((frac - 0.9).abs() < 0.02, "{frac}");

    // Uniform over 4: each about a quarter.
    let mut s = Sampler::new(plain(13));
    let mut counts = [0usize; 4];
    for _ in 0..n {
        counts[s.sample(&[0.5; 4], &[]).unwrap() as usize] += 1;
    }
    for c in counts {
        assert!((c as f64 / n as f64 - 0.25).abs() < 0.02, "{counts:?}");
    }
}

#[test]
fn nan_and_infinite_logits() {
    let mut s = Sampler::new(SamplerConfig {
        temperature: 5.0,
        ..plain(1)
    });
    let logits = [f32::NAN, 0.0, f32::NAN, 0.1, f32::NAN];
    for _ in 0..500 {
        let id = s.sample(&logits, &[]).unwrap();
        assert!(id == 1 || id == 3, "{id}");
    }
    // +inf dominates: uniform among the +inf logits.
    let logits = [0.0, f32::INFINITY, 1.0, f32::INFINITY];
    let mut seen = [0usize; 4];
    for _ in 0..400 {
        seen[s.sample(&logits, &[]).unwrap() as usize] += 1;
    }
    assert_eq!((seen[0], seen[2]), (0, 0));
    assert!(seen[1] > 100 && seen[3] > 100, "{seen:?}");
    // All -inf: still some valid id, no panic.
    let logits = [f32::NEG_INFINITY; 3];
    assert!(s.sample(&logits, &[]).unwrap() < 3);
    // -inf among finite logits is never drawn.
    for _ in 0..200 {
        assert_eq!(s.sample(&[f32::NEG_INFINITY, 0.0], &[]).unwrap(), 1);
    }
}

#[test]
fn bad_input_is_an_error() {
    let mut s = Sampler::new(SamplerConfig::default());
    assert_err(s.sample(&[], &[]), "InvalidArgument");
    assert_err(s.sample(&[f32::NAN; 3], &[]), "InvalidArgument");
    assert_err(s.candidates(&[], &[]), "InvalidArgument");
    let mut g = Sampler::new(SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    });
    assert_err(g.sample(&[f32::NAN; 3], &[]), "InvalidArgument");
    assert_err(g.sample(&[], &[]), "InvalidArgument");
    let bad = [
        SamplerConfig {
            temperature: f32::NAN,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            temperature: f32::INFINITY,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            top_p: f32::NAN,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            min_p: -0.1,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            min_p: f32::NAN,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            repeat_penalty: 0.0,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            repeat_penalty: f32::NAN,
            ..SamplerConfig::default()
        },
    ];
    for c in bad {
        assert_err(Sampler::new(c).sample(&[1.0, 2.0], &[]), "InvalidArgument");
    }
}

#[test]
fn gemma_sized_logits() {
    // 262 144 logits with the default chain: the draw is one of the 40 best.
    let mut rng = Rng::new(5);
    let logits = rng.vec(262_144, 8.0);
    let mut best: Vec<u32> = (0..logits.len() as u32).collect();
    best.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
    best.truncate(40);
    let mut s = Sampler::new(SamplerConfig::default());
    let mut history = Vec::new();
    for _ in 0..20 {
        let id = s.sample(&logits, &history).unwrap();
        assert!(best.contains(&id), "{id}");
        history.push(id);
    }
    assert!(s.candidates(&logits, &[]).unwrap().len() <= 40);
    // Without top-k, top-p alone has to grow its sorted prefix over the whole vocabulary.
    let mut s = Sampler::new(SamplerConfig {
        top_k: 0,
        ..SamplerConfig::default()
    });
    for _ in 0..5 {
        assert!((s.sample(&logits, &[]).unwrap() as usize) < logits.len());
    }
}
