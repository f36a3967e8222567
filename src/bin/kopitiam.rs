//! `kopitiam`: the native command line over the library.
//!
//! ```text
//! kopitiam inspect  MODEL.gguf
//! kopitiam tokenize MODEL.gguf TEXT|- [--plain]
//! kopitiam chat-format MODEL.gguf --messages JSON
//! kopitiam eval     MODEL.gguf TEXT [--top K]
//! kopitiam generate MODEL.gguf TEXT [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
//!                                   [--min-p P] [--repeat-penalty R] [--seed S] [--chat] [--json]
//! kopitiam quantize IN.gguf OUT.gguf [--type q4_0]
//! kopitiam ocr      MODEL.traineddata IMAGE.png [--page | --raw | --frames] [--json]
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use kopitiam_wasm::gguf::{GgufFile, GgufWriter, Value};
use kopitiam_wasm::model::chat::{ChatFormat, ChatMessage};
use kopitiam_wasm::model::generate::{GenerateConfig, Generation};
use kopitiam_wasm::model::sampler::SamplerConfig;
use kopitiam_wasm::model::tokenizer::Tokenizer;
use kopitiam_wasm::model::{tokenizer_from_gguf, Logits, Model};
use kopitiam_wasm::quant::{self, quantize_row_q4_0};
use kopitiam_wasm::DType;
use serde_json::json;

type CliResult<T> = std::result::Result<T, String>;

const USAGE: &str = "usage:
  kopitiam inspect  MODEL.gguf
  kopitiam tokenize MODEL.gguf TEXT|- [--plain]      (also vocab-only files; - reads stdin)
  kopitiam chat-format MODEL.gguf --messages '[{\"role\":\"user\",\"content\":\"Hi\"}]'
  kopitiam eval     MODEL.gguf TEXT [--top K]
  kopitiam generate MODEL.gguf TEXT [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]
                    [--min-p P] [--repeat-penalty R] [--seed S] [--context N] [--chat] [--json]
  kopitiam quantize IN.gguf OUT.gguf [--type q4_0]
  kopitiam ocr      MODEL.traineddata IMAGE.png [--page | --raw | --frames] [--json]
                    (prints the line's text and nothing else; --page reads a simple page,
                    --raw takes the whole image as the line, like tesseract --psm 13;
                    --frames prints each output frame's choices above 1% for that line)";

/// Positional arguments and `--flag [value]` options.
struct Args {
    positional: Vec<String>,
    options: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(raw: impl Iterator<Item = String>) -> Args {
        const SWITCHES: [&str; 6] = ["--json", "--chat", "--plain", "--page", "--raw", "--frames"];
        let mut positional = Vec::new();
        let mut options = Vec::new();
        let mut raw = raw.peekable();
        while let Some(a) = raw.next() {
            if a.starts_with("--") && a.len() > 2 {
                let value = if SWITCHES.contains(&a.as_str()) {
                    None
                } else {
                    raw.next()
                };
                options.push((a, value));
            } else {
                positional.push(a);
            }
        }
        Args {
            positional,
            options,
        }
    }

    fn flag(&self, name: &str) -> bool {
        self.options.iter().any(|(k, _)| k == name)
    }

    fn value<T: std::str::FromStr>(&self, name: &str, default: T) -> CliResult<T> {
        match self.options.iter().rev().find(|(k, _)| k == name) {
            None => Ok(default),
            Some((_, Some(v))) => v.parse().map_err(|_| format!("{name}: cannot parse {v:?}")),
            Some((_, None)) => Err(format!("{name} needs a value")),
        }
    }

    fn pos(&self, i: usize, what: &str) -> CliResult<&str> {
        self.positional
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("missing {what}\n{USAGE}"))
    }
}

/// A library error as the CLI prints it: the message and its stable code.
fn coded(e: kopitiam_wasm::Error) -> String {
    format!("{e} [{}]", e.code())
}

fn load(path: &str) -> CliResult<Model> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    Model::load(bytes).map_err(|e| format!("{path}: {}", coded(e)))
}

fn main() -> ExitCode {
    let mut raw = std::env::args().skip(1);
    let Some(cmd) = raw.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let args = Args::parse(raw);
    let result = match cmd.as_str() {
        "inspect" => inspect(&args),
        "tokenize" => tokenize(&args),
        "chat-format" => chat_format(&args),
        "eval" => eval(&args),
        "generate" => generate(&args),
        "quantize" => quantize(&args),
        "ocr" => ocr(&args),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kopitiam: {e}");
            ExitCode::FAILURE
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => format!("[{} × {}]", a.len(), a.type_name()),
        other => format!("{other:?}")
            .split_once('(')
            .map(|(_, r)| r.trim_end_matches(')').to_string())
            .unwrap_or_default(),
    }
}

fn inspect(args: &Args) -> CliResult<()> {
    let path = args.pos(0, "MODEL.gguf")?;
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let g = GgufFile::parse(&bytes).map_err(|e| format!("{path}: {e}"))?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "GGUF v{} · {} bytes · alignment {} · data at {}",
        g.version,
        bytes.len(),
        g.alignment,
        g.data_offset
    );
    let _ = writeln!(out, "\nmetadata ({} keys):", g.metadata.len());
    for (k, v) in &g.metadata {
        let _ = writeln!(out, "  {k:<44} {}", describe(v));
    }
    let _ = writeln!(out, "\ntensors ({}):", g.tensors.len());
    for t in &g.tensors {
        let _ = writeln!(
            out,
            "  {:<32} {:<6} {:<16} {:>12} bytes @ {}",
            t.name,
            t.dtype.name(),
            format!("{:?}", t.shape()),
            t.nbytes,
            t.offset
        );
    }
    Ok(())
}

/// A file's metadata and tokenizer, without loading any weights (vocab-only files work).
fn vocab(path: &str) -> CliResult<(GgufFile, Tokenizer)> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let fail = |e| format!("{path}: {}", coded(e));
    let g = GgufFile::parse(&bytes).map_err(fail)?;
    let tok = tokenizer_from_gguf(&g).map_err(fail)?;
    Ok((g, tok))
}

/// The JSON id array of TEXT (`-`: standard input, any bytes, invalid UTF-8 replaced by
/// U+FFFD), with llama.cpp's defaults add_special and parse_special, or neither with `--plain`.
fn tokenize(args: &Args) -> CliResult<()> {
    let (_, tok) = vocab(args.pos(0, "MODEL.gguf")?)?;
    let text = match args.pos(1, "TEXT")? {
        "-" => {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
                .map_err(|e| e.to_string())?;
            String::from_utf8_lossy(&buf).into_owned()
        }
        t => t.to_string(),
    };
    let special = !args.flag("--plain");
    println!("{}", json!(tok.encode(&text, special, special)));
    Ok(())
}

/// The prompt the file's chat template renders for `--messages` (a JSON array of
/// `{role, content}`), ending with the generation prompt; nothing else is printed.
fn chat_format(args: &Args) -> CliResult<()> {
    let (g, tok) = vocab(args.pos(0, "MODEL.gguf")?)?;
    let json: String = args.value("--messages", String::new())?;
    let parsed: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("--messages: {e}"))?;
    let messages = parsed
        .as_array()
        .ok_or("--messages: expected a JSON array")?
        .iter()
        .map(|m| match (m["role"].as_str(), m["content"].as_str()) {
            (Some(r), Some(c)) => Ok(ChatMessage::new(r, c)),
            _ => Err(format!("--messages: {m} needs string role and content")),
        })
        .collect::<CliResult<Vec<_>>>()?;
    let prompt = ChatFormat::new(&g, &tok)
        .render(&messages, true, None)
        .map_err(coded)?;
    print!("{prompt}");
    Ok(())
}

fn eval(args: &Args) -> CliResult<()> {
    let model = load(args.pos(0, "MODEL.gguf")?)?;
    let k: usize = args.value("--top", 5)?;
    let ids = model.tokenizer().encode(args.pos(1, "TEXT")?, true, true);
    let mut session = model.session(ids.len()).map_err(|e| e.to_string())?;
    let logits = session
        .eval(&model, &ids, Logits::All)
        .map_err(|e| e.to_string())?;
    let vocab = model.config().n_vocab;
    let top: Vec<Vec<(u32, f32)>> = logits
        .chunks_exact(vocab)
        .map(|row| {
            let mut idx: Vec<u32> = (0..vocab as u32).collect();
            let k = k.min(vocab);
            if k > 0 && k < vocab {
                idx.select_nth_unstable_by(k - 1, |&a, &b| {
                    row[b as usize].total_cmp(&row[a as usize])
                });
            }
            idx.truncate(k);
            idx.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]).then(a.cmp(&b)));
            idx.into_iter().map(|i| (i, row[i as usize])).collect()
        })
        .collect();
    println!("{}", json!({ "tokens": ids, "top": top }));
    Ok(())
}

fn generate(args: &Args) -> CliResult<()> {
    let model = load(args.pos(0, "MODEL.gguf")?)?;
    let text = args.pos(1, "TEXT")?;

    let max_tokens: usize = args.value("--max-tokens", 64)?;
    let cfg = SamplerConfig {
        temperature: args.value("--temperature", 0.8)?,
        top_k: args.value("--top-k", 40)?,
        top_p: args.value("--top-p", 0.95)?,
        min_p: args.value("--min-p", 0.05)?,
        repeat_penalty: args.value("--repeat-penalty", 1.0)?,
        repeat_last_n: 64,
        seed: args.value("--seed", 0)?,
    };
    let json_out = args.flag("--json");
    let ids = if args.flag("--chat") {
        let turn = [ChatMessage::new("user", text)];
        let chat = model.chat_format().tokens(&turn, true, None);
        chat.map_err(coded)?
    } else {
        model.tokenizer().encode(text, true, true)
    };
    let context: usize = args.value("--context", ids.len() + max_tokens)?;
    let mut session = model.session(context).map_err(|e| e.to_string())?;
    let gen_cfg = GenerateConfig {
        max_tokens,
        stop: Vec::new(),
        sampler: cfg,
    };
    let t0 = Instant::now();
    let mut gen = Generation::start(&model, &mut session, &ids, gen_cfg).map_err(coded)?;
    let prefill_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t1 = Instant::now();
    let mut text_out = String::new();
    let mut stdout = std::io::stdout().lock();
    while let Some(piece) = gen.step(&model, &mut session).map_err(coded)? {
        if !json_out {
            let _ = stdout.write_all(piece.text.as_bytes());
            let _ = stdout.flush();
        }
        text_out.push_str(&piece.text);
    }
    let generated = gen.tokens();
    let decode_ms = t1.elapsed().as_secs_f64() * 1e3;
    if json_out {
        let report = json!({
            "tokens": generated, "text": text_out, "prompt_tokens": ids.len(),
            "prefill_ms": prefill_ms, "decode_ms": decode_ms,
        });
        let _ = writeln!(stdout, "{report}");
    } else {
        let _ = writeln!(stdout);
        eprintln!(
            "[{} prompt tokens in {prefill_ms:.0} ms, {} generated in {decode_ms:.0} ms: {:.1} tok/s]",
            ids.len(),
            generated.len(),
            generated.len() as f64 / (decode_ms / 1e3)
        );
    }
    Ok(())
}

/// Requantizes every 2-D weight to Q4_0 (dequantizing whatever format it had), keeps 1-D
/// tensors as they are, copies the metadata and sets `general.file_type` to MOSTLY_Q4_0 (2).
fn quantize(args: &Args) -> CliResult<()> {
    let (inp, out) = (args.pos(0, "IN.gguf")?, args.pos(1, "OUT.gguf")?);
    let ty: String = args.value("--type", "q4_0".to_string())?;
    if ty != "q4_0" {
        return Err(format!("--type {ty}: only q4_0 is supported"));
    }
    let bytes = std::fs::read(inp).map_err(|e| format!("{inp}: {e}"))?;
    let g = GgufFile::parse(&bytes).map_err(|e| format!("{inp}: {e}"))?;
    let mut w = GgufWriter::new(g.alignment);
    let mut wrote_file_type = false;
    for (k, v) in &g.metadata {
        if k == "general.file_type" {
            w.add_metadata(k.clone(), Value::U32(2));
            wrote_file_type = true;
        } else {
            w.add_metadata(k.clone(), v.clone());
        }
    }
    if !wrote_file_type {
        w.add_metadata("general.file_type", Value::U32(2));
    }
    let err = |e: kopitiam_wasm::Error| e.to_string();
    for t in &g.tensors {
        let data = g.tensor_bytes(&bytes, t).map_err(err)?;
        let shape = t.shape();
        if shape.len() != 2 || t.dims[0] % 32 != 0 {
            w.add_tensor(t.name.clone(), t.dtype, &shape, data.to_vec())
                .map_err(err)?;
            continue;
        }
        let (rows, cols) = (shape[0], shape[1]);
        let mut row = vec![0.0f32; cols];
        let mut q = vec![0u8; DType::Q4_0.storage_bytes(rows * cols).map_err(err)?];
        let in_row = t.dtype.storage_bytes(cols).map_err(err)?;
        let out_row = DType::Q4_0.storage_bytes(cols).map_err(err)?;
        for r in 0..rows {
            decode_row(t.dtype, &data[r * in_row..(r + 1) * in_row], &mut row).map_err(err)?;
            quantize_row_q4_0(&row, &mut q[r * out_row..(r + 1) * out_row]);
        }
        w.add_tensor(t.name.clone(), DType::Q4_0, &shape, q)
            .map_err(err)?;
    }
    let file = std::fs::File::create(out).map_err(|e| format!("{out}: {e}"))?;
    let mut file = std::io::BufWriter::new(file);
    w.write_to(&mut file).map_err(err)?;
    file.flush().map_err(|e| format!("{out}: {e}"))?;
    eprintln!("wrote {out}");
    Ok(())
}

/// One row of any dtype as f32, following ggml's reference dequantizers.
fn decode_row(dtype: DType, bytes: &[u8], out: &mut [f32]) -> kopitiam_wasm::Result<()> {
    match dtype {
        DType::F32 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            Ok(())
        }
        DType::F16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
            Ok(())
        }
        DType::BF16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = half::bf16::from_le_bytes([c[0], c[1]]).to_f32();
            }
            Ok(())
        }
        d => quant::dequantize_row(d, bytes, out),
    }
}

/// `kopitiam ocr`: the recognised text (a line, or with `--page` the lines of a simple page).
fn ocr(args: &Args) -> CliResult<()> {
    use kopitiam_wasm::ocr::{GreyImage, Recognizer};
    let (model_path, image_path) = (args.pos(0, "MODEL.traineddata")?, args.pos(1, "IMAGE.png")?);
    let model = std::fs::read(model_path).map_err(|e| format!("{model_path}: {e}"))?;
    let recognizer =
        Recognizer::from_bytes(&model).map_err(|e| format!("{model_path}: {}", coded(e)))?;
    let png = std::fs::read(image_path).map_err(|e| format!("{image_path}: {e}"))?;
    let image = GreyImage::from_png(&png).map_err(|e| format!("{image_path}: {}", coded(e)))?;
    if args.flag("--frames") {
        return print_frames(&recognizer, &image);
    }
    let lines = if args.flag("--page") {
        recognizer.recognize_page(&image).map_err(coded)?.lines
    } else if args.flag("--raw") {
        vec![recognizer.recognize_raw_line(&image).map_err(coded)?]
    } else {
        vec![recognizer.recognize_line(&image).map_err(coded)?]
    };
    if args.flag("--json") {
        let lines: Vec<_> = lines
            .iter()
            .map(|l| {
                let chars: Vec<_> = l.chars.iter().map(|c| json!({"text": c.text, "confidence": c.confidence, "x0": c.x0, "x1": c.x1})).collect();
                json!({"text": l.text, "confidence": l.confidence, "bbox": [l.bbox.0, l.bbox.1, l.bbox.2, l.bbox.3], "chars": chars})
            })
            .collect();
        println!("{}", json!({ "lines": lines }));
    } else {
        for l in &lines {
            println!("{}", l.text);
        }
    }
    Ok(())
}

/// `ocr --frames`: per output frame of the whole image read as one line, the codes whose
/// probability rounds to at least 1 %, as `frame text:percent …` (blank shown as `_`).
fn print_frames(
    recognizer: &kopitiam_wasm::ocr::Recognizer,
    image: &kopitiam_wasm::ocr::GreyImage,
) -> CliResult<()> {
    let probs = recognizer.raw_line_probabilities(image).map_err(coded)?;
    let codes = probs.dims()[1];
    for (t, frame) in probs
        .to_vec_f32()
        .map_err(coded)?
        .chunks_exact(codes)
        .enumerate()
    {
        let mut order: Vec<usize> = (0..codes).collect();
        order.sort_by(|&a, &b| frame[b].total_cmp(&frame[a]));
        let shown: Vec<String> = order
            .iter()
            .take_while(|&&c| (frame[c] * 100.0).round() >= 1.0)
            .map(|&c| {
                let text = recognizer.code_text(c as u32);
                format!(
                    "{}:{:.3}",
                    if text.is_empty() { "_" } else { text },
                    frame[c] * 100.0
                )
            })
            .collect();
        println!("{t} {}", shown.join(" "));
    }
    Ok(())
}
