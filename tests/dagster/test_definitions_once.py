"""pipeline/definitions.py ``defs``: a Dagster run command builds its definitions once, anything else on each call.

Why it matters: Dagster calls ``defs`` each time it reconstructs the repository (five times before
a ``dagster job execute`` run's first step); each build reads the config, the partition keys and,
for a whole-config run, a Dagster instance. Code servers and tests must still see a rebuilt object
on each call (a changed config, another ``MEMBENCH_CONFIG``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import dagster as dg
import pytest

import pipeline.definitions as definitions

CASES = {  # argv -> builds for two calls of defs()
    "job execute of a range": (["/venv/bin/dagster", "job", "execute", "-j", "question_stages", "--tags", "{}"], 1),
    "asset materialize": (["/venv/bin/dagster", "asset", "materialize", "--select", "*"], 1),
    "dg launch": (["/venv/bin/dg", "launch", "--assets", "*"], 1),
    "code server": (["/venv/bin/dagster", "api", "grpc", "-m", "pipeline.definitions"], 2),
    "dagster dev": (["/venv/bin/dagster", "dev"], 2),
    "pytest": (["/venv/bin/pytest", "tests"], 2),
}


@pytest.fixture
def counted_builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dg.Definitions]]:
    """``build_defs`` replaced by a stub recording each build; the process's kept definitions cleared."""
    built: list[dg.Definitions] = []

    def build() -> dg.Definitions:
        built.append(dg.Definitions())
        return built[-1]

    monkeypatch.setattr(definitions, "build_defs", build)
    definitions._run_command_defs.cache_clear()
    yield built
    definitions._run_command_defs.cache_clear()


@pytest.mark.parametrize(("argv", "builds"), CASES.values(), ids=CASES.keys())
def test_a_run_command_builds_its_definitions_once(
    argv: list[str], builds: int, counted_builds: list[dg.Definitions], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", argv)
    first, second = definitions.defs(), definitions.defs()
    assert len(counted_builds) == builds
    assert (first is second) == (builds == 1)
    assert first is counted_builds[0] and second is counted_builds[-1]


def test_a_failed_build_is_not_kept(counted_builds: list[dg.Definitions], monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that raised (a config mistake) is tried again at the next load, not answered from memory."""
    monkeypatch.setattr(sys, "argv", CASES["asset materialize"][0])
    good = definitions.build_defs
    monkeypatch.setattr(definitions, "build_defs", lambda: (_ for _ in ()).throw(RuntimeError("config")))
    with pytest.raises(RuntimeError):
        definitions.defs()
    monkeypatch.setattr(definitions, "build_defs", good)
    assert definitions.defs() is counted_builds[0]
