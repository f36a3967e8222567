//! `ocr::scale::pix_scale` against Leptonica's own `pixScale` (outputs made by
//! scripts/make-ocr-scale-fixture.py through the installed liblept): every byte must match,
//! since the network reads these pixels. Native only (it reads the fixtures from disk); the
//! wasm build's end-to-end agreement is tests/js/ocr.test.mjs.
#![cfg(not(target_arch = "wasm32"))]

use kopitiam_wasm::ocr::{scale::pix_scale, GreyImage};
use serde_json::Value;
use std::path::Path;

fn fixture(rel: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ocr")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn pix_scale_matches_leptonica_in_every_branch() {
    let meta: Value = serde_json::from_slice(&fixture("scale/scale.json")).unwrap();
    let cases = meta["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let mut failures = Vec::new();
    for case in cases {
        let src = GreyImage::from_png(&fixture(case["image"].as_str().unwrap())).unwrap();
        let factor = case["factor"].as_f64().unwrap() as f32;
        let ours = pix_scale(&src, factor).unwrap();
        let want = fixture(case["output"].as_str().unwrap());
        let what = format!("{} at {factor}", case["image"]);
        let size = (ours.width() as u64, ours.height() as u64);
        if size
            != (
                case["width"].as_u64().unwrap(),
                case["height"].as_u64().unwrap(),
            )
        {
            failures.push(format!("{what}: size {size:?}"));
            continue;
        }
        let diff = ours
            .data()
            .iter()
            .zip(&want)
            .filter(|(a, b)| a != b)
            .count();
        if diff != 0 {
            failures.push(format!("{what}: {diff} of {} pixels differ", want.len()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
