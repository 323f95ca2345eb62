"""``membench judge-probe``: every configured judge on the probe set of each dataset, through the real
LLM client against the fake OpenAI server; stored, cached by unit hash, rates in judge_probe_rates."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.config.model import PROJECT_ROOT, load_config
from pipeline.judges.probe import build_probes
from pipeline.judges.probe_run import dataset_questions, probe_path
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.store.results import ResultStore

SAMPLES = PROJECT_ROOT / "pipeline" / "sample_data"


def _config(tmp_path: Path, base_url: str) -> Path:
    cfg = tmp_path / "probe.yaml"
    cfg.write_text(
        f"results_dir: {tmp_path / 'res'}\n"
        "datasets:\n"
        f"  - {{name: loco, loader: locomo, path: {SAMPLES / 'locomo_sample.json'}}}\n"
        f"  - {{name: lme, loader: longmemeval, path: {SAMPLES / 'longmemeval_oracle_sample.json'}}}\n"
        "judges:\n"
        "  - {name: generous, kind: locomo_llm_judge}\n"
        "  - {name: f1, kind: locomo_f1}\n"
        "  - {name: lme_official, kind: lme_official_llm_judge}\n"
        f"llm: {{base_url: '{base_url}', model: fake-judge, api_key_env: NO_SUCH_KEY_ENV, max_retries: 0}}\n"
    )
    return cfg


@pytest.fixture
def server() -> FakeOpenAIServer:
    with running_fake_server(default_reply="I cannot tell.") as srv:
        # LoCoMo judge (mem0's prompt): generous with vague answers, "maybe" to I don't know, else WRONG
        srv.add_rule("Generated answer: It had something to do with", '{"label": "CORRECT"}')
        srv.add_rule("Generated answer: I don't know.", "maybe")
        srv.add_rule("Generated answer:", '{"label": "WRONG"}')
        # LongMemEval judge: "no" only to I don't know; read officially, "yes" anywhere is correct
        srv.add_rule("Model Response: I don't know.", "no")
        srv.add_rule("Model Response:", "yes")
        yield srv


def test_probe_rates_counts_and_cache(
    tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config(tmp_path, server.base_url)
    assert main(["--config", str(cfg), "judge-probe", "--per-type", "2"]) == 0
    out = capsys.readouterr().out
    bench = resolve_config(load_config(str(cfg)))
    kinds = {ds: Counter(p.kind for p in build_probes(dataset_questions(bench, ds), 2)) for ds in ("loco", "lme")}
    n_loco, n_lme = sum(kinds["loco"].values()), sum(kinds["lme"].values())
    assert n_loco and n_lme
    # every LLM probe was one request; the rule-based f1 judge made none
    assert server.request_count == n_loco + n_lme
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with store.connect() as con:
        rows = {
            (d, j): r
            for d, j, *r in con.execute(
                "SELECT dataset, judge, n_probes, n_failed, n_wrong_judged, n_false_accept, n_right_judged, "
                "n_false_reject, false_accept_rate, false_reject_rate FROM judge_probe_rates WHERE type_raw = '(all)'"
            ).fetchall()
        }
    k = kinds["loco"]
    wrong = k["other_gold"] + k["vague_on_topic"] + k["negation"]  # "I don't know" failed: no verdict
    right = k["gold"] + k["paraphrase"]
    assert rows[("loco", "generous")] == [n_loco, k["i_dont_know"], wrong, k["vague_on_topic"], right, right,
                                          k["vague_on_topic"] / wrong, 1.0]  # fmt: skip
    assert rows[("loco", "f1")][1] == 0  # rule-based: never fails, and its rows exist
    k = kinds["lme"]
    wrong = n_lme - k["gold"] - k["paraphrase"]
    accepted = wrong - k["i_dont_know"]
    assert rows[("lme", "lme_official")][:6] == [n_lme, 0, wrong, accepted, k["gold"] + k["paraphrase"], 0]
    assert "loco | generous |" in out and "false accept" in out
    # rerun: every ok row is kept (no request); the failed probes are asked again
    before = server.request_count
    assert main(["--config", str(cfg), "judge-probe", "--per-type", "2"]) == 0
    assert server.request_count - before == kinds["loco"]["i_dont_know"]
    assert f"{kinds['loco']['i_dont_know']} judged ({kinds['loco']['i_dont_know']} failed)" in capsys.readouterr().out
    assert probe_path(store, "loco", "generous").exists()


def test_probe_user_errors(tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, server.base_url)
    assert main(["--config", str(cfg), "judge-probe", "--dataset", "nope"]) == 2
    assert "no dataset nope" in capsys.readouterr().err
    assert main(["--config", str(cfg), "judge-probe", "--per-type", "0"]) == 2
    assert server.request_count == 0


def test_report_shows_rates_beside_kappa(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from pipeline.report.build import collect
    from pipeline.report.judges_html import judge_section

    cfg = _config(tmp_path, server.base_url)
    assert main(["--config", str(cfg), "judge-probe", "--per-type", "1", "--dataset", "loco"]) == 0
    store = ResultStore(results_dir=str(tmp_path / "res"))
    html = "".join(judge_section(collect(store), "loco"))
    assert "<h2>Judges: agreement and error rates</h2>" in html
    assert "<td>generous</td><td>–</td><td class=num>0.333</td><td class=num>1.000</td>" in html  # no kappa: no run
    assert judge_section(collect(store), "lme") == []  # not probed, no judgments
