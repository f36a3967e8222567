#!/usr/bin/env python3
"""Makes tests/fixtures/tiny-llama-mix/: a random-weight `llama` GGUF in which every weight type
the crate reads sits in every layer slot, with Llama 3.1-style RoPE (`rope_freqs.weight`) and
linear RoPE scaling, plus llama.cpp's outputs for it.

A developer tool, not part of the product or the test run: it needs numpy, gguf-py and a CPU
build of llama.cpp with llama-cpp-python's ctypes bindings (both from the llama-cpp-python
sdist on PyPI: `cmake -B build -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON && cmake --build build
--target llama`). Quantization is ggml's own (`ggml_quantize_chunk`), so the blocks are exactly
what llama.cpp's tools write.

    LLAMA_CPP=/path/to/llama.cpp LLAMA_CPP_PYTHON=/path/to/llama_cpp_python-x.y.z \\
        python3 scripts/make-mix-fixture.py

Layout: hidden 256, 11 layers, 4 query heads of 64 sharing 1 KV head, FFN 256 (every matrix
width a whole number of 256-element K super-blocks), untied Q6_K output, Q8_0 embeddings. Layer
`l` stores slot `s` (q, k, v, output, gate, up, down) as TYPES[(l + s) % 11], so each of the 11
types fills each of the 7 slots once. The vocabulary is tiny-qwen2's, cut to its first 320
tokens and the merges among them, specials renumbered after them.
"""
import ctypes
import json
import os
import pathlib
import sys

import numpy as np

LLAMA_CPP = pathlib.Path(os.environ["LLAMA_CPP"])
sys.path.insert(0, os.environ["LLAMA_CPP_PYTHON"])
os.environ.setdefault("LLAMA_CPP_LIB_PATH", str(LLAMA_CPP / "build" / "bin"))
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as T  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "tiny-llama-mix"
SOURCE = ROOT / "tests" / "fixtures" / "tiny-qwen2" / "tiny-qwen2-q4_0.gguf"

TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K, T.F16, T.BF16, T.F32]
SLOTS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]
N_EMBD, N_HEAD, N_HEAD_KV, HEAD, N_FF, N_LAYER = 256, 4, 1, 64, 256, 11
N_REGULAR = 320
ROPE_BASE, LINEAR_FACTOR = 10000.0, 2.0

ggml = ctypes.CDLL(str(LLAMA_CPP / "build" / "bin" / "libggml-base.so"))
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_int64, ctypes.c_void_p,
]


def quantize(w: np.ndarray, qtype: T) -> np.ndarray:
    """ggml's quantization of a [rows, cols] f32 matrix, as [rows, row_bytes] bytes."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    if qtype == T.F32:
        return w
    rows, cols = w.shape
    block, type_bytes = gguf.GGML_QUANT_SIZES[qtype]
    out = np.zeros((rows, cols // block * type_bytes), dtype=np.uint8)
    n = ggml.ggml_quantize_chunk(int(qtype), w.ctypes.data, out.ctypes.data, 0, rows, cols, None)
    assert n == out.size, (qtype, n, out.size)
    return out


def cut_vocab(reader: gguf.GGUFReader):
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    merges = reader.fields["tokenizer.ggml.merges"].contents()
    specials = [i for i, t in enumerate(types) if t != 1]
    keep = list(range(N_REGULAR)) + specials
    kept = {tokens[i] for i in keep}
    merges = [m for m in merges if all(p in kept for p in m.split(" ")) and m.replace(" ", "") in kept]
    return [tokens[i] for i in keep], [types[i] for i in keep], merges, {old: new for new, old in enumerate(keep)}


def rope_freqs() -> np.ndarray:
    """Llama 3.1's per-dimension factors (scale 8, low/high frequency factors 1 and 4), over an
    original context of 64 so the three regimes (kept, divided, interpolated) all occur in 32 pairs."""
    factor, low, high, orig = 8.0, 1.0, 4.0, 64
    out = []
    for i in range(HEAD // 2):
        wavelen = 2 * np.pi * ROPE_BASE ** (2 * i / HEAD)
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_model(path: pathlib.Path):
    src = gguf.GGUFReader(str(SOURCE))
    tokens, types, merges, remap = cut_vocab(src)
    rng = np.random.default_rng(20261201)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama-mix")
    w.add_block_count(N_LAYER)
    w.add_context_length(2048)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(LINEAR_FACTOR)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(remap[src.fields["tokenizer.ggml.bos_token_id"].contents()])
    w.add_eos_token_id(remap[src.fields["tokenizer.ggml.eos_token_id"].contents()])
    w.add_add_bos_token(False)

    def mat(rows, cols, scale):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def add(name, data, qtype):
        q = quantize(data, qtype)
        if qtype in (T.F32,):
            w.add_tensor(name, q)
        else:
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)

    n_vocab = len(tokens)
    add("token_embd.weight", mat(n_vocab, N_EMBD, 1.0), T.Q8_0)
    add("output_norm.weight", 1.0 + 0.1 * rng.standard_normal(N_EMBD).astype(np.float32), T.F32)
    add("output.weight", mat(n_vocab, N_EMBD, 1.0 / 16), T.Q6_K)
    add("rope_freqs.weight", rope_freqs(), T.F32)
    shapes = {
        "attn_q": (N_HEAD * HEAD, N_EMBD), "attn_k": (N_HEAD_KV * HEAD, N_EMBD),
        "attn_v": (N_HEAD_KV * HEAD, N_EMBD), "attn_output": (N_EMBD, N_HEAD * HEAD),
        "ffn_gate": (N_FF, N_EMBD), "ffn_up": (N_FF, N_EMBD), "ffn_down": (N_EMBD, N_FF),
    }
    for layer in range(N_LAYER):
        for norm in ("attn_norm", "ffn_norm"):
            g = 1.0 + 0.1 * rng.standard_normal(N_EMBD).astype(np.float32)
            add(f"blk.{layer}.{norm}.weight", g, T.F32)
        for s, slot in enumerate(SLOTS):
            rows, cols = shapes[slot]
            add(f"blk.{layer}.{slot}.weight", mat(rows, cols, 1.0 / np.sqrt(cols)), TYPES[(layer + s) % len(TYPES)])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n_vocab


def prompts(n_vocab: int):
    """Random id sequences (BOS-free: add_bos_token is false), short to long (RoPE far out)."""
    rng = np.random.default_rng(7)
    return [rng.integers(0, n_vocab - 30, size=n).tolist() for n in (6, 37, 180, 700)]


def references(path: pathlib.Path, n_vocab: int, flash: bool, f16_kv: bool):
    import llama_cpp

    kv = llama_cpp.GGML_TYPE_F16 if f16_kv else llama_cpp.GGML_TYPE_F32
    llm = llama_cpp.Llama(
        str(path), n_ctx=1024, n_batch=1024, n_ubatch=1024, n_threads=2, logits_all=True,
        flash_attn=flash, type_k=kv, type_v=kv, verbose=False,
    )
    out, last = [], []
    for ids in prompts(n_vocab):
        llm.reset()
        llm.eval(ids)
        scores = np.array(llm.scores[: len(ids)], dtype=np.float32)
        top5 = [[[int(t), float(row[t])] for t in np.argsort(-row, kind="stable")[:5]] for row in scores]
        last.append(scores[-1].copy())
        greedy, nxt = [], int(np.argmax(scores[-1]))
        for _ in range(16):
            greedy.append(nxt)
            llm.eval([nxt])
            nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append({"prompt": f"{len(ids)} random ids", "tokens": ids, "top5": top5, "greedy": greedy})
    del llm
    return out, np.stack(last)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    model = OUT / "tiny-llama-mix.gguf"
    n_vocab = write_model(model)
    ref, last = references(model, n_vocab, flash=True, f16_kv=True)
    (OUT / "reference.json").write_text(json.dumps(ref) + "\n")
    last.astype("<f4").tofile(OUT / "last_logits.f32")
    # llama.cpp against itself (plain attention, f32 KV): the spread the test tolerance allows.
    _, other = references(model, n_vocab, flash=False, f16_kv=False)
    d = np.abs(other - last)
    spread = {"max": float(d.max()), "mean": float(d.mean()), "scale": float(np.abs(last).max())}
    (OUT / "self_spread.json").write_text(json.dumps(spread) + "\n")
    print(f"llama.cpp self-spread (last-position logits): {spread}")


if __name__ == "__main__":
    main()
