"""The content-addressed reply cache: what the key covers, atomic files, thread safety."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pipeline.llm.cache import ResponseCache, cache_key

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
PARAMS = {"temperature": 0.0, "max_tokens": 64}
BASE = cache_key("m", MSGS, PARAMS)


def test_key_is_sha256_hex_and_stable() -> None:
    assert len(BASE) == 64 and all(c in "0123456789abcdef" for c in BASE)
    # dict order does not matter, values do
    assert cache_key("m", [dict(reversed(m.items())) for m in MSGS], {"max_tokens": 64, "temperature": 0.0}) == BASE


@pytest.mark.parametrize(
    ("model", "messages", "params"),
    [
        ("m2", MSGS, PARAMS),
        ("m", [*MSGS[:1], {"role": "user", "content": "Hi!"}], PARAMS),
        ("m", MSGS[1:], PARAMS),
        ("m", [MSGS[1], MSGS[0]], PARAMS),
        ("m", MSGS, {"temperature": 0.7, "max_tokens": 64}),
        ("m", MSGS, {"temperature": 0.0, "max_tokens": 65}),
        ("m", MSGS, {**PARAMS, "seed": 1}),
        ("m", MSGS, {**PARAMS, "stop": ["\n"]}),
    ],
)
def test_key_changes_with_model_messages_and_every_param(
    model: str, messages: list[dict[str, str]], params: dict[str, Any]
) -> None:
    assert cache_key(model, messages, params) != BASE


def test_put_get_roundtrip_and_layout(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.get(BASE) is None
    path = cache.put(BASE, {"text": "hello", "prompt_tokens": 3})
    assert path == tmp_path / BASE[:2] / f"{BASE}.json"
    assert cache.get(BASE) == {"text": "hello", "prompt_tokens": 3, "key": BASE}
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind


def test_put_into_an_existing_folder_makes_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why: every live reply is put; a ``mkdir`` per put failed in all but a folder's first."""
    cache = ResponseCache(tmp_path)
    cache.put(BASE, {"text": "a"})
    other = next(k for k in (cache_key("m", MSGS, {**PARAMS, "seed": i}) for i in range(1000)) if k[:2] == BASE[:2])
    made: list[Path] = []
    real = Path.mkdir
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: (made.append(self), real(self, *a, **k))[1])
    cache.put(other, {"text": "b"})
    assert made == []
    assert cache.get(other) == {"text": "b", "key": other}


def test_a_failed_put_leaves_no_temp_file_and_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResponseCache(tmp_path)

    def broken(*_a: object, **_k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("pipeline.llm.cache.os.replace", broken)
    with pytest.raises(OSError, match="disk full"):
        cache.put(BASE, {"text": "a"})
    assert [p.name for p in (tmp_path / BASE[:2]).iterdir()] == []
    assert cache.get(BASE) is None


def test_unreadable_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    path = cache.put(BASE, {"text": "x"})
    path.write_text("{half a json")
    assert cache.get(BASE) is None
    path.write_text(json.dumps({"key": "someone-else", "text": "x"}))
    assert cache.get(BASE) is None
    cache.put(BASE, {"text": "fixed"})
    assert cache.get(BASE)["text"] == "fixed"


def test_concurrent_writers_and_readers_never_see_partial_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    big = "w " * 50_000
    errors: list[str] = []

    def writer() -> None:
        for _ in range(20):
            cache.put(BASE, {"text": big})

    def reader() -> None:
        for _ in range(200):
            got = cache.get(BASE)
            if got is not None and got["text"] != big:
                errors.append("partial read")

    threads = [threading.Thread(target=writer) for _ in range(3)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.get(BASE)["text"] == big
    assert sorted(p.name for p in cache.path(BASE).parent.iterdir()) == [f"{BASE}.json"]
