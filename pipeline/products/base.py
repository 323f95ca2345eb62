"""What every product memory shares: the library check, the proxy meter, the state dir, resumption.

A product memory is a ``MemorySystem`` (pipeline/memory/base.py) whose work is done by a real
library from PyPI. This base class owns what is the same for every product:

- the library is checked when the config is loaded (``ProductParams.check_library``): a missing
  package is one line naming the kind, the package to install and the key that selected it;
- the product talks to membench's proxy (pipeline/products/proxy.py) through its own meter, so
  its LLM and embedding calls are cached, retried, rate-limited and counted per phase;
- its on-disk state lives in ``<results_dir>/products/<kind>-<params hash>/<haystack>`` with a
  snapshot per session (pipeline/products/state.py);
- each ingested session returns one ``product_session`` marker unit whose text is the session's
  usage as JSON (LLM calls, upstream calls, tokens, cost, embedding calls, seconds): the
  checkpoint then counts the sessions the product finished, and the usage is queryable with SQL
  in the checkpoint Parquet files.

Subclasses implement ``_open`` (build the library's client on the live directory),
``_ingest`` (one session -> the product's memories as units), ``_search`` (a question -> ranked
hits) and ``_rebuild`` (refill an empty store from checkpoint units when no snapshot survives).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import time
import warnings
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, model_validator

from pipeline.catalog.products import KIND_PRODUCT_SESSION as KIND_PRODUCT_SESSION  # the marker kind; its views own it
from pipeline.config.extras import missing_extra
from pipeline.core.records import QuestionRow
from pipeline.memory.base import MemoryDeps, MemoryUnit, RetrievalResult
from pipeline.memory.checkpoint import file_safe
from pipeline.memory.context import format_date
from pipeline.memory.params import MemoryConfigError, ParamsInput, SystemParams, parse_params
from pipeline.products.proxy import PHASE_INGESTION, PHASE_SEARCH, EndpointOptions, Meter, product_proxy
from pipeline.products.state import PRODUCTS_SUBDIR, StateDir, StateUntrusted
from pipeline.store.corpus import HaystackSession


class ProductCallFailed(RuntimeError):
    """An LLM call made by the product failed (after membench's retries) during an ingestion session."""


class ProductParams(SystemParams):
    """Params every product accepts; ``requires`` = (kind, module, package) is checked at config load."""

    requires: ClassVar[tuple[str, str, str] | None] = None
    top_k: int = Field(default=20, gt=0)
    token_budget: int | None = Field(default=8_000, gt=0)
    model: str | None = None  # the chat model the product is told to use; None = the config's llm.model

    @model_validator(mode="before")
    @classmethod
    def check_library(cls, data: Any) -> Any:
        problem = missing_library(*cls.requires) if cls.requires else None
        if problem:
            raise ValueError(problem)
        return data


def missing_library(kind: str, module: str, package: str) -> str | None:
    """The one-line config error for a product whose library is not importable (naming the extra that
    installs it, pipeline/config/extras.py), else None."""
    if importlib.util.find_spec(module) is not None:
        return None
    return missing_extra(kind, package, module)


def params_hash_of(kind: str, version: int, params: dict[str, Any]) -> str:
    """The hash naming a product's state dir ``products/<kind>-<hash>``: kind, code version and params,
    not the system's name (``membench forget`` computes it for configured systems, pipeline/cli/forget.py)."""
    blob = json.dumps({"kind": kind, "version": version, "params": params}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@contextmanager
def library_notices_off() -> Iterator[None]:
    """Import a product library without its deprecation notices reaching the run's terminal.

    Why: importing graphiti, trustcall (LangMem) or mem0 emits ``DeprecationWarning``s (pydantic's,
    LangGraph's) about the library's own code, which a user of membench cannot act on and which read
    as a problem with the run. Only the import is covered: warnings raised later, and membench's own,
    still show. Python warns once per import, so this covers the first (the only) import.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


class ProductMemory:
    """Base of product memories (one instance = one (system, haystack) memory)."""

    kind: str
    params_model: type[Any]
    version: int = 1
    uses_llm: ClassVar[bool] = True
    uses_encoder: ClassVar[bool] = True
    checkpoint_every: ClassVar[int] = 1  # every session: a session costs LLM calls
    library: ClassVar[tuple[str, str]]  # (module, package==version)

    @classmethod
    def library_identity(cls) -> str | None:
        """``package==version`` of the installed library when it is not the pinned one, else None.

        Why in the unit hash (pipeline/memory/systems.py): another library version extracts other
        memories from the same sessions. The pinned version adds nothing to the hash, so rows made
        with it keep theirs; a library installed elsewhere (Hindsight's own venv) reads as pinned."""
        spec = cls.library[1]
        name, _, pinned = spec.partition("==")
        name = name.split("[", 1)[0]
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None
        return None if installed == pinned else f"{name}=={installed}"

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        self.params = parse_params(self.params_model, params, self.kind)
        problem = missing_library(self.kind, *self.library)
        if problem:
            raise MemoryConfigError(problem)
        if deps.llm is None:
            raise MemoryConfigError(
                f"memory system kind {self.kind!r} drives a product whose LLM calls go through membench: "
                "the benchmark config needs an `llm:` block (base_url, model)"
            )
        if deps.encoder is None:
            raise MemoryConfigError(f"memory system kind {self.kind!r} needs the run's embedding model")
        if deps.state_dir is None:
            raise MemoryConfigError(f"memory system kind {self.kind!r} needs a state directory (MemoryDeps.state_dir)")
        self.deps = deps
        self.meter = Meter(deps.llm, deps.encoder, self.endpoint_options())
        self._base_url: str | None = None
        self.chat_model = self.params.model or getattr(deps.llm, "model", None) or "membench"
        self.embed_model = deps.encoder.model_name
        self.embed_dims = int(deps.encoder.encode(["dimension probe"]).shape[1])
        self.root = Path(deps.state_dir) / PRODUCTS_SUBDIR / f"{self.kind}-{self.params_hash()}"
        self.state: StateDir | None = None
        self.haystack_id: str | None = None
        self.sessions_done = 0
        self.positions: dict[str, int] = {}

    def endpoint_options(self) -> EndpointOptions:
        """How the proxy adapts this product's requests to the upstream (pipeline/products/proxy.py):
        as sent, unless a subclass maps its params to an option."""
        return EndpointOptions()

    @property
    def call_timeout_s(self) -> float:
        """How long the product may wait for one proxied LLM call: every attempt membench's client may
        make, plus backoff. A shorter product-side timeout would give up (or retry on its own) while
        membench's upstream call still runs, and a product retry would reach the upstream twice."""
        timeout = float(getattr(self.deps.llm, "timeout_s", 600.0))
        return (int(getattr(self.deps.llm, "max_retries", 0)) + 1) * (timeout + 60.0)

    def params_hash(self) -> str:
        return params_hash_of(self.kind, self.version, self.params.model_dump())

    @property
    def base_url(self) -> str:
        """The proxy route of this instance, registered on first use (a system built only to check
        the config, pipeline.memory.systems.check_buildable, never opens a route)."""
        if self._base_url is None:
            self._base_url = product_proxy().register(self.meter)
        return self._base_url

    def close(self) -> None:
        product_proxy().release(self.meter)

    # ---- MemorySystem -----------------------------------------------------------------------
    def ingest_session(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]:
        if self.state is None:  # no restore: ingestion starts at session 0
            self._bind(haystack_id).start_fresh()
            self._open()
        assert self.state is not None
        self.positions[session.session.session_key] = session.position
        self.state.begin_session(self.sessions_done)
        start = time.monotonic()
        with self.meter.in_phase(PHASE_INGESTION) as usage:
            memories = self._ingest(haystack_id, session) if session.turns else []
        if usage.failed_llm_calls:  # the product carried on without that reply: the session is not done
            raise ProductCallFailed(
                f"{self.kind}: {usage.failed_llm_calls} LLM call(s) failed while the product ingested this session "
                f"and it went on without them; the session is ingested again on the next run. Last error: "
                f"{self.meter.last_error}"
            )
        self.sessions_done += 1
        self.state.commit(self.sessions_done)
        record = {**usage.as_dict(), "seconds": round(time.monotonic() - start, 4), "memories": len(memories)}
        key = session.session.session_key
        marker = MemoryUnit(
            f"{key}#{KIND_PRODUCT_SESSION}", haystack_id, key, session.position, (),
            json.dumps(record, sort_keys=True), session.session.datetime, "system", KIND_PRODUCT_SESSION,
        )  # fmt: skip
        return [*memories, marker]

    def restore(self, units: list[MemoryUnit]) -> None:
        """Open the state after the checkpoint's sessions; rebuild it from units if untrusted."""
        markers = [u for u in units if u.kind == KIND_PRODUCT_SESSION]
        if not units:
            raise StateUntrusted("restore called without units")
        state = self._bind(units[0].haystack_id)
        self.sessions_done = len(markers)
        self.positions = {u.session_key: u.session_position for u in markers}
        try:
            how = state.settle(self.sessions_done)
            self._open()
        except StateUntrusted as exc:
            self.deps.log(f"{self.kind}: {exc}; rebuilding the store from the checkpoint's memories")
            state.start_fresh()
            self._open()
            self._rebuild([u for u in units if u.kind != KIND_PRODUCT_SESSION])
            state.commit(self.sessions_done)
            how = "rebuilt"
        self.restored = how

    def retrieve(self, question: QuestionRow) -> RetrievalResult:
        if self.state is None:
            raise StateUntrusted(f"{self.kind}: retrieve before ingest/restore")
        with self.meter.in_phase(PHASE_SEARCH) as usage:
            result = self._search(question)
        notes = {**result.notes, "search_usage": usage.as_dict(), "state": getattr(self, "restored", "live")}
        return RetrievalResult(result.units, result.context, result.context_tokens, result.trimmed_units, notes)

    # ---- helpers ------------------------------------------------------------------------------
    def _bind(self, haystack_id: str) -> StateDir:
        self.haystack_id = haystack_id
        self.state = StateDir(self.root / file_safe(haystack_id))
        return self.state

    @property
    def live_dir(self) -> Path:
        assert self.state is not None
        return self.state.live

    @abstractmethod
    def _open(self) -> None: ...

    @abstractmethod
    def _ingest(self, haystack_id: str, session: HaystackSession) -> list[MemoryUnit]: ...

    @abstractmethod
    def _search(self, question: QuestionRow) -> RetrievalResult: ...

    @abstractmethod
    def _rebuild(self, memories: list[MemoryUnit]) -> None: ...


def haystack_label(haystack_id: str) -> str:
    """A stable, whitespace- and dot-free id for the haystack (mem0 user ids, LangGraph namespaces)."""
    return "h" + hashlib.sha256(haystack_id.encode()).hexdigest()[:16]


def session_messages(session: HaystackSession) -> list[dict[str, str]]:
    """The session's turns as chat messages, each prefixed with the session date and the speaker
    (the products take no per-message timestamp through their public add APIs)."""
    date = session.session.datetime_raw or format_date(session.session.datetime)
    out = []
    for t in session.turns:
        text = f"[{date}] {t.speaker}: {t.text}"
        if t.caption:
            text += f" [shares an image: {t.caption}]"
        out.append({"role": "assistant" if t.role == "assistant" else "user", "content": text})
    return out


def speaker_lines(session: HaystackSession) -> str:
    """A session as ``Speaker: text`` lines (an image's caption appended): the conversation text
    products that take one document per session (graphiti's episode, Hindsight's retain item) get."""
    lines = []
    for t in session.turns:
        text = f"{t.speaker}: {t.text}"
        lines.append(f"{text} [shares an image: {t.caption}]" if t.caption else text)
    return "\n".join(lines)


def usage_note(extra: dict[str, Any]) -> dict[str, Any]:
    """Retrieval notes every product adds: what the ids it returns can be mapped to."""
    return {"source_ids": "session", **extra}
