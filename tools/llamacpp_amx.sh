#!/usr/bin/env bash
# Builds llama.cpp from SRC on this CPU (GGML_NATIVE: AMX where the CPU has it) and loads each
# GGUF file of DIR on the CPU with examples/simple, printing the model buffers it logs.
# Usage: bash tools/llamacpp_amx.sh LLAMA_CPP_SRC DIR > amx.log   (see tools/record_amx.py)
set -u
S=$1 DIR=$2 B=${BUILD:-/tmp/llamacpp-amx}
lscpu | grep -i "model name"; grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
grep -q amx_int8 /proc/cpuinfo || { echo "no AMX on this CPU"; exit 0; }
cmake -S "$S" -B "$B" -DGGML_NATIVE=ON -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DGGML_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Release > "$B.cfg.log" 2>&1 || { tail -20 "$B.cfg.log"; exit 1; }
cmake --build "$B" -j"$(nproc)" --target llama > "$B.build.log" 2>&1 || { tail -30 "$B.build.log"; exit 1; }
g++ -O2 -std=c++17 "$S/examples/simple/simple.cpp" -I"$S/include" -I"$S/ggml/include" -L"$B/bin" -lllama -lggml \
  -lggml-base -lggml-cpu -Wl,-rpath,"$B/bin" -o "$B/simple" || exit 1
for f in "$DIR"/*.gguf; do
  echo "== $f"
  "$B/simple" -m "$f" -n 1 hi 2>&1 | grep -E "buffer size|cannot be used|error|failed"
done
