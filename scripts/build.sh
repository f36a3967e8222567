#!/usr/bin/env bash
# Builds a wasm package (ES module, --target web), only when a source is newer than the last
# build. wasm-opt comes from npm binaryen (node_modules/.bin), never Debian's.
#   scripts/build.sh [simd|relaxed|threads|relaxed-threads|scalar]...   (default: simd)
#     simd     -> pkg/               single thread, +simd128 (the default build, works everywhere)
#     relaxed  -> pkg-relaxed/       +relaxed-simd (picked where WebAssembly.validate accepts it)
#     threads  -> pkg-threads/       +atomics, wasm-bindgen-rayon workers (crossOriginIsolated pages)
#     relaxed-threads -> pkg-relaxed-threads/
#     scalar   -> pkg-scalar/        no SIMD at all (benchmark baseline only)
#     ocr      -> pkg-ocr/           the OCR worker's build: no LLM half (--no-default-features)
#     ocr-relaxed -> pkg-ocr-relaxed/  the same with +relaxed-simd
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

build() {
  local variant=$1 out features="" extra=""
  case $variant in
    simd) out=pkg ;;
    relaxed) out=pkg-relaxed; extra=",+relaxed-simd" ;;
    threads) out=pkg-threads; features="--features threads" ;;
    relaxed-threads) out=pkg-relaxed-threads; features="--features threads"; extra=",+relaxed-simd" ;;
    scalar) out=pkg-scalar ;;
    ocr) out=pkg-ocr; features="--no-default-features" ;;
    ocr-relaxed) out=pkg-ocr-relaxed; features="--no-default-features"; extra=",+relaxed-simd" ;;
    *) echo "unknown variant $variant" >&2; exit 2 ;;
  esac
  local wasm=$out/kopitiam_wasm_bg.wasm
  if [ -f "$wasm" ] && [ -z "$(find src Cargo.toml Cargo.lock .cargo scripts/build.sh -newer "$wasm" -print -quit)" ]; then
    echo "[build] $out/ is up to date"
    return
  fi
  echo "[build] $variant -> $out/"
  (
    case $variant in
      simd) ;;
      relaxed)
        export CARGO_TARGET_DIR=target/relaxed
        export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128$extra" ;;
      ocr) export CARGO_TARGET_DIR=target/ocr ;;
      ocr-relaxed)
        export CARGO_TARGET_DIR=target/ocr-relaxed
        export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128$extra" ;;
      scalar)
        export CARGO_TARGET_DIR=target/scalar
        export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=-simd128" ;;
      threads | relaxed-threads)
        export KOPITIAM_EXTRA_FEATURES=$extra
        # shellcheck source=threads-env.sh
        source scripts/threads-env.sh
        [ -n "$extra" ] && export CARGO_TARGET_DIR=target/relaxed-threads ;;
    esac
    # shellcheck disable=SC2086
    wasm-pack --quiet build --release --target web --out-dir "$out" --no-pack --mode no-install -- $features
  )
  rm -f "$out/.gitignore"
  ls -l "$wasm"
}

[ $# -gt 0 ] || set -- simd
for v in "$@"; do build "$v"; done
