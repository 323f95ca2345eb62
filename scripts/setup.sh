#!/usr/bin/env bash
# Create .venv from the locked files (configs/lock/), install membench into it, and prepare the
# project-local Dagster home.
#
#   bash scripts/setup.sh                        README commands (1) and (2): what the main job needs (core.txt)
#                                                and the test runner (pytest.txt), nothing only tests use
#   bash scripts/setup.sh --extras mem0,mcp      + those extras (mem0, langmem, graphiti, mcp, hindsight, all)
#   bash scripts/setup.sh --tests                what only the tests use: every extra and the dev tools (test.txt),
#                                                Debian's chromium and a PostgreSQL server, the npm MCP server,
#                                                Hindsight's server. The test command (2) runs it itself: the
#                                                suite's first step (tests/conftest.py) when .venv lacks it
#
# Idempotent: a second run only re-checks the install. After it, `source .venv/bin/activate`
# exports DAGSTER_HOME (project-local, so partition status persists) and tells the dagster CLI
# where the definitions are, so `dagster job execute -j full_benchmark` works as typed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
LOCK=configs/lock
PIP_VERSION="26.3"

extras=()
tests=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --tests) tests=1 ;;
    --extras) shift; IFS=, read -r -a more <<< "${1:-}"; extras+=("${more[@]}") ;;
    --extras=*) IFS=, read -r -a more <<< "${1#--extras=}"; extras+=("${more[@]}") ;;
    *) echo "setup: unknown argument $1 (usage: bash scripts/setup.sh [--extras NAME,...] [--tests])" >&2; exit 2 ;;
  esac
  shift
done
for e in "${extras[@]}"; do
  case "$e" in
    mem0|langmem|graphiti|mcp|hindsight|all) ;;
    *) echo "setup: unknown extra '$e' (known: mem0, langmem, graphiti, mcp, hindsight, all)" >&2; exit 2 ;;
  esac
done
[ "$tests" -eq 0 ] || extras=(all)

if [ "$tests" -eq 1 ]; then
  # System packages the test suite runs rather than skips: Debian's chromium (headless report test)
  # and a PostgreSQL server (Dagster instance test). Installed only when absent: one update, one install.
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
  if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get -qq -o DPkg::Lock::Timeout=900 update >/dev/null
      apt-get -qq -o DPkg::Lock::Timeout=900 install -y "${need[@]}" >/dev/null
    else
      echo "setup: install ${need[*]} (Debian: apt-get install -y ${need[*]}); tests need them" >&2
    fi
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet "pip==$PIP_VERSION"
# Every library at its locked version and hash (torch 2.13.0+cpu: the CPU build, which pip takes from this
# machine's disk; elsewhere add --extra-index-url https://download.pytorch.org/whl/cpu), then membench itself.
# --no-compile: Python compiles what a run imports when it first imports it; compiling every installed module
# up front (torch, Dagster) took longer than the install (105 s instead of about 240 s for core.txt here).
# .venv/membench-locks: the locked files this run installed (tests/tree/test_lock.py checks the venv holds them).
# It is written last, once everything this run installs is in place: a set-up that failed half-way leaves it empty,
# so the test command's first step (tests/conftest.py) runs the test-only set-up again.
installed=()
install_lock() {
  .venv/bin/python -m pip install --quiet --no-compile --require-hashes -r "$LOCK/$1.txt"
  installed+=("$1")
}
: > .venv/membench-locks
if [ "$tests" -eq 1 ]; then
  install_lock test
elif [ "${#extras[@]}" -eq 0 ]; then
  install_lock core
else
  for e in "${extras[@]}"; do [ "$e" = hindsight ] || install_lock "$e"; done
fi
# the test runner (pytest and its two small dependencies, at test.txt's versions), so that README command (2)
# can start: its first step installs the rest of what the tests use (tests/conftest.py)
[ "$tests" -eq 1 ] || install_lock pytest
.venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .

for e in "${extras[@]}"; do
  if [ "$e" = mcp ] || [ "$e" = all ]; then
    # the npm MCP memory server under test (memory kind mcp): @modelcontextprotocol/server-memory, lockfile-pinned
    (cd pipeline/agentic/mcp/npm && npm ci --no-audit --no-fund --silent)
  fi
  if [ "$e" = hindsight ] || [ "$e" = all ]; then
    # Hindsight memory server (memory kind hindsight): its own virtualenv, since it needs protobuf>=7 and
    # dagster pins protobuf<7; membench starts it and talks HTTP to it (pipeline/products/hindsight_server.py)
    .venv/bin/membench install-hindsight --venv .venv-hindsight
  fi
done

printf '%s\n' "${installed[@]}" > .venv/membench-locks

# the project-local Dagster home: dagster.yaml, and the instance's storage created before any run
bash scripts/dagster_home.sh "$ROOT/.dagster_home"

MARK="# >>> membench >>>"
# the block is rewritten on every run, so a venv made by an older setup gets the current one
sed -i "/^$MARK\$/,/^# <<< membench <<<\$/d" .venv/bin/activate
# the dagster commands README prints stay, without Dagster's notice that `dg` supersedes them
SUPERSEDED="ignore:Function \`job_execute_command\` is superseded,ignore:Function \`asset_materialize_command\` is superseded,ignore:Function \`dev_command\` is superseded"
if ! grep -qF "$MARK" .venv/bin/activate; then
  cat >> .venv/bin/activate <<ACTIVATE
$MARK
export DAGSTER_HOME="$ROOT/.dagster_home"
export DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME="pipeline.definitions"
export DAGSTER_CLI_JOB_BACKFILL_MODULE_NAME="pipeline.definitions"
export DAGSTER_CLI_JOB_LAUNCH_MODULE_NAME="pipeline.definitions"
export DAGSTER_CLI_ASSET_MATERIALIZE_MODULE_NAME="pipeline.definitions"
export DAGSTER_CLI_ASSET_LIST_MODULE_NAME="pipeline.definitions"
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export PYTHONWARNINGS='$SUPERSEDED'"\${PYTHONWARNINGS:+,\$PYTHONWARNINGS}"
# <<< membench <<<
ACTIVATE
fi
echo "membench installed in $ROOT/.venv; DAGSTER_HOME=$ROOT/.dagster_home (set by: source .venv/bin/activate)"
