"""Under CI=true a skipped test fails the run (tests/conftest.py); locally a skip stays a skip."""

from __future__ import annotations

import pytest

from tests.support.paths import PROJECT_ROOT

pytest_plugins = ["pytester"]

SKIPPING = """
import pytest

def test_skips_inside():
    pytest.skip("no browser here")

@pytest.mark.skipif(True, reason="no server here")
def test_skipif_marker():
    pass

@pytest.fixture()
def missing():
    pytest.skip("fixture could not start its service")

def test_fixture_skip(missing):
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False

def test_passes():
    pass
"""

MODULE_SKIP = """
import pytest
pytest.skip("whole module needs a service", allow_module_level=True)

def test_never_collected():
    pass
"""


@pytest.fixture()
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((PROJECT_ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_skipping=SKIPPING, test_module_skip=MODULE_SKIP)
    return pytester


@pytest.mark.parametrize("value", ["true", "1"])
def test_skips_fail_under_ci(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "test_skipping.py")
    result.assert_outcomes(passed=1, failed=1, errors=2, xfailed=1)  # skips in set-up: errors
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped under CI=true, which counts as a failure: *no browser here*"])


def test_a_module_level_skip_fails_the_collection_under_ci(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*skipped under CI=true*whole module needs a service*"])


def test_skips_stay_skips_outside_ci(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    assert result.ret == 0
