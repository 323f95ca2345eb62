"""The canonical corpus: records read column by column, tables read only when first used."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.config.model import DatasetConfig
from pipeline.core.records import TURNS_SCHEMA, TurnRow, rows_to_table
from pipeline.datasets.convert import convert_dataset
from pipeline.datasets.samples import LONGMEMEVAL_S_FILE, SAMPLE_DIR
from pipeline.store.corpus import Corpus, rows_of
from pipeline.store.results import ResultStore, read_matching_rows

TURNS = [
    TurnRow("d", "s1", "s1:0", 0, "user", "user", "I moved to Porto.", True, "a", None),
    TurnRow("d", "s1", "s1:1", 1, "bot", "assistant", "", False, None, "a cat"),
]

SAMPLE = DatasetConfig(name="lme", loader="longmemeval", path=str(SAMPLE_DIR / LONGMEMEVAL_S_FILE))


def test_rows_of_builds_the_records_whatever_the_column_order() -> None:
    table = rows_to_table(TURNS, TURNS_SCHEMA)
    assert rows_of(table, TurnRow) == TURNS
    reversed_columns = table.select(list(reversed(table.column_names)))
    assert rows_of(reversed_columns, TurnRow) == TURNS
    assert rows_of(table.slice(0, 0), TurnRow) == []
    with pytest.raises(TypeError):  # a column that is no field of the record
        rows_of(table.append_column("extra", pa.array([1, 2])), TurnRow)


def test_corpus_reads_a_table_when_first_used(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    convert_dataset(SAMPLE, store, lambda _m: None)
    read: list[str] = []
    corpus = Corpus.load(store, "lme")
    original = corpus._read
    assert original is not None

    def counting(name: str, where: pc.Expression | None) -> pa.Table:
        read.append(name)
        return original(name, where)

    corpus._read = counting
    key = corpus.keys()[0]
    assert read == ["questions"]  # the question and its haystack id: no turns read
    hay = corpus.haystack(corpus.question(key).haystack_id)
    assert read == ["questions", "haystacks", "sessions", "turns"]
    assert all(isinstance(h.session.datetime, dt.datetime | None) for h in hay)


def test_a_missing_table_fails_when_the_corpus_is_opened(tmp_path: Path) -> None:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    convert_dataset(SAMPLE, store, lambda _m: None)
    store.canonical_path("lme", "turns").unlink()
    with pytest.raises(FileNotFoundError, match="canonical table 'turns' of dataset 'lme' is missing"):
        Corpus.load(store, "lme")


def test_a_corpus_of_some_roles_holds_the_same_sessions_with_only_their_turns(tmp_path: Path) -> None:
    """``turn_roles``: every session kept (one without such turns holds none), turns in order as filtered."""
    store = ResultStore(results_dir=str(tmp_path / "results"))
    convert_dataset(SAMPLE, store, lambda _m: None)
    everything, users = Corpus.load(store, "lme"), Corpus.load(store, "lme", turn_roles=("user",))
    keys = everything.keys()
    for key in keys:
        haystack_id = everything.question(key).haystack_id
        sessions = everything.haystack(haystack_id)
        expected = [replace(hs, turns=tuple(t for t in hs.turns if t.role == "user")) for hs in sessions]
        assert users.haystack(haystack_id) == expected
    assert any(t.role == "assistant" for hs in everything.haystack(haystack_id) for t in hs.turns)


def test_check_haystack_loads_the_corpus_and_raises_for_an_unknown_id(tmp_path: Path) -> None:
    """What a stage calls before its threads start: the tables ``haystack`` reads, without its sessions."""
    store = ResultStore(results_dir=str(tmp_path / "results"))
    convert_dataset(SAMPLE, store, lambda _m: None)
    corpus = Corpus.load(store, "lme")
    haystack_id = corpus.question(corpus.keys()[0]).haystack_id
    corpus.check_haystack(haystack_id)
    assert {"_haystacks", "_sessions", "_turns"} <= set(vars(corpus))  # the cached properties, built
    with pytest.raises(KeyError, match="no-such-haystack"):
        corpus.check_haystack("no-such-haystack")


@pytest.mark.parametrize(
    ("roles", "row_group_size"),
    [
        (("user",), 2),  # several row groups, some without a user turn
        (("assistant",), 3),
        (("user", "assistant"), 1000),  # one row group, every row kept
        (("nobody",), 2),  # no row kept
    ],
)
def test_matching_rows_are_the_filtered_table(tmp_path: Path, roles: tuple[str, ...], row_group_size: int) -> None:
    """``read_matching_rows`` (a row group at a time) holds what the whole file read and filtered holds,
    schema metadata included; an empty file gives its empty table."""
    roles_of = ["user", "assistant", "assistant", "assistant", "user", "assistant", "user"]
    rows = [replace(TURNS[0], turn_id=f"s1:{i}", position=i, role=r) for i, r in enumerate(roles_of)]
    table = rows_to_table(rows, TURNS_SCHEMA).replace_schema_metadata({b"k": b"v"})
    path = tmp_path / "turns.parquet"
    where = pc.field("role").isin(list(roles))
    for written in (table, table.slice(0, 0)):
        pq.write_table(written, path, row_group_size=row_group_size)
        expected = pq.read_table(path).filter(where)
        got = read_matching_rows(path, where)
        assert got.equals(expected) and got.schema.equals(expected.schema, check_metadata=True)


def test_a_corpus_reads_only_the_turns_of_its_roles(tmp_path: Path) -> None:
    """Read from the store, the turns are read once, filtered to the kept roles by the read itself
    (no whole table decoded); a table given to the corpus is filtered as before."""
    store = ResultStore(results_dir=str(tmp_path / "results"))
    convert_dataset(SAMPLE, store, lambda _m: None)
    reads: list[pa.Table] = []

    def read(name: str, where: pc.Expression | None) -> pa.Table:
        table = store.read_canonical("lme", name, where)
        assert name == "turns" and where is not None and table is not None
        reads.append(table)
        return table

    users = Corpus("lme", {}, read, turn_roles=("user",))
    users.turns("any")  # loads the turns
    users.turns("other")
    assert len(reads) == 1 and set(reads[0].column("role").to_pylist()) == {"user"}
    given = Corpus("lme", {"turns": rows_to_table(TURNS, TURNS_SCHEMA)}, turn_roles=("user",))
    assert given.turns("s1") == (TURNS[0],)
