#!/usr/bin/env bash
# Create .venv, install membench, and prepare the project-local Dagster home.
#
# Idempotent: a second run only re-checks the install. After it, `source .venv/bin/activate`
# exports DAGSTER_HOME (project-local, so partition status persists) and tells the dagster CLI
# where the definitions are, so `dagster job execute -j full_benchmark` works as typed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

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

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned: 2.13.0 is the CPU build on this disk; any other spec pulls a multi-GB CUDA build.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[dev]"
# MCP memory servers under test (memory kind mcp): @modelcontextprotocol/server-memory, lockfile-pinned
(cd pipeline/agentic/mcp/npm && npm ci --no-audit --no-fund --silent)

# Hindsight memory server (memory kind hindsight): its own virtualenv, since it needs protobuf>=7 and
# dagster pins protobuf<7; membench starts it and talks HTTP to it (pipeline/products/hindsight_server.py)
[ -x .venv-hindsight/bin/python ] || "$PYTHON" -m venv .venv-hindsight
.venv-hindsight/bin/python -m pip install --quiet "hindsight-api-slim[embedded-db]==1.1.0"

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
