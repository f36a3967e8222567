//! SPM tokenizer, streaming decoder and Gemma chat format on small hand-built vocabularies whose
//! merges are worked out by hand in the comments.

mod common;

use common::{assert_err, Rng};
use kopitiam_wasm::model::chat::{format_gemma, ChatMessage};
use kopitiam_wasm::model::tokenizer::{StreamDecoder, TokenType, Tokenizer, TokenizerConfig};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

// GGUF token types.
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER: i32 = 4;
const UNUSED: i32 = 5;
const BYTE: i32 = 6;

const PAD: u32 = 0;
const EOS: u32 = 1;
const BOS: u32 = 2;
const UNK: u32 = 3;
const SOT: u32 = 4; // <start_of_turn>
const EOT: u32 = 5; // <end_of_turn>
const UNUSED0: u32 = 6; // <unused0>, CONTROL
const BR: u32 = 7; // <br>, USER_DEFINED
const BYTE0: u32 = 8; // <0x00>; <0xXX> is BYTE0 + 0xXX
const FIRST_EXTRA: u32 = BYTE0 + 256;

fn gemma_config() -> TokenizerConfig {
    TokenizerConfig {
        bos: Some(BOS),
        eos: Some(EOS),
        eot: None,
        unk: Some(UNK),
        pad: Some(PAD),
        add_bos: true,
        add_eos: false,
        add_space_prefix: false,
        rstrip_specials: false,
    }
}

/// Gemma-like specials, the 256 byte tokens, then `extra` (text, score, type) from id 264.
fn vocab_with(extra: &[(&str, f32, i32)], config: TokenizerConfig) -> Tokenizer {
    let mut tokens: Vec<String> = [
        "<pad>",
        "<eos>",
        "<bos>",
        "<unk>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<unused0>",
        "<br>",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut scores = vec![0.0; tokens.len()];
    let mut types = vec![
        CONTROL, CONTROL, CONTROL, UNKNOWN, CONTROL, CONTROL, CONTROL, USER,
    ];
    for b in 0..256 {
        tokens.push(format!("<0x{b:02X}>"));
        scores.push(0.0);
        types.push(BYTE);
    }
    for &(t, s, ty) in extra {
        tokens.push(t.to_string());
        scores.push(s);
        types.push(ty);
    }
    Tokenizer::new(tokens, scores, types, config).unwrap()
}

fn vocab(extra: &[(&str, f32, i32)]) -> Tokenizer {
    vocab_with(extra, gemma_config())
}

/// Normal tokens with the given scores.
fn normal<'a>(list: &[(&'a str, f32)]) -> Vec<(&'a str, f32, i32)> {
    list.iter().map(|&(t, s)| (t, s, NORMAL)).collect()
}

fn id(t: &Tokenizer, text: &str) -> u32 {
    t.token_id(text)
        .unwrap_or_else(|| panic!("{text:?} not in vocab"))
}

fn byte(b: u8) -> u32 {
    BYTE0 + b as u32
}

/// Tokens for `s` where every byte falls back to its byte token.
fn bytes_of(s: &str) -> Vec<u32> {
    s.bytes().map(byte).collect()
}

#[test]
fn vocab_lookup_and_special_ids() {
    let t = vocab(&normal(&[("a", -1.0), ("b", -2.0)]));
    assert_eq!(t.vocab_size(), 266);
    assert_eq!(t.token_id("<bos>"), Some(BOS));
    assert_eq!(t.token_id("<0x41>"), Some(byte(0x41)));
    assert_eq!(t.token_id("a"), Some(FIRST_EXTRA));
    assert_eq!(t.token_id("zz"), None);
    assert_eq!(t.token_text(FIRST_EXTRA + 1), Some("b"));
    assert_eq!(t.token_text(266), None);
    assert_eq!(t.score(FIRST_EXTRA + 1), Some(-2.0));
    assert_eq!(t.token_type(UNK), Some(TokenType::Unknown));
    assert_eq!(t.token_type(BR), Some(TokenType::UserDefined));
    assert_eq!(t.token_type(byte(0)), Some(TokenType::Byte));
    assert_eq!(t.token_type(9999), None);
    assert_eq!((t.bos(), t.eos()), (Some(BOS), Some(EOS)));
    // <end_of_turn> becomes EOT when no EOT id is given; EOG = {eos, eot}.
    assert_eq!(t.eot(), Some(EOT));
    assert_eq!(t.eog_ids(), &[EOS, EOT]);
    assert!(t.is_eog(EOS) && t.is_eog(EOT));
    assert!(!t.is_eog(BOS) && !t.is_eog(SOT) && !t.is_eog(u32::MAX));
    assert!(format!("{t:?}").contains("vocab_size: 266"));
}

#[test]
fn type_ids_map_like_gguf() {
    let want = [
        TokenType::Undefined,
        TokenType::Normal,
        TokenType::Unknown,
        TokenType::Control,
        TokenType::UserDefined,
        TokenType::Unused,
        TokenType::Byte,
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(TokenType::from_gguf(i as i32), *w);
    }
    assert_eq!(TokenType::from_gguf(7), TokenType::Undefined);
    assert_eq!(TokenType::from_gguf(-1), TokenType::Undefined);
}

#[test]
fn higher_score_merges_first() {
    // "abc": pairs ab (-1.0) and bc (-0.5). bc is higher → [a][bc]; "abc" is not a token.
    let t = vocab(&normal(&[
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("ab", -1.0),
        ("bc", -0.5),
    ]));
    assert_eq!(
        t.encode("abc", false, false),
        vec![id(&t, "a"), id(&t, "bc")]
    );
    // Swap the scores → [ab][c].
    let t = vocab(&normal(&[
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("ab", -0.5),
        ("bc", -1.0),
    ]));
    assert_eq!(
        t.encode("abc", false, false),
        vec![id(&t, "ab"), id(&t, "c")]
    );
}

#[test]
fn equal_scores_merge_leftmost_first() {
    // ab and bc tie at -1 → the pair with the smaller left index (ab) wins.
    let t = vocab(&normal(&[
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("bc", -1.0),
        ("ab", -1.0),
    ]));
    assert_eq!(
        t.encode("abc", false, false),
        vec![id(&t, "ab"), id(&t, "c")]
    );

    // "aaaa": pairs (0,1), (1,2), (2,3) all "aa". (0,1) merges; (1,2) is stale (symbol 1 is
    // empty); (2,3) merges → [aa][aa] ("aaa"/"aaaa" are not tokens).
    let t = vocab(&normal(&[("a", -10.0), ("aa", -1.0)]));
    let (a, aa) = (id(&t, "a"), id(&t, "aa"));
    assert_eq!(t.encode("aaaa", false, false), vec![aa, aa]);
    assert_eq!(t.encode("aaa", false, false), vec![aa, a]);
    assert_eq!(t.encode("aaaaa", false, false), vec![aa, aa, a]);
}

#[test]
fn stale_heap_entries_are_skipped() {
    // "abcd" with bc -0.1, ab -0.2, cd -0.3, bcd -0.4, abcd -5:
    //   pop bc  → [a][bc][d], push bcd (abc is not a token)
    //   pop ab  → stale (b grew to "bc": 1 + 2 != 2)
    //   pop cd  → stale (c is empty)
    //   pop bcd → [a][bcd], push abcd
    //   pop abcd → [abcd]
    let t = vocab(&normal(&[
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("d", -10.0),
        ("bc", -0.1),
        ("ab", -0.2),
        ("cd", -0.3),
        ("bcd", -0.4),
        ("abcd", -5.0),
    ]));
    assert_eq!(t.encode("abcd", false, false), vec![id(&t, "abcd")]);
    // Without the last token the merge stops at [a][bcd].
    let t = vocab(&normal(&[
        ("a", -10.0),
        ("b", -10.0),
        ("c", -10.0),
        ("d", -10.0),
        ("bc", -0.1),
        ("ab", -0.2),
        ("cd", -0.3),
        ("bcd", -0.4),
    ]));
    assert_eq!(
        t.encode("abcd", false, false),
        vec![id(&t, "a"), id(&t, "bcd")]
    );
}

#[test]
fn merges_happen_over_multibyte_characters() {
    // Symbols are whole UTF-8 characters: "éé" merges as two 2-byte symbols.
    let t = vocab(&normal(&[("é", -1.0), ("éé", -0.5), ("😀", -1.0)]));
    assert_eq!(
        t.encode("ééé", false, false),
        vec![id(&t, "éé"), id(&t, "é")]
    );
    assert_eq!(t.encode("😀", false, false), vec![id(&t, "😀")]);
}

#[test]
fn byte_fallback_for_unknown_characters() {
    let t = vocab(&normal(&[("a", -1.0), ("b", -1.0)]));
    let (a, b) = (id(&t, "a"), id(&t, "b"));
    // "é" = C3 A9 is not in the vocab → <0xC3><0xA9> (uppercase hex).
    assert_eq!(t.encode("é", false, false), vec![byte(0xC3), byte(0xA9)]);
    assert_eq!(
        t.encode("aéb", false, false),
        vec![a, byte(0xC3), byte(0xA9), b]
    );
    assert_eq!(t.encode("\n", false, false), vec![byte(0x0A)]);
    assert_eq!(
        t.encode("😀", false, false),
        vec![byte(0xF0), byte(0x9F), byte(0x98), byte(0x80)]
    );
    assert_eq!(
        t.decode(&t.encode("aéb😀\n", false, false), false).unwrap(),
        "aéb😀\n"
    );
}

#[test]
fn byte_fallback_without_byte_tokens() {
    // No <0xXX> tokens: a 1-character token with the byte's text is used, else UNK.
    let tokens = vec!["<unk>".to_string(), "x".to_string(), "a".to_string()];
    let config = TokenizerConfig {
        unk: Some(0),
        ..TokenizerConfig::default()
    };
    let t = Tokenizer::new(tokens, vec![0.0; 3], vec![UNKNOWN, NORMAL, NORMAL], config).unwrap();
    assert_eq!(t.encode("xa", false, false), vec![1, 2]);
    assert_eq!(t.encode("é", false, false), vec![0, 0]);
    // Without UNK the bytes are dropped rather than panicking.
    let t = Tokenizer::new(
        vec!["a".to_string()],
        vec![],
        vec![],
        TokenizerConfig::default(),
    )
    .unwrap();
    assert_eq!(t.encode("aéa", false, false), vec![0, 0]);
}

#[test]
fn spaces_become_the_space_mark() {
    let t = vocab(&normal(&[
        ("a", -1.0),
        ("b", -1.0),
        ("\u{2581}", -2.0),
        ("\u{2581}a", -0.5),
        ("\u{2581}b", -0.5),
    ]));
    let (a, b, sp) = (id(&t, "a"), id(&t, "b"), id(&t, "\u{2581}"));
    let (spa, spb) = (id(&t, "\u{2581}a"), id(&t, "\u{2581}b"));
    assert_eq!(t.encode("a b", false, false), vec![a, spb]);
    assert_eq!(t.encode(" a", false, false), vec![spa]);
    // "a▁▁b": a▁ and ▁▁ are not tokens, ▁b is → [a][▁][▁b].
    assert_eq!(t.encode("a  b", false, false), vec![a, sp, spb]);
    assert_eq!(t.encode(" ", false, false), vec![sp]);
    // Only U+0020 is escaped: a tab falls back to bytes.
    assert_eq!(t.encode("\ta", false, false), vec![byte(b'\t'), a]);
    assert_eq!(t.decode(&[a, sp, spb], false).unwrap(), "a  b");
    // No space prefix in Gemma's config.
    assert_eq!(t.encode("b", false, false), vec![b]);
}

#[test]
fn add_space_prefix_prepends_and_decode_strips() {
    let config = TokenizerConfig {
        add_space_prefix: true,
        ..gemma_config()
    };
    let t = vocab_with(
        &normal(&[
            ("a", -1.0),
            ("b", -1.0),
            ("\u{2581}", -2.0),
            ("\u{2581}a", -0.5),
            ("\u{2581}b", -0.5),
        ]),
        config,
    );
    let (spa, spb) = (id(&t, "\u{2581}a"), id(&t, "\u{2581}b"));
    assert_eq!(t.encode("a", true, false), vec![BOS, spa]);
    // The prefix goes before every fragment that follows a special token (or the start).
    assert_eq!(t.encode("a<br>b", false, false), vec![spa, BR, spb]);
    // Decoding removes one leading space of the first piece only.
    assert_eq!(t.decode(&[spa, spb], false).unwrap(), "a b");
    assert_eq!(t.decode(&[BOS, spa], false).unwrap(), " a");
}

#[test]
fn bos_and_eos() {
    let t = vocab(&normal(&[("a", -1.0)]));
    let a = id(&t, "a");
    assert_eq!(t.encode("a", true, false), vec![BOS, a]);
    assert_eq!(t.encode("a", false, false), vec![a]);
    assert_eq!(t.encode("", true, false), vec![BOS]);
    assert_eq!(t.encode("", false, true), Vec::<u32>::new());
    // A "<bos>" in the text is kept as a second BOS (llama.cpp only warns).
    assert_eq!(t.encode("<bos>a", true, true), vec![BOS, BOS, a]);

    let t = vocab_with(
        &normal(&[("a", -1.0)]),
        TokenizerConfig {
            add_bos: false,
            add_eos: true,
            ..gemma_config()
        },
    );
    assert_eq!(t.encode("a", true, false), vec![a, EOS]);
    assert_eq!(t.encode("a", false, false), vec![a]);
}

#[test]
fn user_defined_tokens_always_split() {
    let t = vocab(&normal(&[("a", -1.0), ("b", -1.0)]));
    let (a, b) = (id(&t, "a"), id(&t, "b"));
    assert_eq!(t.encode("a<br>b", false, false), vec![a, BR, b]);
    assert_eq!(t.encode("a<br>b", false, true), vec![a, BR, b]);
    assert_eq!(t.encode("<br><br>", false, false), vec![BR, BR]);
    assert_eq!(
        t.encode("<br", false, false),
        vec![byte(b'<'), b, byte(b'r')]
    );
}

#[test]
fn control_tokens_only_with_parse_special() {
    let t = vocab(&normal(&[("a", -1.0)]));
    let a = id(&t, "a");
    let text = "<start_of_turn>a<end_of_turn>";
    assert_eq!(t.encode(text, false, true), vec![SOT, a, EOT]);
    // Without parse_special the control texts are ordinary characters ('a' is a token, every
    // other byte falls back).
    let plain: Vec<u32> = text
        .bytes()
        .map(|c| if c == b'a' { a } else { byte(c) })
        .collect();
    assert_eq!(t.encode(text, false, false), plain);
    // UNKNOWN tokens too.
    assert_eq!(t.encode("<unk>", false, true), vec![UNK]);
    assert_eq!(t.encode("<unk>", false, false), bytes_of("<unk>"));
    // A chat prompt.
    assert_eq!(
        t.encode("<start_of_turn>user\na<end_of_turn>\n", true, true)[..2],
        [BOS, SOT]
    );
}

#[test]
fn partition_takes_longest_special_first() {
    // User-defined "xy" (len 2) and "yzw" (len 3) in "xyzw": llama.cpp splits at yzw first, so
    // "xy" can no longer match (its y is taken) even though it starts further left.
    let t = vocab(&[("xy", 0.0, USER), ("yzw", 0.0, USER)]);
    let yzw = id(&t, "yzw");
    assert_eq!(t.encode("xyzw", false, false), vec![byte(b'x'), yzw]);
    assert_eq!(
        t.encode("xyxyzw", false, false),
        vec![id(&t, "xy"), byte(b'x'), yzw]
    );

    // Equal lengths: the lower id goes first.
    let t = vocab(&[("pq", 0.0, USER), ("qr", 0.0, USER)]);
    assert_eq!(
        t.encode("pqr", false, false),
        vec![id(&t, "pq"), byte(b'r')]
    );
    let t = vocab(&[("qr", 0.0, USER), ("pq", 0.0, USER)]);
    assert_eq!(
        t.encode("pqr", false, false),
        vec![byte(b'p'), id(&t, "qr")]
    );

    // Occurrences of one token are non-overlapping, left to right.
    let t = vocab(&[("aa", 0.0, USER)]);
    let aa = id(&t, "aa");
    assert_eq!(t.encode("aaa", false, false), vec![aa, byte(b'a')]);
    assert_eq!(t.encode("aaaa", false, false), vec![aa, aa]);

    // A control token that contains a user-defined one wins when parse_special (it is longer),
    // and the user-defined one is found inside it otherwise.
    let t = vocab(&[("<b>x", 0.0, CONTROL), ("<b>", 0.0, USER)]);
    let (ctl, user) = (id(&t, "<b>x"), id(&t, "<b>"));
    assert_eq!(t.encode("<b>x", false, true), vec![ctl]);
    assert_eq!(t.encode("<b>x", false, false), vec![user, byte(b'x')]);
}

#[test]
fn special_tokens_split_merge_context() {
    // A special token ends the fragment: "a<br>b" never merges a with b.
    let t = vocab(&normal(&[("a", -1.0), ("b", -1.0), ("ab", 0.0)]));
    assert_eq!(t.encode("ab", false, false), vec![id(&t, "ab")]);
    assert_eq!(
        t.encode("a<br>b", false, false),
        vec![id(&t, "a"), BR, id(&t, "b")]
    );
}

#[test]
fn decode_pieces_by_type() {
    let t = vocab(&[
        ("a", -1.0, NORMAL),
        ("\u{2581}b", -1.0, NORMAL),
        ("x\u{2581}\u{2581}y", -1.0, NORMAL),
        ("<gone>", 0.0, UNUSED),
        ("<undef>", 0.0, 0),
        ("<u\u{2581}d>", 0.0, USER),
    ]);
    let (a, sb, xy) = (
        id(&t, "a"),
        id(&t, "\u{2581}b"),
        id(&t, "x\u{2581}\u{2581}y"),
    );
    assert_eq!(t.decode(&[a, sb], false).unwrap(), "a b");
    assert_eq!(t.decode(&[xy], false).unwrap(), "x  y");
    // Byte tokens form multi-byte characters across tokens.
    assert_eq!(t.decode(&[byte(0xC3), byte(0xA9), a], false).unwrap(), "éa");
    // CONTROL / UNKNOWN: hidden unless special.
    assert_eq!(t.decode(&[BOS, a, EOT], false).unwrap(), "a");
    assert_eq!(
        t.decode(&[BOS, a, EOT], true).unwrap(),
        "<bos>a<end_of_turn>"
    );
    assert_eq!(t.decode(&[UNK], false).unwrap(), "");
    assert_eq!(t.decode(&[UNK], true).unwrap(), "<unk>");
    // A CONTROL "unused" token behaves as CONTROL.
    assert_eq!(t.decode(&[UNUSED0], false).unwrap(), "");
    assert_eq!(t.decode(&[UNUSED0], true).unwrap(), "<unused0>");
    // USER_DEFINED: raw text either way (▁ is not unescaped).
    assert_eq!(t.decode(&[BR], false).unwrap(), "<br>");
    let ud = id(&t, "<u\u{2581}d>");
    assert_eq!(t.decode(&[ud], false).unwrap(), "<u\u{2581}d>");
    // UNUSED and UNDEFINED types: always empty.
    let (gone, undef) = (id(&t, "<gone>"), id(&t, "<undef>"));
    assert_eq!(t.decode(&[gone, undef], true).unwrap(), "");
    assert_eq!(t.token_bytes(gone, true).unwrap().len(), 0);

    assert_eq!(&t.token_bytes(sb, false).unwrap()[..], b" b");
    assert_eq!(&t.token_bytes(byte(0xFF), false).unwrap()[..], &[0xFFu8]);
    assert_eq!(&t.token_bytes(EOS, true).unwrap()[..], b"<eos>");
    assert!(t.token_bytes(EOS, false).unwrap().is_empty());
    assert_eq!(t.decode(&[], false).unwrap(), "");
}

#[test]
fn decode_invalid_utf8_is_lossy() {
    let t = vocab(&normal(&[("a", -1.0)]));
    let a = id(&t, "a");
    assert_eq!(t.decode(&[byte(0xC3)], false).unwrap(), "\u{FFFD}");
    assert_eq!(t.decode(&[byte(0xFF), a], false).unwrap(), "\u{FFFD}a");
    assert_eq!(
        t.decode(&[byte(0xF0), byte(0x9F), a], false).unwrap(),
        "\u{FFFD}a"
    );
}

#[test]
fn out_of_range_ids_are_errors() {
    let t = vocab(&[]);
    let n = t.vocab_size() as u32;
    assert_err(t.decode(&[BOS, n], false), "IndexOutOfRange");
    assert_err(t.token_bytes(n, true), "IndexOutOfRange");
    assert_err(t.token_bytes(u32::MAX, false), "IndexOutOfRange");
    let mut d = StreamDecoder::new();
    assert_err(d.push(&t, n), "IndexOutOfRange");
}

#[test]
fn stream_decoder_waits_for_whole_characters() {
    let t = vocab(&normal(&[("a", -1.0), ("\u{2581}b", -1.0)]));
    let mut d = StreamDecoder::new();
    // 😀 = F0 9F 98 80, one byte token at a time.
    let emoji = [byte(0xF0), byte(0x9F), byte(0x98), byte(0x80)];
    assert_eq!(d.push(&t, emoji[0]).unwrap(), "");
    assert!(d.has_pending());
    assert_eq!(d.push(&t, emoji[1]).unwrap(), "");
    assert_eq!(d.push(&t, emoji[2]).unwrap(), "");
    assert_eq!(d.push(&t, emoji[3]).unwrap(), "😀");
    assert!(!d.has_pending());
    assert_eq!(d.push(&t, id(&t, "a")).unwrap(), "a");
    assert_eq!(d.push(&t, id(&t, "\u{2581}b")).unwrap(), " b");
    // Control tokens are invisible by default, visible with_special.
    assert_eq!(d.push(&t, EOT).unwrap(), "");
    assert_eq!(d.finish(), "");
    let mut d = StreamDecoder::with_special(true);
    assert_eq!(d.push(&t, EOT).unwrap(), "<end_of_turn>");

    // Text before an incomplete character comes out at once.
    let mut d = StreamDecoder::new();
    assert_eq!(d.push(&t, id(&t, "a")).unwrap(), "a");
    assert_eq!(d.push(&t, byte(0xC3)).unwrap(), "");
    // A byte that cannot continue the sequence: the broken prefix becomes U+FFFD.
    assert_eq!(d.push(&t, id(&t, "a")).unwrap(), "\u{FFFD}a");
    // An incomplete character at the end is flushed lossily.
    assert_eq!(d.push(&t, byte(0xE2)).unwrap(), "");
    assert_eq!(d.push(&t, byte(0x96)).unwrap(), "");
    assert_eq!(d.finish(), "\u{FFFD}");
    assert!(!d.has_pending());
    assert_eq!(d.finish(), "");
    // A failed push leaves the pending bytes alone.
    assert_eq!(d.push(&t, byte(0xC3)).unwrap(), "");
    assert!(d.push(&t, 99_999).is_err());
    assert_eq!(d.push(&t, byte(0xA9)).unwrap(), "é");
}

#[test]
fn stream_decoder_matches_lossy_decode() {
    let t = vocab(&normal(&[("a", -1.0), ("\u{2581}", -1.0), ("é", -1.0)]));
    let pool: Vec<u32> = (0..256u32)
        .map(|b| BYTE0 + b)
        .chain([id(&t, "a"), id(&t, "\u{2581}"), id(&t, "é"), BOS])
        .collect();
    let mut rng = Rng::new(7);
    for round in 0..300 {
        // Mostly valid UTF-8 byte runs with some random bytes thrown in.
        let mut ids = Vec::new();
        while ids.len() < 30 {
            if rng.below(4) == 0 {
                ids.push(pool[rng.below(pool.len())]);
            } else {
                let c = ['x', 'é', '€', '😀', '\n'][rng.below(5)];
                let mut buf = [0u8; 4];
                ids.extend(c.encode_utf8(&mut buf).bytes().map(byte));
            }
        }
        if round % 2 == 0 {
            ids.truncate(ids.len() - rng.below(3)); // maybe end mid-character
        }
        let mut d = StreamDecoder::new();
        let mut streamed = String::new();
        for &i in &ids {
            streamed += &d.push(&t, i).unwrap();
        }
        streamed += &d.finish();
        assert_eq!(streamed, t.decode(&ids, false).unwrap(), "round {round}");
    }
}

#[test]
fn end_of_turn_is_forced_control() {
    // <end_of_turn> typed NORMAL in the file: llama.cpp makes it CONTROL, EOT and EOG.
    let tokens: Vec<String> = ["<pad>", "<eos>", "<bos>", "<end_of_turn>", "a"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let types = vec![CONTROL, CONTROL, CONTROL, NORMAL, NORMAL];
    let config = TokenizerConfig {
        bos: Some(2),
        eos: Some(1),
        ..TokenizerConfig::default()
    };
    let t = Tokenizer::new(tokens.clone(), vec![0.0; 5], types.clone(), config).unwrap();
    assert_eq!(t.eot(), Some(3));
    assert!(t.is_eog(3) && t.is_eog(1));
    assert_eq!(t.token_type(3), Some(TokenType::Normal)); // the file's type is still reported
    assert_eq!(t.decode(&[3, 4], false).unwrap(), "a");
    assert_eq!(t.decode(&[3, 4], true).unwrap(), "<end_of_turn>a");
    assert_eq!(t.encode("<end_of_turn>", false, true), vec![3]);
    assert!(!t.encode("<end_of_turn>", false, false).contains(&3));

    // An explicit EOT id is kept; <end_of_turn> is still end-of-generation.
    let config = TokenizerConfig {
        eot: Some(4),
        ..config
    };
    let t = Tokenizer::new(tokens, vec![0.0; 5], types, config).unwrap();
    assert_eq!(t.eot(), Some(4));
    assert_eq!(t.eog_ids(), &[1, 3, 4]);
}

#[test]
fn constructor_validates_its_input() {
    let toks = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
    let cfg = TokenizerConfig::default();
    assert_err(
        Tokenizer::new(Vec::<String>::new(), vec![], vec![], cfg),
        "MissingMetadata",
    );
    assert_err(
        Tokenizer::new(toks(3), vec![0.0; 2], vec![], cfg),
        "MissingMetadata",
    );
    assert_err(
        Tokenizer::new(toks(3), vec![], vec![1; 4], cfg),
        "MissingMetadata",
    );
    for bad in [
        TokenizerConfig {
            bos: Some(3),
            ..cfg
        },
        TokenizerConfig {
            eos: Some(u32::MAX),
            ..cfg
        },
        TokenizerConfig {
            eot: Some(3),
            ..cfg
        },
        TokenizerConfig {
            unk: Some(3),
            ..cfg
        },
        TokenizerConfig {
            pad: Some(3),
            ..cfg
        },
        TokenizerConfig {
            add_bos: true,
            ..cfg
        },
        TokenizerConfig {
            add_eos: true,
            ..cfg
        },
    ] {
        assert_err(
            Tokenizer::new(toks(3), vec![], vec![], bad),
            "MissingMetadata",
        );
    }
    // Missing scores/types: score 0, NORMAL.
    let t = Tokenizer::new(toks(3), vec![], vec![], cfg).unwrap();
    assert_eq!(t.score(1), Some(0.0));
    assert_eq!(t.token_type(1), Some(TokenType::Normal));
    assert_eq!(t.decode(&[0, 2], false).unwrap(), "t0t2");
}

#[test]
fn empty_and_duplicate_texts() {
    // Empty texts are renamed [EMPTY_<id>]; for duplicates the last id wins the text lookup.
    let tokens: Vec<String> = ["a", "", "d", "d"].iter().map(|s| s.to_string()).collect();
    let t = Tokenizer::new(tokens, vec![], vec![], TokenizerConfig::default()).unwrap();
    assert_eq!(t.token_text(1), Some("[EMPTY_1]"));
    assert_eq!(t.token_id("[EMPTY_1]"), Some(1));
    assert_eq!(t.token_id(""), None);
    assert_eq!(t.token_id("d"), Some(3));
    assert_eq!(t.encode("dad", false, false), vec![3, 0, 3]);
    assert_eq!(t.decode(&[1], false).unwrap(), "[EMPTY_1]");
}

#[test]
fn nan_scores_do_not_panic() {
    let t = vocab(&normal(&[
        ("a", -1.0),
        ("b", -1.0),
        ("ab", f32::NAN),
        ("ba", -0.0),
    ]));
    let ids = t.encode("abab", false, false);
    assert_eq!(t.decode(&ids, false).unwrap(), "abab");
}

#[test]
fn random_text_round_trips() {
    let t = vocab(&normal(&[
        ("a", -3.0),
        ("b", -3.0),
        ("c", -3.0),
        ("ab", -1.0),
        ("bc", -1.5),
        ("abc", -0.5),
        ("\u{2581}", -4.0),
        ("\u{2581}a", -2.0),
        ("é", -3.0),
        ("éa", -2.5),
    ]));
    let pieces = [
        "a", "b", "c", " ", "é", "😀", "\n", "<", ">", "<br>", "<bos>", "ab",
    ];
    let mut rng = Rng::new(42);
    for _ in 0..500 {
        let n = rng.below(20);
        let s: String = (0..n).map(|_| pieces[rng.below(pieces.len())]).collect();
        let plain = t.encode(&s, false, false);
        assert_eq!(t.decode(&plain, false).unwrap(), s, "{s:?}");
        assert!(!plain.contains(&BOS));
        let special = t.encode(&s, true, true);
        assert_eq!(special[0], BOS);
        assert_eq!(t.decode(&special[1..], true).unwrap(), s, "{s:?}");
    }
}

#[test]
fn large_vocab_builds_compactly_and_encodes() {
    // A Gemma-sized vocabulary: specials, bytes, "<unusedN>", "▁", then letter strings.
    let n = 262_144usize;
    let mut tokens: Vec<String> = vec!["<pad>", "<eos>", "<bos>", "<unk>"]
        .into_iter()
        .map(String::from)
        .collect();
    let mut types = vec![CONTROL, CONTROL, CONTROL, UNKNOWN];
    for b in 0..256 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(BYTE);
    }
    for i in 0..50 {
        tokens.push(format!("<unused{i}>"));
        types.push(CONTROL);
    }
    // Without a "▁" token a space before "<" or "é" would fall back to the bytes of "▁" and
    // decode as "▁", exactly as in llama.cpp.
    tokens.push("\u{2581}".to_string());
    types.push(NORMAL);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let mut k = 0usize;
    while tokens.len() < n {
        // Bijective base-26 strings "a".."z", "aa", "ba"...: every string of up to 3 letters
        // exists, plain and with a leading space mark.
        let mut s = String::new();
        let mut v = k / 2;
        loop {
            s.push(letters[v % 26] as char);
            v /= 26;
            if v == 0 {
                break;
            }
            v -= 1;
        }
        if k % 2 == 1 {
            s.insert(0, '\u{2581}');
        }
        tokens.push(s);
        types.push(NORMAL);
        k += 1;
    }
    let scores: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let text_bytes: usize = tokens.iter().map(|t| t.len()).sum();
    let t = Tokenizer::new(tokens, scores, types, gemma_config()).unwrap();
    assert_eq!(t.vocab_size(), n);
    let per_token = (t.memory_bytes() - text_bytes) as f64 / n as f64;
    assert!(per_token < 24.0, "{per_token} bytes per token of overhead");

    let mut rng = Rng::new(3);
    let words = ["the", "cat", "sat", "on", "mat", "é", "😀", "<unused7>"];
    let text: String = (0..100)
        .map(|_| words[rng.below(words.len())])
        .collect::<Vec<_>>()
        .join(" ");
    let ids = t.encode(&text, true, false);
    assert_eq!(ids[0], BOS);
    assert_eq!(t.decode(&ids, false).unwrap(), text);
    let ids = t.encode(&text, true, true);
    assert_eq!(t.decode(&ids, true).unwrap(), format!("<bos>{text}"));
    assert!(ids.contains(&t.token_id("<unused7>").unwrap()));
}

// ---------------------------------------------------------------------------------------------
// Gemma chat format

fn msg(role: &str, content: &str) -> ChatMessage {
    ChatMessage::new(role, content)
}

#[test]
fn gemma_single_user_turn() {
    assert_eq!(
        format_gemma(&[msg("user", "hi")], true),
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    );
    assert_eq!(
        format_gemma(&[msg("user", "hi")], false),
        "<start_of_turn>user\nhi<end_of_turn>\n"
    );
    assert_eq!(format_gemma(&[], true), "<start_of_turn>model\n");
    assert_eq!(format_gemma(&[], false), "");
}

#[test]
fn gemma_conversation_with_system_prompt() {
    let chat = [
        msg("system", "  Be brief. "),
        msg("user", " Hello\n"),
        msg("assistant", "Hi! "),
        msg("user", "\tBye\r\n"),
    ];
    assert_eq!(
        format_gemma(&chat, true),
        "<start_of_turn>user\nBe brief.\n\nHello<end_of_turn>\n\
         <start_of_turn>model\nHi!<end_of_turn>\n\
         <start_of_turn>user\nBye<end_of_turn>\n\
         <start_of_turn>model\n"
    );
}

#[test]
fn gemma_system_prompt_waits_for_a_non_model_turn() {
    // The system text skips the model turn and lands in the next user turn.
    let chat = [msg("system", "S"), msg("assistant", "A"), msg("user", "U")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>model\nA<end_of_turn>\n<start_of_turn>user\nS\n\nU<end_of_turn>\n"
    );
    // Several system messages concatenate without a separator.
    let chat = [msg("system", "A "), msg("system", " B"), msg("user", "U")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>user\nAB\n\nU<end_of_turn>\n"
    );
    // A trailing system message is dropped; an empty one adds nothing.
    let chat = [msg("user", "U"), msg("system", "late")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>user\nU<end_of_turn>\n"
    );
    let chat = [msg("system", "  "), msg("user", "U")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>user\nU<end_of_turn>\n"
    );
    // Other roles pass through (and take the system prompt, being non-model).
    let chat = [msg("system", "S"), msg("tool", "T")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>tool\nS\n\nT<end_of_turn>\n"
    );
}

#[test]
fn gemma_trims_only_c_whitespace() {
    let chat = [msg("user", "\u{a0}x\u{2003}\x0B\x0C")];
    assert_eq!(
        format_gemma(&chat, false),
        "<start_of_turn>user\n\u{a0}x\u{2003}<end_of_turn>\n"
    );
    assert_eq!(
        format_gemma(&[msg("user", "  ")], false),
        "<start_of_turn>user\n<end_of_turn>\n"
    );
}

#[test]
fn gemma_prompt_tokenizes_with_special_ids() {
    // "user": us and er merge (se is no token), then us+er. "model": mo, then de (equal scores,
    // leftmost first), then mo+de = mode, then mode+l.
    let t = vocab(&normal(&[
        ("u", -5.0),
        ("s", -5.0),
        ("e", -5.0),
        ("r", -5.0),
        ("m", -5.0),
        ("o", -5.0),
        ("d", -5.0),
        ("l", -5.0),
        ("us", -2.0),
        ("er", -2.0),
        ("user", -1.0),
        ("mo", -2.0),
        ("de", -2.0),
        ("mode", -1.5),
        ("model", -1.0),
        ("h", -2.0),
        ("i", -2.0),
        ("hi", -1.0),
    ]));
    let text = format_gemma(&[msg("user", "hi")], true);
    let nl = byte(b'\n');
    assert_eq!(
        t.encode(&text, true, true),
        vec![
            BOS,
            SOT,
            id(&t, "user"),
            nl,
            id(&t, "hi"),
            EOT,
            nl,
            SOT,
            id(&t, "model"),
            nl
        ]
    );
}
