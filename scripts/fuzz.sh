#!/usr/bin/env bash
# Runs every cargo-fuzz target (fuzz/README.md) for a bounded time, one after another, each in
# one process: `scripts/fuzz.sh [seconds-per-target] [target...]` (default 60 s, all targets).
# Installs cargo-fuzz when missing and seeds the corpora from the tiny Gemma 3 fixture; extra
# libFuzzer flags come from $FUZZ_ARGS (e.g. FUZZ_ARGS=-runs=10000000). Exits non-zero when a
# target crashed, after naming the reproducer under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf_parse model_step tokenizer tokenizer_bpe chat_template)

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked || cargo install cargo-fuzz
fi

fixture=tests/fixtures/tiny-gemma3
for t in gguf_parse model_step tokenizer tokenizer_bpe chat_template; do mkdir -p "fuzz/corpus/$t"; done
cp -n "$fixture/tiny-gemma3-q4_0.gguf" fuzz/corpus/gguf_parse/seed-tiny-gemma3.gguf
cp -n "$fixture/tiny-gemma3-q4_0.gguf" fuzz/corpus/model_step/seed-tiny-gemma3.gguf
# Inputs that once crashed (tests/fixtures/fuzz/, replayed by tests/fuzz_regressions.rs).
for t in gguf_parse model_step tokenizer; do
  for f in tests/fixtures/fuzz/"$t"/*; do [ -f "$f" ] && cp -n "$f" "fuzz/corpus/$t/"; done
done
# Every GGUF reproducer is a good gguf_parse seed too.
for f in tests/fixtures/fuzz/*/*.gguf; do [ -f "$f" ] && cp -n "$f" fuzz/corpus/gguf_parse/; done
n=0
while IFS= read -r line; do
  n=$((n + 1))
  # prompts.txt writes newlines as `\n`.
  [ -e "fuzz/corpus/tokenizer/seed-prompt-$n" ] || printf '%b' "$line" >"fuzz/corpus/tokenizer/seed-prompt-$n"
done <"$fixture/prompts.txt"

# The 137 stress strings for byte-level BPE; two small chat templates in the style real ones use.
python3 - <<'PY'
import json, pathlib
out = pathlib.Path("fuzz/corpus/tokenizer_bpe")
for i, c in enumerate(json.load(open("tests/fixtures/tokenizers/qwen.json"))):
    p = out / f"seed-stress-{i}"
    if not p.exists():
        p.write_text(c["text"])
PY
[ -e fuzz/corpus/chat_template/seed-1 ] || printf '%s' "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '<|user|>\n' + m['content'] + '<|end|>\n<|assistant|>\n' }}{% elif m['role'] == 'assistant' %}{{ m['content'] + '<|end|>\n' }}{% endif %}{% endfor %}" >fuzz/corpus/chat_template/seed-1
[ -e fuzz/corpus/chat_template/seed-2 ] || printf '%s' "{%- set ns = namespace(last=messages|length - 1) %}{%- for message in messages[::-1] %}{%- if message.role == 'user' %}{%- set ns.last = loop.index0 %}{%- endif %}{%- endfor %}{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content.split('</think>')[-1].lstrip('\n') + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{%- endif %}" >fuzz/corpus/chat_template/seed-2

# Release build with debug assertions and overflow checks (cargo-fuzz's default); no
# sanitizer: the crate is safe Rust apart from a few SIMD and bytemuck spots, and ASan would
# make the runs several times slower. The binaries are then run directly, so an edit made while
# fuzzing does not trigger a rebuild halfway.
cargo +nightly fuzz build --sanitizer none
bin=fuzz/target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release

failed=()
for t in "${targets[@]}"; do
  printf '\n=== fuzz %s for %ss\n' "$t" "$secs"
  mkdir -p "fuzz/artifacts/$t"
  stamp=$(mktemp)
  # model_step's inputs are the fixture with bytes changed: no need for longer ones.
  max_len=()
  [ "$t" = model_step ] && max_len=(-max_len=$(($(wc -c <"$fixture/tiny-gemma3-q4_0.gguf") + 64)))
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  if ! "$bin/$t" "fuzz/corpus/$t" -artifact_prefix="fuzz/artifacts/$t/" \
      -max_total_time="$secs" -timeout=10 -print_final_stats=1 "${max_len[@]}" ${FUZZ_ARGS:-}; then
    failed+=("$t")
    echo "!!! $t failed; new reproducer(s):"
    find "fuzz/artifacts/$t" -type f -newer "$stamp" | sed 's/^/    /'
    echo "    replay: cargo +nightly fuzz run --sanitizer none $t <file>"
    echo "    shrink: cargo +nightly fuzz tmin --sanitizer none $t <file>"
  fi
  rm -f "$stamp"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}"
  exit 1
fi
echo "fuzz: ${targets[*]} clean for ${secs}s each"
