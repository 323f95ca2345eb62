"""Resolve a benchmark config into frozen, typed component specs: once, when it is loaded.

Why: a mistake in a component entry (``kind: hybird``, ``params: {topk: 5}``, reader ``offlien``,
an unknown judge) used to surface only when its stage ran, after the canonical tables and the
embeddings (an hour on LongMemEval_S). Resolution looks every ``kind`` up in its registry
(built-ins, ``package.module:Name`` plugins and entry points: pipeline/kinds/plugins.py), validates
``params`` with the component's own params model, and, at load (``check_config``), checks what each
component needs against the config (an LLM endpoint, known datasets and loaders). Every error
names the file, the entry and the key: ``configs/x.yaml: memory_systems[2] (name: hybrid): kind:
unknown memory system 'hybird'; known: ...``.

The result is one frozen ``Benchmark`` (pipeline/config/specs.py): params parsed once, and every later use
(unit hashes, building a system or reader, binding a judge) takes the parsed, frozen model. It is
built once per process and config file (``load_benchmark``; the ``benchmark`` resource hands it to
the assets) and passed down to the stages: nothing below imports this module.
``resolve_config(cfg)`` is the lenient form; ``check_config(cfg)`` adds the load-time requirement
checks (pipeline/definitions.py and ``membench check-config`` call it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from pydantic import BaseModel, ValidationError

from pipeline.config.model import BenchmarkConfig, ComponentConfig, ConfigError, load_config
from pipeline.config.paths import path_problem
from pipeline.config.specs import (
    SECTION_JUDGES,
    SECTION_MEMORY_SYSTEMS,
    SECTION_READERS,
    Benchmark,
    ComponentSpec,
    entry_label,
)
from pipeline.core.families import UnknownFamilyError, dataset_family
from pipeline.judges.base import JudgeConfigError
from pipeline.kinds.plugins import (
    GROUP_JUDGES,
    GROUP_MEMORY_SYSTEMS,
    GROUP_READERS,
    PluginError,
    lookup,
    require_class,
)
from pipeline.llm.keys import needs_key
from pipeline.llm.protocol import safe_url
from pipeline.memory.params import MemoryConfigError
from pipeline.readers.base import ReaderConfigError
from pipeline.util.registry import Registry, RegistryError

if TYPE_CHECKING:
    from pipeline.judges.base import JudgeSpec
    from pipeline.memory.base import MemorySystem
    from pipeline.readers.base import Reader

T = TypeVar("T")

# the reader a config without ``readers:`` gets (needs no LLM, no API key)
DEFAULT_READERS: tuple[ComponentConfig, ...] = (ComponentConfig(name="offline", kind="offline"),)

MEMORY_SYSTEM_ATTRIBUTES = ("params_model", "version", "ingest_session", "restore", "retrieve")
READER_ATTRIBUTES = ("params_model", "label", "uses_encoder", "uses_llm", "thread_safe", "identity", "answer")


class ComponentError(ConfigError):
    """A component entry of the config is wrong; the message names file, entry and key."""


class UnknownKindError(ComponentError, RegistryError):
    """``kind`` names nothing registered, importable or installed as an entry point."""

    def __str__(self) -> str:  # RegistryError's readable form, not KeyError's quoted one
        return str(self.args[0])


class PluginConfigError(ComponentError, PluginError):
    """``kind`` names a plugin that cannot be imported or is not the right type of object."""


# bad params of an entry: also the section's own error type, so callers that catch it keep working
class MemoryEntryError(ComponentError, MemoryConfigError):
    """A ``memory_systems:`` entry is invalid."""


class ReaderEntryError(ComponentError, ReaderConfigError):
    """A ``readers:`` entry is invalid."""


class JudgeEntryError(ComponentError, JudgeConfigError):
    """A ``judges:`` entry is invalid."""


# The resolved config: a Benchmark (pipeline/config/specs.py) typed with the three sections' implementations.
ResolvedConfig: TypeAlias = "Benchmark[type[MemorySystem], type[Reader], JudgeSpec]"


# ---- the three sections ------------------------------------------------------------------------
def _memory_registry() -> Registry[type[MemorySystem]]:
    from pipeline.kinds.memory import MEMORY_SYSTEMS

    return MEMORY_SYSTEMS


def _reader_registry() -> Registry[type[Reader]]:
    from pipeline.kinds.readers import READERS

    return READERS


def _judge_registry() -> Registry[JudgeSpec]:
    from pipeline.kinds.judges import JUDGES

    return JUDGES


def _check_memory_system(obj: object) -> type[MemorySystem]:
    cls = require_class(obj, "memory system", MEMORY_SYSTEM_ATTRIBUTES)
    _require_params_model(cls)
    return cls  # checked structurally above


def _check_reader(obj: object) -> type[Reader]:
    cls = require_class(obj, "reader", READER_ATTRIBUTES)
    _require_params_model(cls)
    return cls  # checked structurally above


def _check_judge(obj: object) -> JudgeSpec:
    from pipeline.judges.base import JudgeSpec

    if not isinstance(obj, JudgeSpec):
        raise PluginError(f"expected a pipeline.judges.base.JudgeSpec, got {type(obj).__name__} {obj!r}")
    return obj


def _require_params_model(cls: type) -> None:
    model = getattr(cls, "params_model", None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(f"{cls.__module__}.{cls.__qualname__}.params_model must be a pydantic BaseModel class")


def _judge_params_model(spec: JudgeSpec) -> type[BaseModel]:
    from pipeline.judges.base import judge_params_model

    return judge_params_model(spec)


@dataclass(frozen=True)
class _Section(Generic[T]):
    name: str
    registry: Callable[[], Registry[T]]
    group: str
    check: Callable[[object], T]
    params_model: Callable[[T], type[BaseModel]]
    error: type[ComponentError]


MEMORY_SECTION: _Section[type[MemorySystem]] = _Section(
    SECTION_MEMORY_SYSTEMS,
    _memory_registry,
    GROUP_MEMORY_SYSTEMS,
    _check_memory_system,
    lambda c: c.params_model,
    MemoryEntryError,
)
READER_SECTION: _Section[type[Reader]] = _Section(
    SECTION_READERS, _reader_registry, GROUP_READERS, _check_reader, lambda c: c.params_model, ReaderEntryError
)
JUDGE_SECTION: _Section[JudgeSpec] = _Section(
    SECTION_JUDGES, _judge_registry, GROUP_JUDGES, _check_judge, _judge_params_model, JudgeEntryError
)


def params_problem(exc: ValidationError, model: type[BaseModel]) -> str:
    """A params ValidationError as ``params.<key>: <what is wrong>`` parts, one line."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        key = f"params.{loc}" if loc else "params"
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(model.model_fields)) or "none"
            parts.append(f"{key}: unknown parameter; allowed: {allowed}")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            shown = f" (got {err['input']!r})" if loc else ""
            parts.append(f"{key}: {msg}{shown}")
    return "; ".join(parts)


def resolve_component(section: _Section[T], index: int | None, entry: ComponentConfig, source: str) -> ComponentSpec[T]:
    """Registry lookup (plugins included) + params validation of one entry (errors name file/entry/key)."""
    where = f"{source}: {entry_label(section.name, index, entry.name)}"
    try:
        impl = lookup(section.registry(), section.group, entry.kind, section.check)
    except PluginError as exc:
        raise PluginConfigError(f"{where}: kind: {exc}") from exc
    except RegistryError as exc:
        raise UnknownKindError(f"{where}: kind: {exc}") from None
    model = section.params_model(impl)
    try:
        params = model(**entry.params)
    except ValidationError as exc:
        raise section.error(f"{where}: {params_problem(exc, model)}") from None
    return ComponentSpec(section.name, index, entry, impl, params)


def resolve_config(cfg: BenchmarkConfig) -> ResolvedConfig:
    """Resolve every component entry of ``cfg`` (uncached; see ``load_benchmark``)."""
    source = cfg.source or "<config>"
    dataset_names = {d.name for d in cfg.datasets}
    sections: list[tuple[_Section[Any], tuple[ComponentConfig, ...], bool]] = [
        (MEMORY_SECTION, cfg.memory_systems, True),
        (READER_SECTION, cfg.readers or DEFAULT_READERS, bool(cfg.readers)),
        (JUDGE_SECTION, cfg.judges, True),
    ]
    out: list[tuple[ComponentSpec[Any], ...]] = []
    for section, entries, written in sections:
        specs = []
        for i, entry in enumerate(entries):
            index = i if written else None
            unknown = sorted(set(entry.datasets or ()) - dataset_names)
            if unknown:
                raise section.error(
                    f"{source}: {entry_label(section.name, index, entry.name)}: datasets: unknown dataset(s) "
                    f"{unknown}; the config's datasets: {sorted(dataset_names)}"
                )
            specs.append(resolve_component(section, index, entry, source))
        out.append(tuple(specs))
    return Benchmark(cfg, out[0], out[1], out[2], _default_judges(cfg))


def _default_judges(cfg: BenchmarkConfig) -> dict[str, ComponentSpec[JudgeSpec]]:
    """metric -> resolved built-in judge, for every default judge of every dataset family (used
    when the config has no ``judges:``; an LLM judge is bound only when an LLM is configured)."""
    from pipeline.judges.base import DEFAULT_JUDGES

    if cfg.judges:
        return {}
    names = sorted({n for groups in DEFAULT_JUDGES.values() for group in groups for n in group})
    return {n: resolve_component(JUDGE_SECTION, None, ComponentConfig(name=n, kind=n), "judges") for n in names}


# ---- load-time requirement checks ----------------------------------------------------------------
def _needs_llm(spec: ComponentSpec[Any]) -> bool:
    if spec.section == SECTION_JUDGES:
        return bool(spec.impl.needs_llm)
    return bool(getattr(spec.impl, "uses_llm", False))


def check_config(cfg: BenchmarkConfig) -> ResolvedConfig:
    """``resolve_config(cfg)`` plus what a run needs that the config alone can tell: every dataset's loader
    is registered and of a known family, and every component that needs an LLM has an endpoint.

    Raises ConfigError (file, entry, key) before any asset runs.
    """
    from pipeline.datasets.base import DatasetFileError
    from pipeline.datasets.loaders import FOLDER_LOADERS, LOADERS, SOURCE_FILES, source_files

    source = cfg.source or "<config>"
    for i, ds in enumerate(cfg.datasets):
        where = f"{source}: {entry_label('datasets', i, ds.name)}: loader"
        if ds.loader not in LOADERS:
            raise ConfigError(f"{where}: unknown loader {ds.loader!r}; known: {', '.join(LOADERS.names())}")
        try:
            dataset_family(ds.loader)
        except UnknownFamilyError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        problem = path_problem(ds.resolved_path(cfg.base_dir), folder_ok=ds.loader in FOLDER_LOADERS)
        if problem is None and ds.loader in SOURCE_FILES:  # a multi-file loader: is its layout there?
            try:
                source_files(ds.loader, ds.resolved_path(cfg.base_dir))
            except DatasetFileError as exc:
                problem = str(exc)
        if problem is not None:
            raise ConfigError(f"{source}: {entry_label('datasets', i, ds.name)}: path: {problem}")
    res = resolve_config(cfg)
    specs: tuple[ComponentSpec[Any], ...] = (*res.memory_systems, *res.readers, *res.judges)
    users: dict[str, str] = {}  # block ("llm" / "judge_llm") -> the first entry that calls its endpoint
    for spec in specs:
        if not _needs_llm(spec):
            continue
        endpoint = cfg.judge_endpoint() if spec.section == SECTION_JUDGES else cfg.llm
        if endpoint is None:
            block = "'judge_llm:' or 'llm:'" if spec.section == SECTION_JUDGES else "'llm:'"
            raise ComponentError(
                f"{source}: {spec.where}: kind: {spec.kind!r} needs an LLM but the config has no {block} block"
            )
        users.setdefault(_block(cfg, spec.section), spec.where)
    default_llm_judges = _default_llm_judges(cfg)
    if default_llm_judges:
        users.setdefault(_block(cfg, SECTION_JUDGES), f"the default judges ({', '.join(default_llm_judges)})")
    _check_keys(cfg, users)
    return res


def _block(cfg: BenchmarkConfig, section: str) -> str:
    """The config block whose endpoint a section's LLM calls go to (BenchmarkConfig.judge_endpoint)."""
    return "judge_llm" if section == SECTION_JUDGES and cfg.judge_llm is not None else "llm"


def _default_llm_judges(cfg: BenchmarkConfig) -> list[str]:
    """The LLM judges a config without ``judges:`` gets (pipeline.judges.base.DEFAULT_JUDGES: only with ``llm:``)."""
    from pipeline.judges.base import DEFAULT_JUDGES

    if cfg.judges or cfg.llm is None:
        return []
    families = {dataset_family(ds.loader) for ds in cfg.datasets}
    return sorted({name for family in families for name in DEFAULT_JUDGES.get(family, ((), ()))[1]})


def _check_keys(cfg: BenchmarkConfig, users: dict[str, str]) -> None:
    """Every endpoint a component calls has its API key, unless it is a local server (pipeline/llm/keys.py).

    Why at load: without it the run went through every stage and failed every LLM call, sending none.
    """
    source = cfg.source or "<config>"
    for block, user in users.items():
        endpoint = cfg.judge_llm if block == "judge_llm" else cfg.llm
        if endpoint is not None and needs_key(endpoint.base_url, endpoint.api_key_env):
            raise ConfigError(
                f"{source}: {block}: api_key_env: ${endpoint.api_key_env} is not set (or empty), and "
                f"{safe_url(endpoint.base_url)} is not a local server (needed by {user}). Export the key "
                f"(export {endpoint.api_key_env}=...), or name the variable that holds it in {block}.api_key_env"
            )


@lru_cache(maxsize=8)
def load_benchmark(path: str) -> ResolvedConfig:
    """The benchmark of a config file, resolved once per process and path (the ``benchmark``
    resource hands it to every asset; the stages pass it down). Lenient like ``resolve_config``:
    the load-time checks already ran when the definitions were built (``check_config``)."""
    return resolve_config(load_config(path))
