# Source me: the environment for the threaded (atomics + shared memory) wasm build on stable Rust.
# build-std rebuilds std with atomics (needs the rust-src component); RUSTC_BOOTSTRAP lets stable
# cargo accept -Z build-std. Since late-2025 Rust, +atomics alone no longer gives a shared memory,
# so the linker is asked for it explicitly. Its own target dir: these flags rebuild everything.
export RUSTC_BOOTSTRAP=1
export CARGO_UNSTABLE_BUILD_STD=panic_abort,std
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128${KOPITIAM_EXTRA_FEATURES:-} -C link-arg=--shared-memory -C link-arg=--max-memory=4294967296 -C link-arg=--import-memory -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base"
export CARGO_TARGET_DIR=target/threads
