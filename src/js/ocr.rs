//! `OcrModel`: a Tesseract `.traineddata` LSTM recognizer for JavaScript (see `crate::ocr`).
//! Images arrive as RGBA (`ImageData.data`) or 8-bit grey bytes, already checked by
//! `js/api.js`; results are plain objects.

use super::loader::FileBuffer;
use super::set;
use crate::ocr::{CharResult, GreyImage, LineResult, PageResult, Recognizer};
use crate::Error;
use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;

type JsResult<T> = Result<T, JsValue>;

#[wasm_bindgen(typescript_custom_section)]
const TS_OCR: &str = r#"
/** What a loaded OCR model is. */
export interface OcrModelInfo { spec: string; inputHeight: number; characters: number; }
/** One recognised character: its text, confidence 0–100 and horizontal extent in image pixels. */
export interface OcrChar { text: string; confidence: number; x0: number; x1: number; }
/** A recognised line: words joined by single spaces; `bbox` = [x0, y0, x1, y1] of the part read. */
export interface OcrLine { text: string; confidence: number; chars: OcrChar[]; bbox: [number, number, number, number]; }
/** The lines of a simple page, top to bottom; `text` joins them with "\n". */
export interface OcrPage { text: string; lines: OcrLine[]; }
"#;

#[wasm_bindgen(js_name = OcrModel)]
pub struct JsOcrModel {
    recognizer: Recognizer,
}

/// RGBA when there are four bytes per pixel, grey when one.
fn image(data: &[u8], width: u32, height: u32) -> Result<GreyImage, Error> {
    let (w, h) = (width as usize, height as usize);
    match w.checked_mul(h) {
        Some(n) if data.len() == n => GreyImage::new(w, h, data.to_vec()),
        Some(n) if Some(data.len()) == n.checked_mul(4) => GreyImage::from_rgba(w, h, data),
        _ => Err(Error::InvalidImage {
            reason: format!(
                "{} bytes are neither {width}x{height} RGBA nor grey",
                data.len()
            ),
        }),
    }
}

fn char_object(c: &CharResult) -> Object {
    let o = Object::new();
    set(&o, "text", c.text.as_str().into());
    set(&o, "confidence", c.confidence.into());
    set(&o, "x0", (c.x0 as f64).into());
    set(&o, "x1", (c.x1 as f64).into());
    o
}

fn line_object(l: &LineResult) -> Object {
    let o = Object::new();
    set(&o, "text", l.text.as_str().into());
    set(&o, "confidence", l.confidence.into());
    let chars: Array = l.chars.iter().map(char_object).collect();
    set(&o, "chars", chars.into());
    let (x0, y0, x1, y1) = l.bbox;
    let bbox: Array = [x0, y0, x1, y1]
        .iter()
        .map(|&v| JsValue::from(v as f64))
        .collect();
    set(&o, "bbox", bbox.into());
    o
}

fn page_object(page: &PageResult) -> Object {
    let o = Object::new();
    set(&o, "text", page.text.as_str().into());
    let lines: Array = page.lines.iter().map(line_object).collect();
    set(&o, "lines", lines.into());
    o
}

/// Streams a `.traineddata` into wasm memory (see `ModelLoader`): no copy of the file in
/// JavaScript.
#[wasm_bindgen(js_name = OcrModelLoader)]
pub struct JsOcrModelLoader {
    buf: FileBuffer,
}

#[wasm_bindgen(js_class = OcrModelLoader)]
impl JsOcrModelLoader {
    #[wasm_bindgen(constructor)]
    pub fn new(total_bytes: Option<f64>) -> JsResult<JsOcrModelLoader> {
        Ok(JsOcrModelLoader {
            buf: FileBuffer::new(total_bytes)?,
        })
    }

    pub fn push(&mut self, chunk: &[u8]) -> JsResult<()> {
        self.buf.push(chunk)
    }

    #[wasm_bindgen(getter)]
    pub fn loaded(&self) -> f64 {
        self.buf.loaded()
    }

    /// Parses the file (then freed: the recognizer keeps its own weights).
    pub fn finish(self) -> JsResult<JsOcrModel> {
        Ok(JsOcrModel {
            recognizer: Recognizer::from_bytes(&self.buf.into_bytes())?,
        })
    }
}

#[wasm_bindgen(js_class = OcrModel)]
impl JsOcrModel {
    /// Loads the LSTM recognizer of a `.traineddata` file (tessdata_fast / Debian models).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: Vec<u8>) -> JsResult<JsOcrModel> {
        Ok(JsOcrModel {
            recognizer: Recognizer::from_bytes(&bytes)?,
        })
    }

    #[wasm_bindgen(getter, unchecked_return_type = "OcrModelInfo")]
    pub fn info(&self) -> Object {
        let o = Object::new();
        set(&o, "spec", self.recognizer.spec.as_str().into());
        set(
            &o,
            "inputHeight",
            (self.recognizer.input_height as f64).into(),
        );
        set(
            &o,
            "characters",
            (self.recognizer.characters() as f64).into(),
        );
        o
    }

    /// Reads one line of text (`data`: RGBA or grey bytes of a `width × height` image).
    #[wasm_bindgen(js_name = recognizeLine, unchecked_return_type = "OcrLine")]
    pub fn recognize_line(&self, data: &[u8], width: u32, height: u32) -> JsResult<Object> {
        let img = image(data, width, height)?;
        Ok(line_object(&self.recognizer.recognize_line(&img)?))
    }

    /// Reads one line from PNG bytes, decoded here (no canvas, no RGBA copy in JavaScript).
    #[wasm_bindgen(js_name = recognizeLinePng, unchecked_return_type = "OcrLine")]
    pub fn recognize_line_png(&self, png: &[u8]) -> JsResult<Object> {
        let img = GreyImage::from_png(png)?;
        Ok(line_object(&self.recognizer.recognize_line(&img)?))
    }

    /// Reads a simple page from PNG bytes.
    #[wasm_bindgen(js_name = recognizePng, unchecked_return_type = "OcrPage")]
    pub fn recognize_png(&self, png: &[u8]) -> JsResult<Object> {
        let img = GreyImage::from_png(png)?;
        Ok(page_object(&self.recognizer.recognize_page(&img)?))
    }

    /// Reads a simple page (one column of lines on a plain background).
    #[wasm_bindgen(unchecked_return_type = "OcrPage")]
    pub fn recognize(&self, data: &[u8], width: u32, height: u32) -> JsResult<Object> {
        let img = image(data, width, height)?;
        Ok(page_object(&self.recognizer.recognize_page(&img)?))
    }
}
