#!/usr/bin/env bash
# Idempotent set-up for a fresh machine of this kind (Debian, root, only the package registries
# reachable). Installs only what is missing, so a second run takes a few seconds.
#   - Debian chromium + chromium-driver (headless browser tests)
#   - rustup: wasm32 target, rust-src (threaded build), clippy, rustfmt
#   - wasm-bindgen-cli at exactly Cargo.lock's wasm-bindgen version, wasm-pack, from crates.io
#   - Debian tesseract-ocr + tesseract-ocr-eng (the OCR's model and its oracle in tests/benchmarks)
#   - npm devDependencies (binaryen's wasm-opt 132, playwright-core, tesseract.js) from
#     package-lock.json
# Never Debian's binaryen: its wasm-opt 108 silently breaks SIMD output. Nothing downloads
# binaries from outside the registries (wasm-pack runs with --mode no-install).
# Root is needed only to apt-get a missing Chromium; where it cannot install (not root, no apt)
# it stops with one message saying what is missing and how to provide it. An existing browser
# can be named with CHROMIUM=/path/to/chrome CHROMEDRIVER=/path/to/chromedriver.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
log() { printf '[setup] %s\n' "$*"; }
fail() {
  printf '[setup] cannot continue: %s\n' "$*" >&2
  exit 1
}

have() { command -v "$1" >/dev/null 2>&1; }

# Headless Chromium + chromedriver (the browser tests).
if [ -n "${CHROMIUM:-}${CHROMEDRIVER:-}" ]; then
  for v in CHROMIUM CHROMEDRIVER; do
    [ -x "${!v:-}" ] || fail "$v=${!v:-} is not an executable file; set both CHROMIUM and CHROMEDRIVER to an installed Chrome/Chromium and its matching chromedriver, or unset them"
  done
elif ! have chromium || ! have chromedriver; then
  missing=$(for c in chromium chromedriver; do have "$c" || printf '%s ' "$c"; done)
  if [ "$(id -u)" != 0 ] || ! have apt-get; then
    fail "missing ${missing% } (headless browser tests). Install Debian's packages as root (apt-get install chromium chromium-driver), or point at an existing browser: CHROMIUM=/path/to/chrome CHROMEDRIVER=/path/to/chromedriver npm test"
  fi
  log "installing chromium + chromium-driver (apt)"
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 || fail "apt-get install chromium chromium-driver failed"
fi

# Tesseract: eng.traineddata is the OCR's model (tests, demo, benchmark) and the tesseract
# binary the oracle the fixtures were made with.
if ! have tesseract || ! ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! have apt-get; then
    fail "missing tesseract-ocr / tesseract-ocr-eng (the OCR's model and oracle). Install Debian's packages as root: apt-get install tesseract-ocr tesseract-ocr-eng"
  fi
  log "installing tesseract-ocr + tesseract-ocr-eng (apt)"
  apt-get update -qq >/dev/null
  apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 || fail "apt-get install tesseract-ocr tesseract-ocr-eng failed"
fi

# wasm-pack's browser tests read the Chrome binary from webdriver.json: written here for the
# browser in use (ignored by git), with the flags a root user and a closed network need.
chrome=${CHROMIUM:-$(command -v chromium)}
cat > webdriver.json.new <<JSON
{
  "goog:chromeOptions": {
    "binary": "$chrome",
    "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-quic", "--no-first-run", "--enable-features=WebAssemblyRelaxedSimd"]
  }
}
JSON
if cmp -s webdriver.json.new webdriver.json; then rm webdriver.json.new; else mv webdriver.json.new webdriver.json; fi

for tool in rustup cargo node npm; do
  have "$tool" || fail "$tool is not installed (Rust via rustup; Node >= 20 with npm)"
done

installed_targets=$(rustup target list --installed)
grep -qx wasm32-unknown-unknown <<<"$installed_targets" || rustup target add wasm32-unknown-unknown
installed_components=$(rustup component list --installed)
for c in rust-src clippy rustfmt; do
  grep -q "^$c" <<<"$installed_components" || rustup component add "$c" \
    || log "WARN: rustup component $c unavailable"
done

WBV=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WBV" ]; then
  log "installing wasm-bindgen-cli $WBV (a few minutes)"
  # --locked can fail when the registry lacks one locked dependency (seen: webpki-roots 1.0.11).
  cargo install -q wasm-bindgen-cli --version "=$WBV" --locked \
    || cargo install -q wasm-bindgen-cli --version "=$WBV"
fi

WPV=0.15.1
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WPV" ]; then
  log "installing wasm-pack $WPV (a few minutes)"
  cargo install -q wasm-pack --version "=$WPV" --locked || cargo install -q wasm-pack --version "=$WPV"
fi

if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -f node_modules/playwright-core/package.json ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm devDependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi
