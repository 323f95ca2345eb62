"""The multi-page report: overview, dataset pages and the per-question drill-down (content, links,
size), rendered from a small complete results folder; plus a real headless Chromium (Debian's
``chromium``, installed by scripts/setup.sh: the test fails, never skips, when it is absent)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.judges.base import JUDGMENTS_PAYLOAD
from pipeline.readers.base import ANSWERS_PAYLOAD
from pipeline.report import html as report_html
from pipeline.report.build import collect
from pipeline.report.refresh import write_report_files
from pipeline.store.results import ResultStore
from tests.support.report import answer_row, build_full_store, judgment_row, write_stage

CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    store = build_full_store(tmp_path_factory.mktemp("html") / "results")
    write_report_files(store, collect(store))
    return store


def _read(store: ResultStore, rel: str) -> str:
    return (store.root / rel).read_text()


def test_pages_written(store: ResultStore) -> None:
    pages = sorted(p.relative_to(store.root).as_posix() for p in store.root.rglob("*.html"))
    assert pages == [
        "report.html", "report/lme.html", "report/lme/questions-1.html", "report/loco.html",
        "report/loco/questions-1.html", "report/mc.html", "report/mc/questions-1.html",
    ]  # fmt: skip


def test_every_local_link_resolves(store: ResultStore) -> None:
    """Static files, no server: every href of every page names an existing file (and anchor)."""
    for page in store.root.rglob("*.html"):
        text = page.read_text()
        for href in re.findall(r'href="([^"]+)"', text):
            path, _, anchor = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            assert target.exists(), (page, href)
            if anchor:
                assert f'id="{anchor}"' in target.read_text(), (page, href)


def _section(text: str, dataset: str) -> str:
    """The overview's section of ``dataset``: up to the next dataset's section or the definitions."""
    start = text.index(f'id="ds-{dataset}"')
    ends = [i for i in (text.find('<h2 id="ds-', start + 1), text.index('id="definitions"')) if i > 0]
    return text[start : min(ends)]


def test_overview_is_compact_and_side_by_side(store: ResultStore) -> None:
    text = _read(store, "report.html")
    # lme: one table of systems x metrics; both judge metrics are columns of it
    lme = _section(text, "lme")
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", lme)
    assert head and "lme_contains_normalized" in head.group(1) and "locomo_f1" in head.group(1)
    # per-type table of the main metric: systems are columns, side by side
    mc = _section(text, "mc")
    assert "mc_accuracy by question type" in mc and "<th>sysA<br>extract</th><th>sysB<br>extract</th>" in mc
    # F1 cell: value with its bootstrap interval; binary cell: Wilson
    assert re.search(r"0\.583 <span class=\"ci\">\[0\.250, 1\.000\]</span>", lme)
    assert "1 failed" in lme  # the failed F1 judgment, beside the number
    # compact: the page without its inline charts (the first screen's accuracy-vs-context plots)
    assert len(re.sub(r'src="data:image/png;base64,[^"]+"', "", text)) < 60_000


def test_dataset_page_lists_failures_and_questions(store: ResultStore) -> None:
    text = _read(store, "report/mc.html")
    failed = text[text.index('id="failed"') : text.index('id="questions"')]
    assert "m4" in failed and "RuntimeError: boom" in failed and 'href="mc/questions-1.html#mc__m4"' in failed
    index = text[text.index('id="questions"') :]
    assert index.count('href="mc/questions-1.html#') == 5  # one line per question


def test_drilldown_shows_context_answer_verdict_error(store: ResultStore) -> None:
    text = _read(store, "report/lme/questions-1.html")
    block = text[text.index('id="lme__q1"') : text.index('id="lme__q2"')]
    assert "gold evidence:</b> S1:0" in block
    # bm25 ranked S2:0 first, the gold turn S1:0 second: marked, and its rank stated
    assert re.search(r'<div class="unit turn">#2 <b>★ S1 turn 0</b>', block)
    assert "S1:0 → #2" in block
    assert "verdicts:" in block and "lme_contains_normalized" in block
    assert 'title="f1: correct"' in block and ">0.50<" in block  # mean metric: its score
    # the full system's retrieval failed on q1: its error is shown
    assert "retrieval failed" in block and "RuntimeError: boom" in block
    mc = _read(store, "report/mc/questions-1.html")
    m4 = mc[mc.index('id="mc__m4"') : mc.index('id="mc__m5"')]
    assert "answer failed" in m4 and "RuntimeError: boom" in m4


def test_stale_pages_are_removed(store: ResultStore, tmp_path: Path) -> None:
    copy = tmp_path / "r"
    shutil.copytree(store.root, copy)
    stale = copy / "report" / "gone" / "questions-1.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    moved = ResultStore(results_dir=str(copy))
    write_report_files(moved, collect(moved))
    assert not stale.exists() and (copy / "report" / "lme.html").exists()


def test_question_pages_are_chunked(monkeypatch: pytest.MonkeyPatch, store: ResultStore) -> None:
    monkeypatch.setattr(report_html, "QUESTIONS_PER_PAGE", 2)
    data = collect(store)
    from pipeline.report.build import collect_questions

    pages = report_html.render_pages(data, collect_questions(store, data.datasets))
    assert {"report/lme/questions-1.html", "report/lme/questions-2.html"} <= set(pages)
    assert "lme/questions-2.html#lme__q3_abs" in pages["report/lme.html"]


# ---- a real browser ------------------------------------------------------------------------
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
MEASURE = (
    "<script>window.addEventListener('load',function(){var s=1000,n=0;"
    "document.querySelectorAll('.plots img').forEach(function(i){n=Math.max(n,i.naturalWidth);"
    "s=Math.min(s,Math.round(1000*i.clientWidth/i.naturalWidth));});"
    "document.title='H='+document.documentElement.scrollHeight+' W='+"
    "document.documentElement.scrollWidth+' OPEN='+document.querySelectorAll('details[open]').length+"
    "' SCALE='+s+' NAT='+n;});</script>"
)


def browse(page: Path, profile: Path, anchor: str = "", window: str = "1280,900") -> dict[str, int]:
    """Load ``page`` (plus ``#anchor``) in headless Chromium; its height, width, open <details>, and
    how its charts are shown: the smallest shown/natural width ratio (permille) and the widest chart."""
    probe = page.with_name(f".probe-{page.name}")
    probe.write_text(page.read_text() + MEASURE)
    try:
        proc = subprocess.run(
            [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={window}",
             "--dump-dom", probe.as_uri() + (f"#{anchor}" if anchor else "")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        probe.unlink()
    m = re.search(r"<title>H=(\d+) W=(\d+) OPEN=(\d+) SCALE=(\d+) NAT=(\d+)</title>", proc.stdout)
    assert m, proc.stderr[-2000:]
    names = ("height", "width", "open", "scale_permille", "widest_chart")
    return dict(zip(names, (int(g) for g in m.groups()), strict=True))


def test_in_headless_chromium(store: ResultStore, tmp_path: Path) -> None:
    overview = browse(store.root / "report.html", tmp_path / "profile")
    assert overview["width"] <= 1280  # no table wider than the window
    assert 300 < overview["height"] < 4000
    questions = store.root / "report" / "lme" / "questions-1.html"
    folded = browse(questions, tmp_path / "profile")
    opened = browse(questions, tmp_path / "profile", anchor="lme__q2")
    assert (folded["open"], opened["open"]) == (0, 1)  # a link to a question opens it, offline
    assert opened["height"] > folded["height"]


def test_charts_shown_at_full_size_at_1280(store: ResultStore, tmp_path: Path) -> None:
    """At 1280 px no chart is scaled down (11 pt text stays ~15 px) and each fits the page."""
    shown = browse(store.root / "report" / "lme.html", tmp_path / "profile")
    assert shown["widest_chart"] > 0  # the page has charts and they loaded
    assert shown["scale_permille"] >= 990, shown
    assert shown["widest_chart"] <= 1172 and shown["width"] <= 1280, shown


# ---- readability (issue 28 item 7) ---------------------------------------------------------
@pytest.fixture(scope="module")
def all_failed(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    """The fixture's results where every answer (and so every judgment) of the mc dataset failed."""
    store = build_full_store(tmp_path_factory.mktemp("allfailed") / "results")
    err = "ReaderCallFailed: LLM call failed (m): connection error"
    keys = [(q, s) for q in ("m1", "m2", "m3", "m4", "m5") for s in ("sysA", "sysB")]
    answers = [answer_row("mc", q, s, "extract", label="offline", error=err) for q, s in keys]
    judgments = [
        judgment_row("mc", q, s, "extract", "mc", "mc_accuracy", None, error=f"answer failed: {err}") for q, s in keys
    ]
    write_stage(store, "answers", ANSWERS_PAYLOAD, answers)
    write_stage(store, "judgments", JUDGMENTS_PAYLOAD, judgments)
    store.refresh_catalog()
    write_report_files(store, collect(store))
    return store


def test_all_failed_keeps_verdicts_and_says_why_no_chart(all_failed: ResultStore) -> None:
    page = _read(all_failed, "report/mc.html")
    index = page[page.index('id="questions"') :]
    assert "<th>sysA/extract</th><th>sysB/extract</th>" in index  # the verdict columns stay
    assert index.count('<span class="fail" title="sys') == 10  # every answer marked "! failed"
    plots = page[page.index("<h2>Plots</h2>") : page.index("<h2>Multiple-choice confusion</h2>")]
    assert "<img" not in plots  # no empty axes ...
    assert "no answer was scored, every answer or judgment failed (10 failed" in plots  # ... but words


def test_collapsed_rows_name_system_reader_and_judge(store: ResultStore) -> None:
    page = _read(store, "report/lme/questions-1.html")
    summary = re.search(r'<details class="q" id="lme__q1"><summary>(.*?)</summary>', page)
    assert summary
    labelled = re.findall(r'<span class="who">([^<]+)</span> <span class="(?:ok|bad|fail|muted)"', summary.group(1))
    assert "bm25 / gpt / f1" in labelled and len(labelled) == summary.group(1).count('class="who"') >= 2


def test_both_evidence_measures_are_explained() -> None:
    """A LoCoMo system whose context names sessions: 0.000 beside 0.926 gets its explanation."""
    base = {"system": "summaries", "type_raw": report_html.ALL_TYPES, "n_scored": 10, "n_excluded": 0, "n_failed": 0}
    rows = [{**base, "level": "session"}, {**base, "level": "turn", "evidence_recall_context": 0.0}]
    official = [rows[0], {**rows[1], "evidence_recall_official_context": 0.926}]
    table = report_html.retrieval_summary(official)
    assert "<td class=num>0.000</td><td class=num>0.926</td>" in table
    explained = table[table.index('<p class="explain">') :]
    assert "session numbers" in explained and "without evidence as 1" in explained
    assert 'class="explain"' not in report_html.retrieval_summary(rows)  # no official figure: nothing to explain


def test_scatter_labels_do_not_overlap() -> None:
    from pipeline.report import plots

    rows = [
        {"system": name, "reader": "gpt", "mean_context_tokens": 1000 + i, "headline_value": 0.5 + i / 1000,
         "ci_low": 0.4, "ci_high": 0.6}
        for i, name in enumerate(["hybrid", "hybrid_rerank", "vector_rag", "full_context", "summaries"])
    ]  # fmt: skip
    fig = plots.context_figure(rows, "overlap")
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == 5
    assert not [(i, j) for i in range(5) for j in range(i) if boxes[i].overlaps(boxes[j])]
