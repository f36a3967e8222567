//! The recognizer's layer tree as Tesseract serialises it (`Network::CreateFromFile`): every
//! layer starts with a common header (type name, flags, input/output widths, name), then its
//! own fields; plumbing layers (Series, Parallel, Reversed) hold their children in turn.

use super::serial::Reader;
use super::weights::Int8Matrix;
use crate::error::Result;

/// How a fully-connected layer's outputs are squashed (Tesseract's `NT_*` activations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `NT_TANH`, through Tesseract's interpolated table.
    Tanh,
    /// `NT_LOGISTIC`, through Tesseract's interpolated table.
    Logistic,
    /// `NT_POSCLIP`: clip to [0, 1].
    PosClip,
    /// `NT_SYMCLIP`: clip to [-1, 1].
    SymClip,
    Relu,
    Linear,
    /// `NT_SOFTMAX` / `NT_SOFTMAX_NO_CTC`: float probabilities, the network's output.
    Softmax,
}

/// How a `Reversed` layer reorders its input before and after its child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorder {
    /// `RTLReversed`: right to left.
    Rtl,
    /// `TTBReversed`: bottom to top.
    Ttb,
    /// `XYTranspose`: columns become rows, so the child scans vertically.
    XyTranspose,
}

/// One LSTM layer: four gates (cell input, input, forget, output) over `[input, previous
/// output]` (plus the previous row's output in the 2-D kind), each an int8 matrix with a bias
/// column.
#[derive(Debug)]
pub struct Lstm {
    /// Cells (`ns` in Tesseract).
    pub cells: usize,
    /// `SummLSTM`: only each row's last output is kept (the row collapses to one step).
    pub summarize: bool,
    /// The gate matrices stacked in Tesseract's order `CI, GI, GF1, GO`: `[4 · cells, na + 1]`.
    pub gates: Int8Matrix,
}

/// A layer's own part.
#[derive(Debug)]
pub enum Kind {
    /// The input's declared shape: `[batch, height, width, depth]` (0 = variable).
    Input {
        shape: [usize; 4],
    },
    /// Stacks each position's `(2 half_x + 1) × (2 half_y + 1)` neighbourhood (x outer, y
    /// inner) into its features; weightless — the following layer does the multiply.
    Convolve {
        half_x: usize,
        half_y: usize,
    },
    Maxpool {
        x_scale: usize,
        y_scale: usize,
    },
    Series(Vec<Layer>),
    /// Every child sees the same input; their outputs are concatenated.
    Parallel(Vec<Layer>),
    Reversed {
        reorder: Reorder,
        child: Box<Layer>,
    },
    FullyConnected {
        activation: Activation,
        weights: Int8Matrix,
    },
    Lstm(Lstm),
}

/// One layer of the tree with the header fields every layer shares.
#[derive(Debug)]
pub struct Layer {
    pub name: String,
    /// Input features (`ni`).
    pub inputs: usize,
    /// Output features (`no`).
    pub outputs: usize,
    pub kind: Kind,
}

/// Limits well above any published model, so damaged sizes fail before they allocate.
const MAX_WIDTH: usize = 1 << 16;
const MAX_DEPTH: usize = 64;
const MAX_CHILDREN: usize = 256;
/// `NF_LAYER_SPECIFIC_LR`: the plumbing layer stores per-child learning rates.
const NF_LAYER_SPECIFIC_LR: i32 = 64;

/// Fields of the common header that the layer-specific readers need.
struct Header {
    type_name: String,
    flags: i32,
    inputs: usize,
    outputs: usize,
    name: String,
}

impl Layer {
    /// Reads one layer (and its subtree).
    pub(crate) fn read(r: &mut Reader, depth: usize) -> Result<Layer> {
        if depth > MAX_DEPTH {
            return Err(r.error(format!("layers nest more than {MAX_DEPTH} deep")));
        }
        let at = r.offset();
        let h = read_header(r)?;
        let kind = match h.type_name.as_str() {
            "Input" => {
                let mut shape = [0; 4];
                for d in &mut shape {
                    *d = r.size("an input dimension", MAX_WIDTH)?;
                }
                r.i32("the input loss type")?;
                Kind::Input { shape }
            }
            "Convolve" => Kind::Convolve {
                half_x: r.size("the convolution half-width", 64)?,
                half_y: r.size("the convolution half-height", 64)?,
            },
            "Maxpool" => {
                let x_scale = r.size("the pooling width", 64)?;
                let y_scale = r.size("the pooling height", 64)?;
                if x_scale == 0 || y_scale == 0 {
                    return Err(r.error("a pooling window of size 0"));
                }
                Kind::Maxpool { x_scale, y_scale }
            }
            "Series" => Kind::Series(read_children(r, &h, depth)?),
            "Parallel" | "Replicated" | "ParBidiLSTM" | "DepParUDLSTM" | "Par2dLSTM" => {
                Kind::Parallel(read_children(r, &h, depth)?)
            }
            "RTLReversed" | "TTBReversed" | "XYTranspose" => {
                let reorder = match h.type_name.as_str() {
                    "RTLReversed" => Reorder::Rtl,
                    "TTBReversed" => Reorder::Ttb,
                    _ => Reorder::XyTranspose,
                };
                let mut children = read_children(r, &h, depth)?;
                if children.len() != 1 {
                    return Err(r.error(format!(
                        "{} holds {} layers, not 1",
                        h.type_name,
                        children.len()
                    )));
                }
                Kind::Reversed {
                    reorder,
                    child: Box::new(children.remove(0)),
                }
            }
            "LSTM" | "SummLSTM" | "LSTMSoftmax" => Kind::Lstm(read_lstm(r, &h)?),
            name => match activation(name) {
                Some(activation) => Kind::FullyConnected {
                    activation,
                    weights: Int8Matrix::read(r, "fully-connected weights")?,
                },
                None => {
                    return Err(super::serial::invalid(
                        at,
                        format!("layer type {name:?} is not supported"),
                    ))
                }
            },
        };
        let layer = Layer {
            name: h.name,
            inputs: h.inputs,
            outputs: h.outputs,
            kind,
        };
        layer.check(r, at)?;
        Ok(layer)
    }

    /// Widths the forward pass relies on, checked once at load.
    fn check(&self, r: &Reader, at: u64) -> Result<()> {
        let bad = |why: String| {
            Err(super::serial::invalid(
                at,
                format!("layer {:?}: {why}", self.name),
            ))
        };
        match &self.kind {
            Kind::Input { .. } | Kind::Maxpool { .. } | Kind::Reversed { .. } => Ok(()),
            Kind::Convolve { half_x, half_y } => {
                let n = self.inputs * (2 * half_x + 1) * (2 * half_y + 1);
                if n != self.outputs {
                    bad(format!(
                        "convolution makes {n} features, header says {}",
                        self.outputs
                    ))
                } else {
                    Ok(())
                }
            }
            Kind::Series(ch) => {
                for pair in ch.windows(2) {
                    if pair[0].outputs != pair[1].inputs {
                        return bad(format!(
                            "{:?} gives {} features to {:?}, which takes {}",
                            pair[0].name, pair[0].outputs, pair[1].name, pair[1].inputs
                        ));
                    }
                }
                match (ch.first(), ch.last()) {
                    (Some(f), Some(l)) if f.inputs == self.inputs && l.outputs == self.outputs => {
                        Ok(())
                    }
                    _ => bad("children do not match the series' widths".into()),
                }
            }
            Kind::Parallel(ch) => {
                let sum: usize = ch.iter().map(|c| c.outputs).sum();
                if ch.iter().any(|c| c.inputs != self.inputs) || sum != self.outputs {
                    bad("children do not match the parallel layer's widths".into())
                } else {
                    Ok(())
                }
            }
            Kind::FullyConnected { weights, .. } => {
                if weights.rows != self.outputs || weights.cols != self.inputs + 1 {
                    bad(format!(
                        "weights are {}x{}, widths {} -> {}",
                        weights.rows, weights.cols, self.inputs, self.outputs
                    ))
                } else {
                    Ok(())
                }
            }
            Kind::Lstm(l) => {
                let _ = r;
                let na = self.inputs + l.cells;
                if l.gates.rows != 4 * l.cells || l.gates.cols != na + 1 {
                    return bad(format!("gate matrices are not {}x{}", l.cells, na + 1));
                }
                if l.cells != self.outputs {
                    bad(format!(
                        "makes {} outputs, header says {}",
                        l.cells, self.outputs
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Visits this layer and every layer below it.
    pub fn walk(&self, f: &mut dyn FnMut(&Layer)) {
        f(self);
        match &self.kind {
            Kind::Series(ch) | Kind::Parallel(ch) => ch.iter().for_each(|c| c.walk(f)),
            Kind::Reversed { child, .. } => child.walk(f),
            _ => {}
        }
    }
}

fn read_header(r: &mut Reader) -> Result<Header> {
    let at = r.offset();
    let type_id = r.i8("the layer type")?;
    // Files name the type (`NT_NONE` then a string); numeric ids are from before 2016.
    if type_id != 0 {
        return Err(super::serial::invalid(
            at,
            format!("numeric layer type {type_id}: pre-4.0 networks are not supported"),
        ));
    }
    let type_name = r.string("the layer type name")?;
    let _training = r.i8("the training flag")?;
    let _needs_backprop = r.i8("the backprop flag")?;
    let flags = r.i32("the layer flags")?;
    let inputs = r.size("the input width", MAX_WIDTH)?;
    let outputs = r.size("the output width", MAX_WIDTH)?;
    let _num_weights = r.i32("the weight count")?;
    let name = r.string("the layer name")?;
    Ok(Header {
        type_name,
        flags,
        inputs,
        outputs,
        name,
    })
}

fn read_children(r: &mut Reader, h: &Header, depth: usize) -> Result<Vec<Layer>> {
    let n = r.count("the child count", 1)?;
    if n > MAX_CHILDREN {
        return Err(r.error(format!("{n} child layers (more than {MAX_CHILDREN})")));
    }
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(Layer::read(r, depth + 1)?);
    }
    if h.flags & NF_LAYER_SPECIFIC_LR != 0 {
        r.f32_vec("the layer learning rates")?;
    }
    Ok(out)
}

fn read_lstm(r: &mut Reader, h: &Header) -> Result<Lstm> {
    if h.type_name == "LSTMSoftmax" {
        return Err(
            r.error("LSTMSoftmax layers (an LSTM with a built-in softmax) are not supported")
        );
    }
    let na = r.size("the LSTM source width", MAX_WIDTH)?;
    let mut gates = Vec::new();
    for what in ["CI weights", "GI weights", "GF1 weights", "GO weights"] {
        gates.push(Int8Matrix::read(r, what)?);
    }
    let cells = gates[0].rows;
    // Tesseract tells the 2-D kind from the source width: input + 2 × cells.
    if na == h.inputs + 2 * cells {
        return Err(r.error("2-D LSTM layers (a forget gate per direction) are not supported"));
    }
    if na != h.inputs + cells {
        return Err(r.error(format!(
            "LSTM source width {na} is not inputs {} + cells {cells}",
            h.inputs
        )));
    }
    Ok(Lstm {
        cells,
        summarize: h.type_name == "SummLSTM",
        gates: Int8Matrix::stack(&gates)?,
    })
}

fn activation(type_name: &str) -> Option<Activation> {
    Some(match type_name {
        "Logistic" => Activation::Logistic,
        "LinLogistic" => Activation::PosClip,
        "LinTanh" => Activation::SymClip,
        "Tanh" => Activation::Tanh,
        "Relu" => Activation::Relu,
        "Linear" => Activation::Linear,
        "Softmax" | "SoftmaxNoCTC" => Activation::Softmax,
        _ => return None,
    })
}
