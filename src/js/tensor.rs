//! The JavaScript `Tensor` class.

use super::error::invalid;
use crate::{DType, Shape, Tensor};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Element types: plain (`f32` … `i32`) and ggml block-quantized (`q4_0` … `q8_k`). */
export type DType = "f32" | "f16" | "bf16" | "i8" | "i32" | "q4_0" | "q8_0"
  | "q4_1" | "q5_0" | "q5_1" | "q4_k" | "q5_k" | "q6_k" | "q8_k";
/** A shape, permutation or list of ids: non-negative integers below 2^32. */
export type Shape = readonly number[] | Uint32Array;
/** Token ids: non-negative integers below 2^32. */
export type Ids = readonly number[] | Uint32Array;
/** Every `code` an error thrown by kopitiam-wasm can carry: the Rust error variants, then the
 * codes only the JavaScript layer raises (README, "Errors"). */
export type ErrorCode = "ShapeMismatch" | "NotBroadcastable" | "DTypeMismatch" | "UnsupportedDType"
  | "QuantizedElementAccess" | "PartialQuantizedBlock" | "StorageTooSmall" | "LengthMismatch"
  | "AxisOutOfRange" | "NarrowOutOfRange" | "IndexOutOfRange" | "SizeOverflow"
  | "AllocationFailed" | "InvalidArgument" | "InvalidGguf" | "InvalidTraineddata" | "InvalidImage"
  | "MissingMetadata" | "UnsupportedModel" | "ContextFull" | "InvalidSession" | "SessionMismatch"
  | "Freed" | "NotInitialized" | "WasmTrap" | "UnsupportedEnvironment" | "NoModel" | "Aborted" | "HttpError"
  | "NetworkError" | "TruncatedDownload" | "WorkerCrashed" | "EngineDisposed";
/** Errors thrown by kopitiam-wasm: `name` is "KopitiamError", `code` says what happened. */
export interface KopitiamError extends Error { code: ErrorCode; }
/** The two states `Tensor.lstmCell` returns. */
export interface LstmState { cell: Tensor; hidden: Tensor; }
"#;

/// A shape the JS layer (`js/api.js`) has already checked: a `Uint32Array` of dimensions.
fn shape_of(dims: &[u32]) -> Shape {
    Shape::from(dims.iter().map(|&d| d as usize).collect::<Vec<_>>())
}

fn dtype_arg(op: &'static str, name: &str) -> Result<DType, JsValue> {
    DType::from_name(name).ok_or_else(|| invalid(op, format!("unknown dtype {name:?}")))
}

fn number_array(v: &[usize]) -> js_sys::Array {
    v.iter().map(|&d| JsValue::from(d as f64)).collect()
}

/// A tensor living in wasm memory. Call `free()` when done (or rely on the FinalizationRegistry
/// wasm-bindgen sets up); views share storage, so freeing one never invalidates another.
#[wasm_bindgen(js_name = Tensor)]
pub struct JsTensor {
    inner: Tensor,
}

impl From<Tensor> for JsTensor {
    fn from(inner: Tensor) -> Self {
        JsTensor { inner }
    }
}

impl JsTensor {
    /// The Rust tensor behind this handle.
    pub fn inner(&self) -> &Tensor {
        &self.inner
    }
}

type JsResult<T> = Result<T, JsValue>;

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    // ------------------------------------------------------------ constructors

    /// A contiguous f32 tensor; `data.length` must equal the product of `shape`.
    #[wasm_bindgen(js_name = fromFloat32Array)]
    pub fn from_float32_array(
        #[wasm_bindgen(unchecked_param_type = "Float32Array | readonly number[]")] data: Vec<f32>,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::from_f32(data, shape_of(&shape))?.into())
    }

    /// An f16 tensor from IEEE binary16 bit patterns.
    #[wasm_bindgen(js_name = fromFloat16Bits)]
    pub fn from_float16_bits(
        #[wasm_bindgen(unchecked_param_type = "Uint16Array | readonly number[]")] bits: Vec<u16>,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::from_f16(bits, shape_of(&shape))?.into())
    }

    /// A bf16 tensor from bfloat16 bit patterns.
    #[wasm_bindgen(js_name = fromBFloat16Bits)]
    pub fn from_bfloat16_bits(
        #[wasm_bindgen(unchecked_param_type = "Uint16Array | readonly number[]")] bits: Vec<u16>,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::from_bf16(bits, shape_of(&shape))?.into())
    }

    #[wasm_bindgen(js_name = fromInt8Array)]
    pub fn from_int8_array(
        #[wasm_bindgen(unchecked_param_type = "Int8Array | readonly number[]")] data: Vec<i8>,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::from_i8(data, shape_of(&shape))?.into())
    }

    #[wasm_bindgen(js_name = fromInt32Array)]
    pub fn from_int32_array(
        #[wasm_bindgen(unchecked_param_type = "Int32Array | readonly number[]")] data: Vec<i32>,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::from_i32(data, shape_of(&shape))?.into())
    }

    /// A block-quantized tensor from raw ggml block bytes (`"q4_0"`: 18 bytes per 32 values,
    /// `"q8_0"`: 34 bytes per 32 values).
    #[wasm_bindgen(js_name = fromQuantized)]
    pub fn from_quantized(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: Vec<u8>,
        #[wasm_bindgen(unchecked_param_type = "DType")] dtype: String,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        let dtype = dtype_arg("fromQuantized", &dtype)?;
        Ok(Tensor::from_quantized(dtype, bytes, shape_of(&shape))?.into())
    }

    /// f32 zeros.
    pub fn zeros(
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::try_zeros(shape_of(&shape))?.into())
    }

    // ------------------------------------------------------------ accessors

    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn shape(&self) -> js_sys::Array {
        number_array(self.inner.dims())
    }

    /// Element strides of this view (0 on broadcast axes).
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn strides(&self) -> js_sys::Array {
        number_array(self.inner.strides())
    }

    #[wasm_bindgen(getter, unchecked_return_type = "DType")]
    pub fn dtype(&self) -> String {
        self.inner.dtype().name().to_string()
    }

    #[wasm_bindgen(getter)]
    pub fn rank(&self) -> usize {
        self.inner.rank()
    }

    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.inner.elem_count()
    }

    #[wasm_bindgen(getter, js_name = isContiguous)]
    pub fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// A second handle to the same data (no copy); free each handle independently.
    #[allow(clippy::should_implement_trait)]
    pub fn clone(&self) -> JsTensor {
        self.inner.clone().into()
    }

    #[wasm_bindgen(js_name = toFloat32Array)]
    pub fn to_float32_array(&self) -> JsResult<Vec<f32>> {
        Ok(self.inner.to_vec_f32()?)
    }

    #[wasm_bindgen(js_name = toInt32Array)]
    pub fn to_int32_array(&self) -> JsResult<Vec<i32>> {
        Ok(self.inner.to_vec_i32()?)
    }

    #[wasm_bindgen(js_name = toInt8Array)]
    pub fn to_int8_array(&self) -> JsResult<Vec<i8>> {
        Ok(self.inner.to_vec_i8()?)
    }

    /// The raw bits of an f16 or bf16 tensor.
    #[wasm_bindgen(js_name = toUint16Array)]
    pub fn to_uint16_array(&self) -> JsResult<Vec<u16>> {
        Ok(match self.inner.dtype() {
            DType::BF16 => self.inner.to_vec_bf16_bits()?,
            _ => self.inner.to_vec_f16_bits()?,
        })
    }

    /// The raw block bytes of a quantized tensor.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> JsResult<Vec<u8>> {
        Ok(crate::storage::try_copy(self.inner.quantized_bytes()?)?)
    }

    #[wasm_bindgen(js_name = toString)]
    pub fn to_string_js(&self) -> String {
        format!("{:?}", self.inner)
    }

    // ------------------------------------------------------------ views and conversions

    pub fn transpose(&self, dim0: usize, dim1: usize) -> JsResult<JsTensor> {
        Ok(self.inner.transpose(dim0, dim1)?.into())
    }

    pub fn permute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Shape")] perm: Vec<u32>,
    ) -> JsResult<JsTensor> {
        let perm: Vec<usize> = perm.iter().map(|&d| d as usize).collect();
        Ok(self.inner.permute(&perm)?.into())
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> JsResult<JsTensor> {
        Ok(self.inner.narrow(dim, start, len)?.into())
    }

    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(self.inner.broadcast_to(shape_of(&shape))?.into())
    }

    pub fn reshape(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Shape")] shape: Vec<u32>,
    ) -> JsResult<JsTensor> {
        Ok(self.inner.reshape(shape_of(&shape))?.into())
    }

    /// A fresh contiguous copy with its own storage (one memcpy when already contiguous).
    pub fn copy(&self) -> JsResult<JsTensor> {
        Ok(self.inner.copy()?.into())
    }

    pub fn contiguous(&self) -> JsResult<JsTensor> {
        Ok(self.inner.contiguous()?.into())
    }

    #[wasm_bindgen(js_name = toDtype)]
    pub fn to_dtype(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DType")] dtype: String,
    ) -> JsResult<JsTensor> {
        Ok(self.inner.to_dtype(dtype_arg("toDtype", &dtype)?)?.into())
    }

    // ------------------------------------------------------------ ops

    pub fn add(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.add(&rhs.inner)?.into())
    }
    pub fn sub(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.sub(&rhs.inner)?.into())
    }
    pub fn mul(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.mul(&rhs.inner)?.into())
    }
    pub fn div(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.div(&rhs.inner)?.into())
    }
    pub fn maximum(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.maximum(&rhs.inner)?.into())
    }
    pub fn minimum(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.minimum(&rhs.inner)?.into())
    }
    pub fn eq(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.eq(&rhs.inner)?.into())
    }
    pub fn ne(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.ne(&rhs.inner)?.into())
    }
    pub fn lt(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.lt(&rhs.inner)?.into())
    }
    pub fn le(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.le(&rhs.inner)?.into())
    }
    pub fn gt(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.gt(&rhs.inner)?.into())
    }
    pub fn ge(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.ge(&rhs.inner)?.into())
    }

    pub fn neg(&self) -> JsResult<JsTensor> {
        Ok(self.inner.neg()?.into())
    }
    pub fn abs(&self) -> JsResult<JsTensor> {
        Ok(self.inner.abs()?.into())
    }
    pub fn exp(&self) -> JsResult<JsTensor> {
        Ok(self.inner.exp()?.into())
    }
    pub fn log(&self) -> JsResult<JsTensor> {
        Ok(self.inner.log()?.into())
    }
    pub fn sqrt(&self) -> JsResult<JsTensor> {
        Ok(self.inner.sqrt()?.into())
    }
    pub fn relu(&self) -> JsResult<JsTensor> {
        Ok(self.inner.relu()?.into())
    }
    /// `x * mul + add`.
    pub fn affine(&self, mul: f32, add: f32) -> JsResult<JsTensor> {
        Ok(self.inner.affine(mul, add)?.into())
    }
    pub fn silu(&self) -> JsResult<JsTensor> {
        Ok(self.inner.silu()?.into())
    }
    /// GELU, tanh approximation.
    pub fn gelu(&self) -> JsResult<JsTensor> {
        Ok(self.inner.gelu()?.into())
    }
    pub fn tanh(&self) -> JsResult<JsTensor> {
        Ok(self.inner.tanh()?.into())
    }
    pub fn sigmoid(&self) -> JsResult<JsTensor> {
        Ok(self.inner.sigmoid()?.into())
    }
    pub fn logistic(&self) -> JsResult<JsTensor> {
        Ok(self.inner.logistic()?.into())
    }

    /// Sum along `axis` (accumulated in f64).
    pub fn sum(&self, axis: usize, keepdim: Option<bool>) -> JsResult<JsTensor> {
        Ok(self.inner.sum(axis, keepdim.unwrap_or(false))?.into())
    }
    pub fn max(&self, axis: usize, keepdim: Option<bool>) -> JsResult<JsTensor> {
        Ok(self.inner.max(axis, keepdim.unwrap_or(false))?.into())
    }
    /// Index of the first maximum along `axis`, as an `i32` tensor.
    pub fn argmax(&self, axis: usize, keepdim: Option<bool>) -> JsResult<JsTensor> {
        Ok(self.inner.argmax(axis, keepdim.unwrap_or(false))?.into())
    }
    pub fn softmax(&self, axis: usize) -> JsResult<JsTensor> {
        Ok(self.inner.softmax(axis)?.into())
    }
    #[wasm_bindgen(js_name = rmsNorm)]
    pub fn rms_norm(&self, weight: &JsTensor, eps: f32) -> JsResult<JsTensor> {
        Ok(self.inner.rms_norm(&weight.inner, eps)?.into())
    }
    #[wasm_bindgen(js_name = layerNorm)]
    pub fn layer_norm(&self, weight: &JsTensor, bias: &JsTensor, eps: f32) -> JsResult<JsTensor> {
        Ok(self
            .inner
            .layer_norm(&weight.inner, &bias.inner, eps)?
            .into())
    }
    pub fn matmul(&self, rhs: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.matmul(&rhs.inner)?.into())
    }
    /// `this @ weight^T` for a Q4_0/Q8_0 `weight` `[out, in]`, without dequantizing it.
    #[wasm_bindgen(js_name = quantizedMatmul)]
    pub fn quantized_matmul(&self, weight: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.quantized_matmul(&weight.inner)?.into())
    }
    /// `bias` is consumed here; the public JS method hands over a `clone()` of the caller's.
    pub fn conv1d(
        &self,
        weight: &JsTensor,
        bias: Option<JsTensor>,
        stride: usize,
    ) -> JsResult<JsTensor> {
        Ok(self
            .inner
            .conv1d(&weight.inner, bias.as_ref().map(|b| &b.inner), stride)?
            .into())
    }
    pub fn maxpool1d(&self, kernel: usize, stride: usize) -> JsResult<JsTensor> {
        Ok(self.inner.maxpool1d(kernel, stride)?.into())
    }
    /// Rows of this `[vocab, hidden]` table (f32 or quantized) picked by an `i32` id tensor.
    #[wasm_bindgen(js_name = gatherRows)]
    pub fn gather_rows(&self, ids: &JsTensor) -> JsResult<JsTensor> {
        Ok(self.inner.gather_rows(&ids.inner)?.into())
    }

    /// Joins tensors along `dim`. The handles are consumed; the public JS method passes clones,
    /// so the caller's stay valid.
    pub fn concat(
        #[wasm_bindgen(unchecked_param_type = "Tensor[]")] tensors: Vec<JsTensor>,
        dim: usize,
    ) -> JsResult<JsTensor> {
        let list: Vec<Tensor> = tensors.into_iter().map(|t| t.inner).collect();
        Ok(Tensor::concat(&list, dim)?.into())
    }

    /// One LSTM timestep from gate pre-activations; returns `{ cell, hidden }`.
    #[wasm_bindgen(js_name = lstmCell, unchecked_return_type = "LstmState")]
    pub fn lstm_cell(
        input_gate: &JsTensor,
        forget_gate: &JsTensor,
        cell_candidate: &JsTensor,
        output_gate: &JsTensor,
        cell_prev: &JsTensor,
    ) -> JsResult<js_sys::Object> {
        let s = Tensor::lstm_cell(
            &input_gate.inner,
            &forget_gate.inner,
            &cell_candidate.inner,
            &output_gate.inner,
            &cell_prev.inner,
        )?;
        let obj = js_sys::Object::new();
        js_sys::Reflect::set(&obj, &"cell".into(), &JsTensor::from(s.cell).into())?;
        js_sys::Reflect::set(&obj, &"hidden".into(), &JsTensor::from(s.hidden).into())?;
        Ok(obj)
    }

    /// Decodes a Tesseract int8 matrix: `out[i][j] = weights[i * cols + j] * scales[i]`.
    #[wasm_bindgen(js_name = tessdataInt8ToF32)]
    pub fn tessdata_int8_to_f32(
        weights: Vec<i8>,
        scales: Vec<f32>,
        rows: usize,
        cols: usize,
    ) -> JsResult<JsTensor> {
        Ok(Tensor::tessdata_int8_to_f32(&weights, &scales, rows, cols)?.into())
    }
}
