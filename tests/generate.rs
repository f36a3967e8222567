//! The generation loop and prefix reuse. The oracle for reuse is a fresh session: served from a
//! kept cache, a conversation must give exactly the greedy tokens (and logits) that evaluating
//! the whole prompt from scratch gives. Stop strings are checked against the same generation run
//! without them; saved sessions against the session they came from.

mod common;

use common::assert_err;
use kopitiam_wasm::model::chat::ChatMessage;
use kopitiam_wasm::model::generate::{Finish, GenerateConfig, Generation};
use kopitiam_wasm::model::sampler::SamplerConfig;
use kopitiam_wasm::model::{Logits, Model, Session};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const GEMMA: &[u8] = include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");
const QWEN: &[u8] = include_bytes!("fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf");

fn greedy(max_tokens: usize, stop: &[&str]) -> GenerateConfig {
    GenerateConfig {
        max_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
        sampler: SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        },
    }
}

/// Runs a whole generation: (tokens, streamed pieces, finish, cached prompt tokens).
fn run(
    model: &Model,
    session: &mut Session,
    ids: &[u32],
    cfg: GenerateConfig,
) -> (Vec<u32>, Vec<String>, Finish, usize) {
    let mut g = Generation::start(model, session, ids, cfg).unwrap();
    let mut pieces = Vec::new();
    while let Some(p) = g.step(model, session).unwrap() {
        pieces.push(p.text);
    }
    (g.tokens().to_vec(), pieces, g.finish().unwrap(), g.cached())
}

fn chat_ids(model: &Model, messages: &[ChatMessage]) -> Vec<u32> {
    model.chat_format().tokens(messages, true, None).unwrap()
}

/// Several chat turns, each reply appended to the conversation: the kept session's tokens equal
/// a fresh session's on every turn; reuse is the whole common prefix with what the cache held,
/// which always covers the previous prompt (the template of the longer conversation starts with
/// the shorter one's text). How much of the reply is reused depends on whether its text
/// re-tokenizes to the sampled ids: `reply_reused` says whether this fixture's replies do (the
/// tiny Gemma's random replies are byte-fallback junk that turns into U+FFFD, so they do not).
fn conversation_matches_fresh(bytes: &[u8], name: &str, reply_reused: bool) {
    let model = Model::load(bytes.to_vec()).unwrap();
    let mut kept = model.session(2048).unwrap();
    let mut messages = vec![ChatMessage::new("system", "You are terse.")];
    let mut previous_prompt = 0;
    for (turn, question) in ["Hello there", "What is 2 + 2?", "And in French?", "Thanks!"]
        .iter()
        .enumerate()
    {
        messages.push(ChatMessage::new("user", *question));
        let ids = chat_ids(&model, &messages);
        let held: Vec<u32> = kept.tokens().to_vec();
        let (tokens, pieces, _, cached) = run(&model, &mut kept, &ids, greedy(12, &[]));
        let mut fresh = model.session(2048).unwrap();
        let (want, _, _, none) = run(&model, &mut fresh, &ids, greedy(12, &[]));
        assert_eq!(none, 0);
        assert_eq!(tokens, want, "{name} turn {turn}: reused vs fresh");
        println!(
            "{name} turn {turn}: {cached} of {} prompt tokens from the cache",
            ids.len()
        );
        let lcp = held.iter().zip(&ids).take_while(|(a, b)| a == b).count();
        assert_eq!(
            cached,
            lcp.min(ids.len() - 1),
            "{name} turn {turn}: all that matched"
        );
        assert!(
            cached >= previous_prompt,
            "{name} turn {turn}: the previous prompt is reused"
        );
        if reply_reused && turn > 0 {
            assert!(
                cached > previous_prompt,
                "{name} turn {turn}: the reply is reused"
            );
        }
        previous_prompt = ids.len();
        messages.push(ChatMessage::new("assistant", pieces.concat()));
    }
}

#[test]
fn chat_turns_from_the_cache_equal_a_fresh_session_gemma_spm() {
    conversation_matches_fresh(GEMMA, "tiny-gemma3", false);
}

#[test]
fn chat_turns_from_the_cache_equal_a_fresh_session_qwen_bpe() {
    conversation_matches_fresh(QWEN, "tiny-qwen2", true);
}

#[test]
fn a_prompt_that_parts_mid_reply_truncates_the_cache_there() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let prompt = model.tokenizer().encode("The quick brown fox", true, true);
    let mut kept = model.session(256).unwrap();
    let (reply, ..) = run(&model, &mut kept, &prompt, greedy(20, &[]));
    // The cache holds the prompt and all but the last reply token (never evaluated).
    assert_eq!(kept.tokens().len(), prompt.len() + reply.len() - 1);
    // A new prompt that keeps 7 reply tokens and then goes elsewhere.
    let mut next = [&prompt[..], &reply[..7]].concat();
    next.extend(model.tokenizer().encode(" jumps", false, false));
    let (tokens, _, _, cached) = run(&model, &mut kept, &next, greedy(10, &[]));
    assert_eq!(cached, prompt.len() + 7);
    let mut fresh = model.session(256).unwrap();
    let (want, ..) = run(&model, &mut fresh, &next, greedy(10, &[]));
    assert_eq!(tokens, want);
    // The same logits too, bit for bit: the kept positions are what a fresh pass stores.
    let a = kept.eval(&model, &[5], Logits::Last).unwrap().to_vec();
    let b = fresh.eval(&model, &[5], Logits::Last).unwrap().to_vec();
    assert_eq!(a, b);
}

#[test]
fn an_identical_prompt_reevaluates_only_its_last_token() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let ids = model.tokenizer().encode("Hello world", true, true);
    let mut s = model.session(64).unwrap();
    let (first, ..) = run(&model, &mut s, &ids, greedy(5, &[]));
    let (again, _, _, cached) = run(&model, &mut s, &ids, greedy(5, &[]));
    assert_eq!((first, cached), (again, ids.len() - 1));
}

#[test]
fn stop_strings_end_the_text_before_them_and_are_never_streamed() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let ids = model.tokenizer().encode("Hello world", true, true);
    let mut s = model.session(128).unwrap();
    let (_, pieces, finish, _) = run(&model, &mut s, &ids, greedy(40, &[]));
    assert_eq!(
        finish,
        Finish::MaxTokens,
        "the fixture runs 40 tokens without an EOG"
    );
    let full = pieces.concat();
    // A stop string across the boundary of two non-empty pieces, and one inside a piece.
    let k = (1..pieces.len() - 1)
        .find(|&k| pieces[k].chars().count() >= 2 && !pieces[k + 1].is_empty())
        .expect("two pieces to straddle");
    let tail: String = pieces[k]
        .chars()
        .rev()
        .take(2)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let head: String = pieces[k + 1].chars().take(2).collect();
    let across = format!("{tail}{head}");
    for stop in [across.as_str(), pieces[k].as_str()] {
        let at = full.find(stop).unwrap();
        let (_, got, finish, _) = run(&model, &mut s, &ids, greedy(40, &[stop]));
        assert_eq!(finish, Finish::Stop);
        assert_eq!(got.concat(), full[..at], "stop {stop:?}");
        // Streaming never ran ahead of the final text.
        let mut streamed = String::new();
        for p in &got {
            streamed.push_str(p);
            assert!(full[..at].starts_with(&streamed));
        }
    }
}

#[test]
fn max_tokens_and_a_full_context_end_without_a_wasted_pass() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let ids = model.tokenizer().encode("Hello world", true, true);
    let mut s = model.session(ids.len() + 3).unwrap();
    let (tokens, _, finish, _) = run(&model, &mut s, &ids, greedy(50, &[]));
    // Three free positions: three tokens are evaluated, the fourth is sampled and returned,
    // then the context is full.
    assert_eq!((tokens.len(), finish), (4, Finish::ContextFull));
    assert_eq!(s.tokens().len(), s.capacity());
    let (tokens, _, finish, _) = run(&model, &mut s, &ids, greedy(0, &[]));
    assert_eq!((tokens.len(), finish), (0, Finish::MaxTokens));
    let mut tight = model.session(ids.len()).unwrap();
    assert_err(
        Generation::start(&model, &mut tight, &ids, greedy(5, &[])).map(|_| ()),
        "ContextFull",
    );
}

#[test]
fn a_saved_session_restores_exactly_and_rejects_damage_and_other_models() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let ids = model.tokenizer().encode("Hello world, again", true, true);
    let mut s = model.session(64).unwrap();
    run(&model, &mut s, &ids, greedy(6, &[]));
    let bytes = s.save(&model).unwrap();
    let cfg = model.config();
    // Header 28 bytes + 4 per token + 2·kv_dim f16 per layer and position + checksum.
    let n = s.tokens().len();
    assert_eq!(
        bytes.len(),
        28 + 4 * n + n * cfg.n_layer * 2 * cfg.kv_dim() * 2 + 8
    );
    let mut restored = model.session(64).unwrap();
    restored.load(&model, &bytes).unwrap();
    assert_eq!(restored.tokens(), s.tokens());
    let a = s.eval(&model, &[7], Logits::Last).unwrap().to_vec();
    let b = restored.eval(&model, &[7], Logits::Last).unwrap().to_vec();
    assert_eq!(a, b);

    let mut damaged = bytes.clone();
    damaged[40] ^= 1;
    assert_err(restored.load(&model, &damaged), "InvalidSession");
    assert_err(
        restored.load(&model, &bytes[..bytes.len() - 1]),
        "InvalidSession",
    );
    assert_err(
        restored.load(&model, b"not a session at all, no"),
        "InvalidSession",
    );
    assert_err(restored.load(&model, &[]), "InvalidSession");
    // The failed loads left the session as it was.
    assert_eq!(restored.tokens().len(), n + 1);
    let mut small = model.session(n - 1).unwrap();
    assert_err(small.load(&model, &bytes), "SessionMismatch");
    let other = Model::load(QWEN.to_vec()).unwrap();
    let mut q = other.session(64).unwrap();
    assert_err(q.load(&other, &bytes), "SessionMismatch");
}

/// The Gemma 3 (SentencePiece) and Qwen 2 (byte-level BPE) fixtures, each with a short prompt's
/// ids.
fn fixtures_with_a_prompt() -> [(Model, Vec<u32>); 2] {
    [GEMMA, QWEN].map(|file| {
        let model = Model::load(file.to_vec()).unwrap();
        let ids = model
            .tokenizer()
            .encode("The cat sat on the mat", true, true);
        (model, ids)
    })
}

/// `eval_last` with `top` returns the same logits as without, and the first largest of them (a
/// naive search); without `top`, none. Both fixtures, a prompt and decoded tokens.
#[test]
fn eval_last_finds_the_first_largest_logit_only_when_asked() {
    for (model, ids) in fixtures_with_a_prompt() {
        let (mut with, mut without) = (model.session(64).unwrap(), model.session(64).unwrap());
        let mut next = ids;
        for _ in 0..4 {
            let (a, _, none) = without.eval_last(&model, &next, false).unwrap();
            let a = a.to_vec();
            let (b, _, top) = with.eval_last(&model, &next, true).unwrap();
            assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
            let max = a.iter().copied().filter(|v| !v.is_nan()).reduce(f32::max);
            let first = a.iter().position(|&v| Some(v) == max).map(|i| i as u32);
            assert_eq!((top, none), (first, None));
            next = vec![first.unwrap()];
        }
    }
}

/// 64-bit FNV-1a, the saved-session checksum, so a test can forge well-summed bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn forged_session_headers_are_typed_errors_never_panics() {
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let mut s = model.session(32).unwrap();
    s.eval(&model, &[2, 5, 7], Logits::Last).unwrap();
    let bytes = s.save(&model).unwrap();
    let body = bytes.len() - 8;
    // Every header field (fingerprint, n_layer, kv_dim, n_tokens) set to extreme values, the checksum fixed up so the parser, not the checksum, must refuse them.
    let header = (8..28)
        .step_by(4)
        .map(|at| (at, &[0u32, 1, 4, 0x7FFF_FFFF, u32::MAX][..]));
    // ... and the first token id outside the vocabulary.
    for (at, values) in header.chain([(28, &[512u32, u32::MAX][..])]) {
        for &v in values {
            let mut forged = bytes[..body].to_vec();
            forged[at..at + 4].copy_from_slice(&v.to_le_bytes());
            if forged == bytes[..body] {
                continue;
            }
            forged.extend_from_slice(&fnv1a(&forged).to_le_bytes());
            let mut t = model.session(32).unwrap();
            let e = t.load(&model, &forged).unwrap_err();
            assert!(
                ["InvalidSession", "SessionMismatch"].contains(&e.code()),
                "byte {at} = {v}: {e}"
            );
            assert!(t.tokens().is_empty(), "a refused load changes nothing");
        }
    }
}

/// The section profile counts what the pass does, by hand: per forward pass one embedding and
/// one LM head, per layer one of each matmul section and four norm sections, and one sample per
/// token; profiling changes no token; off, no profile exists.
#[test]
fn profile_counts_every_section_and_changes_nothing() {
    use kopitiam_wasm::model::profile::{self, Section};
    let model = Model::load(GEMMA.to_vec()).unwrap();
    let ids = model
        .tokenizer()
        .encode("The capital of France is", true, false);
    let plain = run(
        &model,
        &mut model.session(64).unwrap(),
        &ids,
        greedy(6, &[]),
    )
    .0;

    profile::start();
    let mut session = model.session(64).unwrap();
    let (tokens, _, finish, _) = run(&model, &mut session, &ids, greedy(6, &[]));
    let p = profile::stop().unwrap();
    assert_eq!(tokens, plain);
    assert!(profile::take().is_none());

    // The prompt's pass, then one per token but the last (its pass is never needed).
    assert_eq!(finish, Finish::MaxTokens);
    let passes = tokens.len() as u64;
    let layers = model.config().n_layer as u64;
    assert_eq!(p.calls(Section::Embed), passes);
    assert_eq!(p.calls(Section::LmHead), passes);
    assert_eq!(p.calls(Section::Sample), tokens.len() as u64);
    for s in [
        Section::Qkv,
        Section::Attend,
        Section::AttnOut,
        Section::GateUp,
        Section::Down,
    ] {
        assert_eq!(p.calls(s), passes * layers, "{s:?}");
    }
    assert_eq!(p.calls(Section::Norms), 4 * passes * layers);
    // The RoPE tables once per pass, then each layer's biases, norms, rotation and cache store.
    assert_eq!(p.calls(Section::Rope), passes * (1 + layers));
    assert_eq!(p.calls(Section::Activation), passes * layers);
    assert!(p.ms(Section::Qkv) > 0.0 && p.total_ms() >= p.ms(Section::LmHead));
    // One logit row per pass: 2 operations per LM-head weight; the prompt's rows in the layers.
    let cfg = model.config();
    let head = (cfg.n_vocab * cfg.n_embd) as u64;
    assert_eq!(p.ops(Section::LmHead), 2 * head * passes);
    let rows = (ids.len() + tokens.len() - 1) as u64;
    let down = (cfg.n_embd * cfg.n_ff) as u64;
    assert_eq!(p.ops(Section::Down), 2 * down * rows * layers);
}

/// A prompt longer than one prefill pass (`PREFILL_CHUNK`) runs in chunks: its last logits are
/// bit for bit the last row of one unchunked pass over the same tokens (`Logits::All`). Natively
/// also in a one-thread pool, whose passes are half as long (`prefill_chunk`).
#[test]
fn chunked_prefill_equals_one_pass() {
    check_chunked_prefill();
    #[cfg(not(target_arch = "wasm32"))]
    {
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build();
        one.unwrap().install(|| {
            assert_eq!(kopitiam_wasm::model::session::prefill_chunk(), 64);
            check_chunked_prefill();
        });
    }
}

/// [`chunked_prefill_equals_one_pass`] on this thread's pool.
fn check_chunked_prefill() {
    use kopitiam_wasm::model::session::PREFILL_CHUNK;
    let model = Model::load(QWEN.to_vec()).unwrap();
    let vocab = model.config().n_vocab;
    let n = 2 * PREFILL_CHUNK + 37;
    let ids: Vec<u32> = (0..n as u32)
        .map(|i| (i * 7919 + 13) % vocab as u32)
        .collect();
    let mut a = model.session(512).unwrap();
    let last = a.eval(&model, &ids, Logits::Last).unwrap().to_vec();
    let mut b = model.session(512).unwrap();
    let all = b.eval(&model, &ids, Logits::All).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&last), bits(&all[(n - 1) * vocab..]));
    assert_eq!(a.tokens(), &ids[..]);

    // Too long for the context: ContextFull before any chunk, nothing kept.
    let mut c = model.session(n - 1).unwrap();
    assert_err(c.eval(&model, &ids, Logits::Last), "ContextFull");
    assert!(c.tokens().is_empty());
}

/// Tokens decoded one at a time give, bit for bit, the rows of one `Logits::All` pass over the
/// same tokens. With more threads than rows (natively on a multi-core machine; the threaded
/// wasm build) a decoded token's attention is spread over the threads by its query heads below
/// 192 positions and by blocks of positions from there (its scores, then its weighted values),
/// while a prompt's rows go up to four at a time (by blocks of keys; 250 rows leave two for the
/// last call): all must agree. The Gemma fixture has sliding-window layers (each of four rows
/// then sees other positions) and two query heads per KV head (`dot_grid` and `weighted_rows`
/// for two); the llama mix has four per KV head.
#[test]
fn decoded_tokens_equal_the_rows_of_one_pass() {
    const MIX: &[u8] = include_bytes!("fixtures/tiny-llama-mix/tiny-llama-mix.gguf");
    if kopitiam_wasm::num_threads() < 2 {
        eprintln!("one thread: only the row-per-thread attention path runs here");
    }
    for bytes in [GEMMA, MIX] {
        let model = Model::load(bytes.to_vec()).unwrap();
        let vocab = model.config().n_vocab;
        let n = 250; // past SPLIT_FROM (192), within the mix's 256-token context
        let ids: Vec<u32> = (0..n as u32)
            .map(|i| (i * 7919 + 13) % vocab as u32)
            .collect();
        let mut all = model.session(n).unwrap();
        let rows = all.eval(&model, &ids, Logits::All).unwrap().to_vec();
        let mut one = model.session(n).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (i, t) in ids.iter().enumerate() {
            let got = one.eval(&model, &[*t], Logits::Last).unwrap();
            assert_eq!(
                bits(got),
                bits(&rows[i * vocab..(i + 1) * vocab]),
                "token {i}"
            );
        }
    }
}

/// `Model::warm_up` (the engine runs it after loading) leaves nothing behind: a session's logits
/// afterwards are the bits a session computed before it, for SentencePiece (Gemma) and
/// byte-level BPE with a Jinja chat template (Qwen 2).
#[test]
fn warm_up_changes_no_result() {
    for (model, prompt) in fixtures_with_a_prompt() {
        let logits = |model: &Model| {
            let mut s = model.session(64).unwrap();
            s.eval(model, &prompt, Logits::Last).unwrap().to_vec()
        };
        let before = logits(&model);
        model.warm_up().unwrap();
        let after = logits(&model);
        assert!(before
            .iter()
            .zip(&after)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(before.len(), model.config().n_vocab);
    }
}

/// The warm-up fits whatever context the file declares, down to one position (it sizes its
/// batch, passes and generation to the room there is instead of failing the load).
#[test]
fn warm_up_fits_a_tiny_context() {
    use kopitiam_wasm::gguf::{GgufFile, Value};
    let f = GgufFile::parse(GEMMA).unwrap();
    for context in [1u32, 2, 3, 5, 9, 16] {
        let bytes = common::rewrite_gguf(&f, GEMMA, |k, v| {
            if k.ends_with(".context_length") {
                Value::U32(context)
            } else {
                v.clone()
            }
        });
        let model = Model::load(bytes).unwrap();
        assert_eq!(model.config().context_length, context as usize);
        model
            .warm_up()
            .unwrap_or_else(|e| panic!("context {context}: {e}"));
    }
}
