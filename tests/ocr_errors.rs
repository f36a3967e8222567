//! Misuse of the OCR API must give typed errors, never a panic (in wasm a panic kills the
//! instance). The oracle is the error contract itself: damaged `.traineddata` bytes (empty,
//! truncated anywhere, single bytes changed inside the `lstm` entry, an entry table pointing
//! outside the file, foreign files) are `Err` with code `InvalidTraineddata` or, where a change
//! still parses, a model that reads a fixture line without panicking; bad images are
//! `InvalidImage`; degenerate but valid images read as `Ok` (or a typed `InvalidImage`).
//! Uses Debian's eng.traineddata (tesseract-ocr-eng) and tests/fixtures/ocr/lines/*.png, so
//! native only; the browser's misuse cases are in tests/js/ocr.test.mjs.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::Rng;
use kopitiam_wasm::ocr::{GreyImage, Recognizer};
use kopitiam_wasm::Error;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::OnceLock;

const MODEL: &str = "/usr/share/tesseract-ocr/5/tessdata/eng.traineddata";
/// The table slot of the `lstm` entry.
const LSTM: usize = 17;

fn model() -> &'static [u8] {
    static M: OnceLock<Vec<u8>> = OnceLock::new();
    M.get_or_init(|| {
        std::fs::read(MODEL).unwrap_or_else(|e| {
            panic!(
                "{MODEL}: {e}. The OCR tests need Tesseract's English model: run \
                 `bash scripts/setup.sh` (or `apt-get install tesseract-ocr-eng`)"
            )
        })
    })
}

fn recognizer() -> &'static Recognizer {
    static R: OnceLock<Recognizer> = OnceLock::new();
    R.get_or_init(|| Recognizer::from_bytes(model()).expect("the real model loads"))
}

fn fixture_line(name: &str) -> GreyImage {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ocr/lines")
        .join(name);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    GreyImage::from_png(&bytes).unwrap()
}

/// The container's table: the entry count, then one i64 offset per entry.
fn table(bytes: &[u8]) -> Vec<i64> {
    let n = i32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| i64::from_le_bytes(bytes[4 + 8 * i..12 + 8 * i].try_into().unwrap()))
        .collect()
}

fn set_offset(bytes: &mut [u8], entry: usize, off: i64) {
    bytes[4 + 8 * entry..12 + 8 * entry].copy_from_slice(&off.to_le_bytes());
}

/// `[start, end)` of the lstm entry: from its offset to the next present entry's.
fn lstm_range(bytes: &[u8]) -> (usize, usize) {
    let t = table(bytes);
    let start = t[LSTM] as usize;
    let end = t[LSTM + 1..]
        .iter()
        .find(|&&o| o >= 0)
        .map_or(bytes.len(), |&o| o as usize);
    (start, end)
}

fn expect_invalid(bytes: &[u8], what: &str) {
    match catch_unwind(|| Recognizer::from_bytes(bytes)) {
        Err(_) => panic!("{what}: Recognizer::from_bytes panicked"),
        Ok(Ok(_)) => panic!("{what}: loaded as a model"),
        Ok(Err(e)) => assert_eq!(e.code(), "InvalidTraineddata", "{what}: {e}"),
    }
}

/// `n` random bytes.
fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

// ---------------------------------------------------------------------------------------------
// Recognizer::from_bytes

#[test]
fn the_real_model_loads_and_reads_a_line() {
    let r = recognizer();
    assert_eq!(r.input_height, 36);
    let line = recognizer()
        .recognize_line(&fixture_line("000.png"))
        .unwrap();
    assert!(!line.text.is_empty());
}

#[test]
fn empty_and_tiny_inputs_are_invalid_traineddata() {
    expect_invalid(&[], "empty input");
    for n in 1..12 {
        expect_invalid(&model()[..n], &format!("{n} bytes"));
        expect_invalid(&vec![0u8; n], &format!("{n} zero bytes"));
        expect_invalid(&vec![0xffu8; n], &format!("{n} 0xff bytes"));
    }
}

#[test]
fn every_truncation_is_invalid_traineddata() {
    let bytes = model();
    let len = bytes.len();
    let step = len / 200;
    let mut cuts: Vec<usize> = (0..200).map(|i| i * step).collect();
    cuts.extend(0..300);
    // Around the entry boundaries, where a reader is most likely to slip.
    for off in table(bytes).into_iter().filter(|&o| o > 0) {
        let o = off as usize;
        cuts.extend(o.saturating_sub(2)..(o + 3).min(len));
    }
    cuts.sort_unstable();
    cuts.dedup();
    // The last entry (the version string) is not one the recognizer reads: cutting into it
    // still loads. Every cut before it must fail.
    let version = *table(bytes).last().unwrap() as usize;
    cuts.retain(|&c| c < version);
    assert!(cuts.len() > 450, "{} cuts", cuts.len());
    for &cut in &cuts {
        expect_invalid(&bytes[..cut], &format!("cut at {cut} of {len}"));
    }
}

#[test]
fn damaged_bytes_in_the_lstm_entry_never_panic() {
    let mut bytes = model().to_vec();
    let (start, end) = lstm_range(&bytes);
    let len = end - start;
    assert!(len > 100_000, "lstm entry {start}..{end}");
    let mut rng = Rng::new(0x5eed);
    let mut positions = Vec::new();
    // The entry's head (the network's first layer headers), one byte at a time.
    positions.extend(start..start + 120);
    // Its tail: the spec string, training flags, iterations, null char, learning rates.
    positions.extend(end - 80..end);
    // The rest spread over the entry (each stride jittered).
    for i in 0..100 {
        positions.push(start + (i * len) / 100 + rng.next_u64() as usize % (len / 100));
    }
    positions.sort_unstable();
    positions.dedup();
    assert!(positions.len() >= 295, "{} positions", positions.len());
    let line = fixture_line("000.png");
    let (mut loaded, mut refused, mut panics) = (0, 0, Vec::new());
    for (i, &pos) in positions.iter().enumerate() {
        let old = bytes[pos];
        let new = match i % 6 {
            0 => old ^ 0xff,
            1 => 0x00,
            2 => 0xff,
            3 => 0x7f,
            4 => 0x80,
            _ => old ^ 0x01,
        };
        let new = if new == old { old ^ 0x55 } else { new };
        bytes[pos] = new;
        let what = format!(
            "byte {pos} (lstm + {}) {old:#04x} -> {new:#04x}",
            pos - start
        );
        match catch_unwind(AssertUnwindSafe(|| Recognizer::from_bytes(&bytes))) {
            Err(_) => panics.push(format!("{what}: from_bytes panicked")),
            Ok(Err(e)) => {
                refused += 1;
                if e.code() != "InvalidTraineddata" {
                    // A typed error all the same; note it for the report.
                    eprintln!("{what}: {} ({e})", e.code());
                }
            }
            Ok(Ok(r)) => {
                loaded += 1;
                match catch_unwind(AssertUnwindSafe(|| r.recognize_line(&line))) {
                    Err(_) => panics.push(format!("{what}: recognize_line panicked")),
                    Ok(Err(e)) => eprintln!("{what}: loads, then reads as {}: {e}", e.code()),
                    Ok(Ok(_)) => {}
                }
            }
        }
        bytes[pos] = old;
    }
    eprintln!("damaged lstm bytes: {loaded} loaded, {refused} refused");
    assert!(
        panics.is_empty(),
        "{} panics:\n{}",
        panics.len(),
        panics.join("\n")
    );
    assert!(refused > 0, "no damaged byte was noticed");
    assert_eq!(loaded + refused, positions.len());
}

#[test]
fn an_entry_table_pointing_outside_the_file_is_invalid() {
    let real = model();
    let len = real.len() as i64;
    let t = table(real);
    let table_end = 4 + 8 * t.len() as i64;
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in [LSTM, 21, 22, 23] {
        for off in [
            len + 1,
            len + 1_000_000,
            i64::MAX,
            i64::MIN,
            -2,
            0,
            table_end - 1,
        ] {
            let mut b = real.to_vec();
            set_offset(&mut b, entry, off);
            cases.push((format!("entry {entry} at {off}"), b));
        }
    }
    // Out of order: the unicharset before the lstm entry.
    let mut b = real.to_vec();
    set_offset(&mut b, 21, t[LSTM] - 1);
    cases.push(("unicharset before lstm".into(), b));
    // No lstm entry at all (a legacy-only file).
    let mut b = real.to_vec();
    set_offset(&mut b, LSTM, -1);
    cases.push(("lstm absent".into(), b));
    // Every recognizer entry at the very end: present but empty.
    let mut b = real.to_vec();
    for e in LSTM..t.len() {
        set_offset(&mut b, e, len);
    }
    cases.push(("all entries empty at the end".into(), b));
    // Entry counts that do not describe a table.
    for n in [0i32, -1, -24, 65, 1000, i32::MAX, i32::MIN, 17, 18] {
        let mut b = real.to_vec();
        b[..4].copy_from_slice(&n.to_le_bytes());
        cases.push((format!("entry count {n}"), b));
    }
    // A table and nothing else.
    cases.push((
        "the table alone".into(),
        real[..table_end as usize].to_vec(),
    ));
    for (what, bytes) in &cases {
        expect_invalid(bytes, what);
    }
    // The offending entry is named by its table byte.
    let mut b = real.to_vec();
    set_offset(&mut b, LSTM, len + 1);
    match Recognizer::from_bytes(&b) {
        Err(Error::InvalidTraineddata { offset, reason }) => {
            assert_eq!(offset, 4 + 8 * LSTM as u64, "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn foreign_files_are_invalid_traineddata() {
    let gguf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");
    let gguf = std::fs::read(&gguf).unwrap_or_else(|e| panic!("{}: {e}", gguf.display()));
    expect_invalid(&gguf, "a GGUF file");
    expect_invalid(b"GGUF\x03\0\0\0", "a GGUF header");
    let png = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ocr/lines/000.png"),
    )
    .unwrap();
    expect_invalid(&png, "a PNG file");
    let mut rng = Rng::new(99);
    for n in [1usize, 4, 5, 200, 4096, 1 << 20] {
        for _ in 0..4 {
            expect_invalid(&bytes(&mut rng, n), &format!("{n} random bytes"));
        }
    }
    // A real table over random entries: must be refused, typed.
    let real = model();
    let (start, _) = lstm_range(real);
    for seed in 0..4 {
        let mut rng = Rng::new(1000 + seed);
        let mut b = real[..start].to_vec();
        b.extend(bytes(&mut rng, real.len() - start));
        let r = catch_unwind(|| Recognizer::from_bytes(&b).map(drop));
        match r {
            Err(_) => panic!("real table, random entries (seed {seed}): panicked"),
            Ok(r) => assert!(
                r.is_err(),
                "real table, random entries (seed {seed}) loaded"
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GreyImage

fn image_code(r: kopitiam_wasm::Result<GreyImage>) -> &'static str {
    match r {
        Ok(img) => panic!(
            "expected an error, got a {}x{} image",
            img.width(),
            img.height()
        ),
        Err(e) => e.code(),
    }
}

#[test]
fn grey_image_rejects_inconsistent_sizes() {
    assert_eq!(image_code(GreyImage::new(3, 2, vec![0; 5])), "InvalidImage");
    assert_eq!(image_code(GreyImage::new(3, 2, vec![0; 7])), "InvalidImage");
    assert_eq!(image_code(GreyImage::new(0, 5, vec![])), "InvalidImage");
    assert_eq!(image_code(GreyImage::new(5, 0, vec![])), "InvalidImage");
    assert_eq!(image_code(GreyImage::new(0, 0, vec![])), "InvalidImage");
    assert_eq!(image_code(GreyImage::new(0, 5, vec![1])), "InvalidImage");
    // A size whose product does not fit: typed too.
    let c = image_code(GreyImage::new(usize::MAX, 3, vec![0]));
    assert!(c == "SizeOverflow" || c == "InvalidImage", "{c}");
    assert!(GreyImage::new(3, 2, vec![0; 6]).is_ok());

    assert_eq!(
        image_code(GreyImage::from_rgba(2, 2, &[0; 15])),
        "InvalidImage"
    );
    assert_eq!(
        image_code(GreyImage::from_rgba(2, 2, &[0; 17])),
        "InvalidImage"
    );
    assert_eq!(
        image_code(GreyImage::from_rgba(2, 2, &[0; 4])),
        "InvalidImage"
    );
    assert_eq!(image_code(GreyImage::from_rgba(0, 2, &[])), "InvalidImage");
    assert_eq!(image_code(GreyImage::from_rgba(2, 0, &[])), "InvalidImage");
    let c = image_code(GreyImage::from_rgba(usize::MAX / 2, 3, &[0; 8]));
    assert!(c == "SizeOverflow" || c == "InvalidImage", "{c}");
    let c = image_code(GreyImage::from_rgba(usize::MAX / 4 + 1, 1, &[0; 8]));
    assert!(c == "SizeOverflow" || c == "InvalidImage", "{c}");
    let ok = GreyImage::from_rgba(2, 1, &[0, 0, 0, 255, 255, 255, 255, 0]).unwrap();
    assert_eq!(ok.data(), [0, 255]);
}

/// A PNG chunk with its CRC (the standard CRC-32, written out here).
fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = 0xffff_ffffu32;
    for &b in kind.iter().chain(data) {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&(!crc).to_be_bytes());
    out
}

fn png_with_header(width: u32, height: u32, depth: u8, colour: u8, idat: &[u8]) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[depth, colour, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    png.extend(png_chunk(b"IDAT", idat));
    png.extend(png_chunk(b"IEND", &[]));
    png
}

#[test]
fn from_png_on_garbage_is_invalid_image() {
    let real = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ocr/lines/000.png"),
    )
    .unwrap();
    assert!(GreyImage::from_png(&real).is_ok());
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), vec![]),
        ("text".into(), b"not a png at all".to_vec()),
        ("signature only".into(), b"\x89PNG\r\n\x1a\n".to_vec()),
        ("traineddata".into(), model()[..4096].to_vec()),
        // Valid chunks around image data that is not zlib.
        ("bad IDAT".into(), png_with_header(4, 4, 8, 0, b"garbage")),
        // A declared size far beyond what any buffer may hold.
        (
            "huge header".into(),
            png_with_header(1 << 30, 1 << 30, 8, 0, &[0x78, 0x9c, 3, 0, 0, 0, 0, 1]),
        ),
        // Zero width, and an impossible depth / colour pair.
        ("zero width".into(), png_with_header(0, 4, 8, 0, &[])),
        ("bad depth".into(), png_with_header(4, 4, 7, 0, &[])),
        ("bad colour".into(), png_with_header(4, 4, 8, 5, &[])),
    ];
    for cut in [8usize, 20, 33, 40, real.len() / 2, real.len() - 13] {
        cases.push((format!("cut at {cut}"), real[..cut].to_vec()));
    }
    let mut rng = Rng::new(7);
    for i in 0..20 {
        let mut b = real.clone();
        let at = 8 + rng.next_u64() as usize % (real.len() - 8);
        b[at] ^= 1 << (i % 8);
        cases.push((format!("bit flipped at {at}"), b));
        let n = 1 + rng.next_u64() as usize % 3000;
        cases.push((format!("random {i}"), bytes(&mut rng, n)));
    }
    for (what, bytes) in &cases {
        match catch_unwind(|| GreyImage::from_png(bytes)) {
            Err(_) => panic!("{what}: from_png panicked"),
            // A flipped bit inside pixel data may still decode (PNG checks chunk CRCs, but the
            // decoder may skip ancillary chunks): then the image must be consistent.
            Ok(Ok(img)) => {
                assert!(what.starts_with("bit flipped"), "{what}: decoded");
                assert_eq!(img.data().len(), img.width() * img.height(), "{what}");
            }
            Ok(Err(e)) => assert_eq!(e.code(), "InvalidImage", "{what}: {e}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Recognition of degenerate images

/// Reads `img` every way the API offers; each must be `Ok` or a typed `InvalidImage`.
fn read_every_way(img: &GreyImage, what: &str) {
    let r = recognizer();
    let mut panics = Vec::new();
    let mut check = |how: &str, res: std::thread::Result<kopitiam_wasm::Result<String>>| match res {
        Err(_) => panics.push(how.to_string()),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => assert_eq!(e.code(), "InvalidImage", "{what}: {how}: {e}"),
    };
    check(
        "recognize_line",
        catch_unwind(|| r.recognize_line(img).map(|l| l.text)),
    );
    check(
        "recognize_raw_line",
        catch_unwind(|| r.recognize_raw_line(img).map(|l| l.text)),
    );
    check(
        "recognize_page",
        catch_unwind(|| r.recognize_page(img).map(|p| p.text)),
    );
    check(
        "raw_line_probabilities",
        catch_unwind(|| {
            r.raw_line_probabilities(img)
                .map(|p| format!("{:?}", p.dims()))
        }),
    );
    check(
        "probabilities",
        catch_unwind(|| r.probabilities(img).map(|p| format!("{:?}", p.dims()))),
    );
    assert!(panics.is_empty(), "{what}: these panicked: {panics:?}");
}

#[test]
fn an_all_white_line_reads_as_empty_text() {
    for (w, h) in [(200, 40), (1, 1), (3, 3), (600, 36)] {
        let img = GreyImage::new(w, h, vec![255; w * h]).unwrap();
        let line = recognizer().recognize_line(&img).unwrap();
        assert_eq!(line.text, "", "{w}x{h}");
        assert!(line.chars.is_empty());
        let page = recognizer().recognize_page(&img).unwrap();
        assert_eq!(page.text, "", "{w}x{h}");
        assert!(page.lines.is_empty());
    }
    // All black too: no ink/background split either.
    let img = GreyImage::new(100, 30, vec![0; 3000]).unwrap();
    assert!(recognizer().recognize_line(&img).is_ok());
}

#[test]
fn tiny_images_read_or_refuse_with_a_type() {
    let mut rng = Rng::new(13);
    for (w, h) in [
        (1, 1),
        (2, 50),
        (50, 2),
        (1, 36),
        (36, 1),
        (2, 2),
        (3, 3),
        (4, 1),
    ] {
        let n = w * h;
        let patterns: Vec<(&str, Vec<u8>)> = vec![
            ("white", vec![255; n]),
            ("black", vec![0; n]),
            (
                "half",
                (0..n).map(|i| if i < n / 2 { 0 } else { 255 }).collect(),
            ),
            (
                "stripes",
                (0..n).map(|i| if i % 2 == 0 { 0 } else { 255 }).collect(),
            ),
            ("noise", bytes(&mut rng, n)),
        ];
        for (name, data) in patterns {
            let img = GreyImage::new(w, h, data).unwrap();
            read_every_way(&img, &format!("{w}x{h} {name}"));
        }
    }
}

#[test]
fn a_very_wide_thin_image_reads_or_refuses_with_a_type() {
    let (w, h) = (5000, 3);
    // Dark dashes of varying length on white in the middle row, a light top and bottom row.
    let mut data = vec![255u8; w * h];
    let mut x = 0;
    let mut rng = Rng::new(17);
    while x < w {
        let dash = 2 + rng.next_u64() as usize % 9;
        for xx in x..(x + dash).min(w) {
            data[w + xx] = 0;
        }
        x += dash + 3 + rng.next_u64() as usize % 12;
    }
    let img = GreyImage::new(w, h, data).unwrap();
    let r = recognizer();
    match catch_unwind(|| r.recognize_line(&img)) {
        Err(_) => panic!("{w}x{h}: recognize_line panicked"),
        Ok(Ok(line)) => {
            eprintln!("{w}x{h}: read {:?} in {:?}", line.text, line.bbox);
            assert!(line.bbox.2 <= w && line.bbox.3 <= h, "{:?}", line.bbox);
        }
        Ok(Err(e)) => assert_eq!(e.code(), "InvalidImage", "{e}"),
    }
    // And a tall thin one.
    let img = GreyImage::new(3, 2000, (0..6000).map(|i| (i % 7 * 40) as u8).collect()).unwrap();
    match catch_unwind(|| r.recognize_line(&img)) {
        Err(_) => panic!("3x2000: recognize_line panicked"),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => assert_eq!(e.code(), "InvalidImage", "{e}"),
    }
}

#[test]
fn crop_outside_the_image_is_an_error_not_a_panic() {
    let img = GreyImage::new(4, 3, vec![0; 12]).unwrap();
    assert_eq!(img.crop(1, 1, 3, 3).unwrap().data().len(), 4);
    let mut panics = Vec::new();
    for (x0, y0, x1, y1) in [
        (3, 0, 1, 3),
        (0, 2, 4, 1),
        (0, 0, 5, 3),
        (0, 0, 4, 4),
        (5, 5, 6, 6),
    ] {
        match catch_unwind(|| img.crop(x0, y0, x1, y1)) {
            Err(_) => panics.push(format!("crop({x0}, {y0}, {x1}, {y1})")),
            Ok(r) => assert_eq!(image_code(r), "InvalidImage"),
        }
    }
    assert!(
        panics.is_empty(),
        "on a 4x3 image these panicked: {panics:?}"
    );
}

/// The file byte where the input layer's height (36) starts. A layer is written as its type
/// string, flags, sizes and its name string; the Input layer's own part is then its shape
/// (`batch, height, width, depth`, i32 each): so the height follows the name `Input` and a
/// batch of 1.
fn input_height_byte(bytes: &[u8]) -> usize {
    let (start, end) = lstm_range(bytes);
    let pattern = b"\x05\x00\x00\x00Input\x01\x00\x00\x00\x24\x00\x00\x00";
    let at = bytes[start..end]
        .windows(pattern.len())
        .position(|w| w == pattern)
        .expect("the Input layer's name and shape");
    start + at + 13
}

#[test]
fn a_damaged_input_height_is_refused_at_load() {
    // lstm + 85 = 0x55 turns the input height 36 (0x24) into 0x5524 = 21796.
    let mut bytes = model().to_vec();
    let at = input_height_byte(&bytes) + 1;
    bytes[at] = 0x55;
    match Recognizer::from_bytes(&bytes) {
        Err(e) => assert_eq!(e.code(), "InvalidTraineddata", "{e}"),
        Ok(r) => panic!(
            "loaded with input height {}: recognize_line on a 213x49 fixture would scale it to \
             {}x{} before anything fails",
            r.input_height,
            213 * r.input_height / 49,
            r.input_height
        ),
    }
}
