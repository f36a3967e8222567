//! The OCR against Tesseract 5.3 itself (Debian's `tesseract` and `eng.traineddata`, which
//! scripts/setup.sh installs; fixtures made by scripts/make-ocr-fixtures.py and
//! scripts/make-ocr-softmax-fixture.py):
//! - the network's per-frame probabilities against tesseract's own dump (`--psm 13`,
//!   `lstm_choice_mode=1`: every code ≥ 1 %, as a truncated percent);
//! - the text of 320 rendered lines (12 Debian fonts, 14–40 px, mild blur, noise and
//!   rotation) against `tesseract --psm 7` without its dictionaries (the model with its dawg
//!   entries removed), and the character error rate of both against the ground truth;
//! - the same lines taken whole (`--psm 13`: no line cut), where only the network and the
//!   beam search decide;
//! - a page of stacked lines read line by line.
#![cfg(not(target_arch = "wasm32"))]

use kopitiam_wasm::ocr::{GreyImage, Recognizer};
use serde_json::Value;
use std::path::{Path, PathBuf};

const TESSDATA: [&str; 2] = [
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
];

fn model_path() -> PathBuf {
    let dirs = std::env::var("TESSDATA_PREFIX")
        .into_iter()
        .chain(TESSDATA.iter().map(|s| s.to_string()));
    dirs.map(|d| Path::new(&d).join("eng.traineddata"))
        .find(|p| p.exists())
        .expect("eng.traineddata not found: run `bash scripts/setup.sh` (it installs Debian's tesseract-ocr-eng)")
}

fn recognizer() -> Recognizer {
    Recognizer::from_bytes(&std::fs::read(model_path()).unwrap()).unwrap()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ocr")
}

fn json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join(name)).unwrap()).unwrap()
}

fn line_image(rel: &str) -> GreyImage {
    GreyImage::from_png(&std::fs::read(fixtures().join(rel)).unwrap()).unwrap()
}

/// Levenshtein distance in characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur.push(
                (prev[j + 1] + 1)
                    .min(cur[j] + 1)
                    .min(prev[j] + usize::from(ca != cb)),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

#[test]
fn loads_the_eng_model() {
    let r = recognizer();
    assert_eq!(r.spec, "[1,36,0,1Ct3,3,16Mp3,3Lfys48Lfx96Lrx96Lfx192O1c1]");
    assert_eq!((r.input_height, r.x_scale, r.characters()), (36, 3, 112));
}

/// Tesseract prints `int(100 · p)` for every code with at least 1 %. Ours must give the same
/// truncated percent within one point for every code it lists, and list nothing it omits
/// unless ours is below 2 %: a difference of 0.01 in any probability fails.
#[test]
fn frame_probabilities_match_tesseract() {
    let r = recognizer();
    let dump = json("softmax.json");
    let (mut compared, mut exact, mut worst) = (0usize, 0usize, 0i64);
    for line in dump["lines"].as_array().unwrap() {
        let image = line["image"].as_str().unwrap();
        let probs = r.raw_line_probabilities(&line_image(image)).unwrap();
        let codes = probs.dims()[1];
        let p = probs.to_vec_f32().unwrap();
        let frames = line["frames"].as_array().unwrap();
        assert_eq!(frames.len(), p.len() / codes, "{image}: frame count");
        for (t, listed) in frames.iter().enumerate() {
            let frame = &p[t * codes..(t + 1) * codes];
            let mut seen = vec![false; codes];
            for choice in listed.as_array().unwrap() {
                let (text, pct) = (choice[0].as_str().unwrap(), choice[1].as_i64().unwrap());
                let code = (0..codes as u32)
                    .find(|&c| r.code_text(c) == text)
                    .unwrap_or_else(|| panic!("{image}: unknown text {text:?}"));
                seen[code as usize] = true;
                let ours = (frame[code as usize] * 100.0) as i64;
                let d = (ours - pct).abs();
                assert!(
                    d <= 1,
                    "{image} frame {t}: {text:?} {ours}% vs tesseract {pct}%"
                );
                worst = worst.max(d);
                exact += usize::from(d == 0);
                compared += 1;
            }
            for (c, &v) in frame.iter().enumerate() {
                assert!(
                    seen[c] || v < 0.02,
                    "{image} frame {t}: {:?} at {:.3} missing from tesseract's list",
                    r.code_text(c as u32),
                    v
                );
            }
        }
    }
    println!("{compared} probabilities compared, {exact} equal as truncated percents, worst {worst} point(s)");
    assert!(compared > 5000);
}

/// Goals of the OCR issue: our text equals tesseract's on ≥ 98 % of the lines, and our
/// character error rate against the ground truth is within 0.3 points of tesseract's.
#[test]
fn lines_read_like_tesseract() {
    let r = recognizer();
    let meta = json("lines.json");
    let lines = meta["lines"].as_array().unwrap();
    let (mut same, mut same_dict, mut our_edits, mut their_edits, mut chars) = (0, 0, 0, 0, 0);
    let mut differ = Vec::new();
    for l in lines {
        let ours = r
            .recognize_line(&line_image(l["image"].as_str().unwrap()))
            .unwrap()
            .text;
        let (theirs, truth) = (
            l["tesseract_nodict"].as_str().unwrap(),
            l["truth"].as_str().unwrap(),
        );
        same_dict += usize::from(ours == l["tesseract"].as_str().unwrap());
        if ours == theirs {
            same += 1;
        } else {
            differ.push(format!("{}: {ours:?} vs {theirs:?}", l["image"]));
        }
        our_edits += edits(&ours, truth);
        their_edits += edits(theirs, truth);
        chars += truth.chars().count();
    }
    let (ours_cer, theirs_cer) = (
        100.0 * our_edits as f64 / chars as f64,
        100.0 * their_edits as f64 / chars as f64,
    );
    println!(
        "identical to tesseract: {same}/{} ({:.1} %; to tesseract with its dictionaries {same_dict}); CER ours {ours_cer:.3} %, tesseract {theirs_cer:.3} %\n{}",
        lines.len(),
        100.0 * same as f64 / lines.len() as f64,
        differ.join("\n")
    );
    assert!(lines.len() >= 300);
    assert!(
        same * 100 >= lines.len() * 98,
        "{same}/{} identical",
        lines.len()
    );
    assert!(
        (ours_cer - theirs_cer).abs() <= 0.3,
        "CER {ours_cer:.3} vs {theirs_cer:.3}"
    );
}

/// Taken whole, the line's text depends on the network and the search alone: every line must
/// read as tesseract's `--psm 13` (a near-tie could flip on another libm's `exp`/`ln`, so one
/// in a hundred may differ).
#[test]
fn whole_image_lines_read_exactly_like_tesseract() {
    let r = recognizer();
    let meta = json("lines.json");
    let lines = meta["lines"].as_array().unwrap();
    let mut differ = Vec::new();
    for l in lines {
        let ours = r
            .recognize_raw_line(&line_image(l["image"].as_str().unwrap()))
            .unwrap()
            .text;
        let theirs = l["tesseract_raw_nodict"].as_str().unwrap();
        if ours != theirs {
            differ.push(format!("{}: {ours:?} vs {theirs:?}", l["image"]));
        }
    }
    println!(
        "whole-image lines identical to tesseract --psm 13: {}/{}",
        lines.len() - differ.len(),
        lines.len()
    );
    assert!(differ.len() * 100 <= lines.len(), "{differ:#?}");
}

/// A page of fixture lines stacked with gaps reads, line by line, as tesseract reads the lines
/// alone.
#[test]
fn a_simple_page_reads_line_by_line() {
    let r = recognizer();
    let meta = json("lines.json");
    let picks: Vec<&Value> = meta["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["angle"] == 0.0)
        .take(8)
        .collect();
    let images: Vec<GreyImage> = picks
        .iter()
        .map(|l| line_image(l["image"].as_str().unwrap()))
        .collect();
    let width = images.iter().map(|i| i.width()).max().unwrap() + 20;
    let gap = 12;
    let height: usize = images.iter().map(|i| i.height() + gap).sum::<usize>() + gap;
    let mut data = vec![255u8; width * height];
    let mut y = gap;
    for img in &images {
        for row in 0..img.height() {
            data[(y + row) * width + 10..][..img.width()]
                .copy_from_slice(&img.data()[row * img.width()..][..img.width()]);
        }
        y += img.height() + gap;
    }
    let page = r
        .recognize_page(&GreyImage::new(width, height, data).unwrap())
        .unwrap();
    // The oracle: tesseract's reading of each line on its own (no dictionaries). The page
    // cuts each line from its band, so one line in eight may land on another near-tie.
    let theirs: Vec<&str> = picks
        .iter()
        .map(|l| l["tesseract_nodict"].as_str().unwrap())
        .collect();
    let read: Vec<&str> = page.lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(read.len(), theirs.len(), "{read:#?}");
    let same = read.iter().zip(&theirs).filter(|(a, b)| a == b).count();
    println!(
        "page lines as tesseract reads them alone: {same}/{}",
        theirs.len()
    );
    assert!(
        same + 1 >= theirs.len(),
        "page {read:#?} vs tesseract {theirs:#?}"
    );
    assert_eq!(page.text, read.join("\n"));
}
