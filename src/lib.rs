//! # kopitiam-wasm
//!
//! A CPU tensor library for WebAssembly (and native) that runs quantized LLMs in the browser, and
//! Tesseract's LSTM OCR models on the same tensors ([`ocr`]).
//!
//! A [`Tensor`] is an `Arc<`[`Storage`]`>` plus an element offset, a [`Shape`], strides and a
//! [`DType`]. Views ([`Tensor::transpose`], [`Tensor::narrow`], [`Tensor::broadcast_to`],
//! [`Tensor::permute`], contiguous [`Tensor::reshape`]) never copy. One odometer row loop
//! (`strided::for_each_row`) walks strided data for conversions and ops; copies coalesce axes
//! and split over threads when large (`strided::copy_strided`).
//!
//! The ops in [`ops`] are f32 reference implementations, written to be obviously correct: they
//! are the oracle for the fast kernels. Block-quantized weights (Q4_0, Q8_0) are stored as raw
//! ggml blocks and multiplied in place by [`Tensor::quantized_matmul`].
//!
//! ```
//! use kopitiam_wasm::{DType, Tensor};
//! let a = Tensor::from_f32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
//! let b = Tensor::from_f32(vec![10.0, 20.0, 30.0], [3])?;
//! let c = a.add(&b)?.transpose(0, 1)?; // [3, 2], a view
//! assert_eq!(c.to_vec_f32()?, vec![11.0, 14.0, 22.0, 25.0, 33.0, 36.0]);
//! assert_eq!(a.matmul(&a.transpose(0, 1)?)?.to_vec_f32()?, vec![14.0, 32.0, 32.0, 77.0]);
//! assert_eq!(a.to_dtype(DType::F16)?.dtype(), DType::F16);
//! # Ok::<(), kopitiam_wasm::Error>(())
//! ```
//!
//! No public function panics on bad input (in wasm a panic kills the instance): every failure is
//! an [`Error`] whose [`Error::code`] reaches JavaScript as `err.code`.

// Read by the section profile (`llm`) and the thread team (natively and with `threads`).
#[cfg(any(feature = "llm", feature = "threads", not(target_arch = "wasm32")))]
mod clock;
mod convert;
pub mod dtype;
pub mod error;
#[cfg(feature = "llm")]
pub mod gguf;
#[cfg(feature = "llm")]
pub mod model;
pub mod ocr;
pub mod ops;
mod parallel;
pub mod quant;
pub mod shape;
pub mod storage;
mod strided;
pub mod tensor;

#[cfg(target_arch = "wasm32")]
pub mod js;

pub use dtype::{DType, DTypeInfo};
pub use error::{Error, Result};
pub use ops::LstmState;
pub use parallel::num_threads;
pub use shape::Shape;
pub use storage::{Bytes, Storage};
pub use tensor::{Device, Tensor};

#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
