//! JavaScript classes for inspecting a GGUF file and using its tokenizer without the weights.

use super::error::invalid;
use crate::gguf::{Array, GgufFile, Value};
use crate::model::tokenizer::Tokenizer;
use crate::model::tokenizer_from_gguf;
use wasm_bindgen::prelude::*;

type JsResult<T> = Result<T, JsValue>;

#[wasm_bindgen(typescript_custom_section)]
const TS_GGUF: &str = r#"
/** One tensor record of a GGUF file; `shape` is row-major (outermost first). */
export interface GgufTensorInfo { name: string; dtype: DType | string; shape: number[]; offset: number; nbytes: number; }
"#;

fn value_to_js(v: &Value) -> JsValue {
    fn list<T: Copy + Into<f64>>(xs: &[T]) -> JsValue {
        xs.iter()
            .map(|&x| JsValue::from(x.into()))
            .collect::<js_sys::Array>()
            .into()
    }
    match v {
        Value::U8(x) => (*x as f64).into(),
        Value::I8(x) => (*x as f64).into(),
        Value::U16(x) => (*x as f64).into(),
        Value::I16(x) => (*x as f64).into(),
        Value::U32(x) => (*x as f64).into(),
        Value::I32(x) => (*x as f64).into(),
        Value::F32(x) => (*x as f64).into(),
        Value::Bool(x) => (*x).into(),
        Value::String(s) => s.into(),
        Value::U64(x) => (*x as f64).into(),
        Value::I64(x) => (*x as f64).into(),
        Value::F64(x) => (*x).into(),
        Value::Array(a) => match a {
            Array::U8(xs) => list(xs),
            Array::I8(xs) => list(xs),
            Array::U16(xs) => list(xs),
            Array::I16(xs) => list(xs),
            Array::U32(xs) => list(xs),
            Array::I32(xs) => list(xs),
            Array::F32(xs) => list(xs),
            Array::F64(xs) => list(xs),
            Array::Bool(xs) => xs
                .iter()
                .map(|&b| JsValue::from(b))
                .collect::<js_sys::Array>()
                .into(),
            Array::String(xs) => xs
                .iter()
                .map(JsValue::from)
                .collect::<js_sys::Array>()
                .into(),
            Array::U64(xs) => xs
                .iter()
                .map(|&x| JsValue::from(x as f64))
                .collect::<js_sys::Array>()
                .into(),
            Array::I64(xs) => xs
                .iter()
                .map(|&x| JsValue::from(x as f64))
                .collect::<js_sys::Array>()
                .into(),
        },
    }
}

/// A parsed GGUF header: metadata and tensor table (the data section is only bounds-checked).
#[wasm_bindgen(js_name = GgufFile)]
pub struct JsGgufFile {
    file: GgufFile,
    bytes: Vec<u8>,
}

#[wasm_bindgen(js_class = GgufFile)]
impl JsGgufFile {
    /// Parses a whole GGUF file (copied into wasm memory).
    pub fn parse(bytes: Vec<u8>) -> JsResult<JsGgufFile> {
        Ok(JsGgufFile {
            file: GgufFile::parse(&bytes)?,
            bytes,
        })
    }

    #[wasm_bindgen(getter)]
    pub fn version(&self) -> u32 {
        self.file.version
    }

    /// Metadata keys, in file order.
    #[wasm_bindgen(getter, unchecked_return_type = "string[]")]
    pub fn keys(&self) -> js_sys::Array {
        self.file
            .metadata
            .iter()
            .map(|(k, _)| JsValue::from(k))
            .collect()
    }

    /// One metadata value (numbers, booleans, strings, or arrays of them), `undefined` if absent.
    pub fn get(&self, key: &str) -> JsValue {
        self.file.get(key).map_or(JsValue::UNDEFINED, value_to_js)
    }

    /// The tensor table.
    #[wasm_bindgen(getter, unchecked_return_type = "GgufTensorInfo[]")]
    pub fn tensors(&self) -> js_sys::Array {
        self.file
            .tensors
            .iter()
            .map(|t| {
                let o = js_sys::Object::new();
                let shape: js_sys::Array =
                    t.shape().iter().map(|&d| JsValue::from(d as f64)).collect();
                for (k, v) in [
                    ("name", JsValue::from(&t.name)),
                    ("dtype", t.dtype.name().into()),
                    ("shape", shape.into()),
                    ("offset", (t.offset as f64).into()),
                    ("nbytes", (t.nbytes as f64).into()),
                ] {
                    let _ = js_sys::Reflect::set(&o, &k.into(), &v);
                }
                JsValue::from(o)
            })
            .collect()
    }

    /// The file's SentencePiece tokenizer.
    pub fn tokenizer(&self) -> JsResult<JsTokenizer> {
        Ok(JsTokenizer {
            inner: tokenizer_from_gguf(&self.file)?,
        })
    }

    /// The raw bytes of one tensor.
    #[wasm_bindgen(js_name = tensorBytes)]
    pub fn tensor_bytes(&self, name: &str) -> JsResult<Vec<u8>> {
        let info = self
            .file
            .tensor(name)
            .ok_or_else(|| invalid("tensorBytes", format!("no tensor {name:?}")))?;
        Ok(crate::storage::try_copy(
            self.file.tensor_bytes(&self.bytes, info)?,
        )?)
    }
}

/// A SentencePiece tokenizer from GGUF metadata.
#[wasm_bindgen(js_name = Tokenizer)]
pub struct JsTokenizer {
    inner: Tokenizer,
}

#[wasm_bindgen(js_class = Tokenizer)]
impl JsTokenizer {
    /// Token ids of `text` (BOS added when `addSpecial`; special tokens parsed when `parseSpecial`).
    pub fn encode(
        &self,
        text: &str,
        add_special: Option<bool>,
        parse_special: Option<bool>,
    ) -> Vec<u32> {
        self.inner.encode(
            text,
            add_special.unwrap_or(true),
            parse_special.unwrap_or(true),
        )
    }

    /// Text of `ids` (control tokens omitted unless `special`).
    pub fn decode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Ids")] ids: Vec<u32>,
        special: Option<bool>,
    ) -> JsResult<String> {
        Ok(self.inner.decode(&ids, special.unwrap_or(false))?)
    }

    #[wasm_bindgen(getter, js_name = vocabSize)]
    pub fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    /// The text of token `id` as stored in the vocabulary (`undefined` when out of range).
    #[wasm_bindgen(js_name = tokenText)]
    pub fn token_text(&self, id: u32) -> Option<String> {
        self.inner.token_text(id).map(str::to_string)
    }

    #[wasm_bindgen(js_name = isEndOfGeneration)]
    pub fn is_eog(&self, id: u32) -> bool {
        self.inner.is_eog(id)
    }
}
