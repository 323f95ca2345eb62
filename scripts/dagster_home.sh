#!/usr/bin/env bash
# Prepare a Dagster home for membench: its dagster.yaml (from configs/dagster.yaml) and its instance
# storage, created here once, before any run, so that the first runs never race to create it
# (resources/instance_home.py says why). Idempotent; scripts/setup.sh runs it for .dagster_home.
#
#   bash scripts/dagster_home.sh [HOME]    (default: <project>/.dagster_home)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${1:-$ROOT/.dagster_home}"
mkdir -p "$HOME_DIR"
# max_concurrent_runs from $MEMBENCH_MAX_CONCURRENT_RUNS (default 1: runs queue behind each other)
sed "s/max_concurrent_runs: 1/max_concurrent_runs: ${MEMBENCH_MAX_CONCURRENT_RUNS:-1}/" "$ROOT/configs/dagster.yaml" \
  > "$HOME_DIR/dagster.yaml"
cd "$ROOT"
DAGSTER_HOME="$HOME_DIR" .venv/bin/python -m resources.instance_home "$HOME_DIR"
