"""Persistent, content-addressed cache of successful LLM replies.

Why: a benchmark run is hundreds of paid, slow, non-reproducible calls. Keying every reply by
sha256 of exactly what determines it (model, messages, sampling parameters) makes a re-run of a
finished benchmark free (zero requests) and lets an interrupted run resume where it stopped.
Deliberately NOT in the key: the API key and the base URL (secrets; and a changed endpoint
serving the same model name must not invalidate paid results: pipeline/config/identity.py; an
endpoint whose model name is not enough says so with ``model_tag``, which is in the key). Only successful replies are
stored, so a failure is retried by the next run instead of being replayed forever.

A stored reply can be DISCARDED after the fact (``discard`` / ``discard_reply``): a transport
success whose content the caller cannot use (an LLM judge reply with no parseable verdict) must
not be replayed on the next attempt, or the same failure repeats forever at zero requests. The
entry is moved to ``<cache_dir>/rejected/`` with the reason, kept for inspection and counting.

Layout: ``<cache_dir>/<key[:2]>/<key>.json``. Writes go to a unique temp file in the same folder
and are renamed over the target (``os.replace`` is atomic), so readers never see half a file and
concurrent writers of the same key simply both write the same content.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.util.files import write_new_file

# Bump when the key recipe or the stored payload changes meaning: old entries then miss.
CACHE_SCHEMA_VERSION = 1
REJECTED_SUBDIR = "rejected"  # discarded replies (never served again; kept for inspection)

log = logging.getLogger(__name__)


def canonical_json(obj: object) -> str:
    """The one serialisation hashed for keys: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def cache_key(
    model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], model_tag: str | None = None
) -> str:
    """sha256 hex of (schema version, model, messages, params[, model tag]); ``params`` holds every
    request knob. The endpoint's identity fields (pipeline.config.identity.ENDPOINT_IDENTITY_FIELDS)
    all reach it: model, temperature and max_tokens as sent, the tag when the endpoint has one (absent
    otherwise, so keys made before tags existed still match)."""
    key: dict[str, Any] = {"v": CACHE_SCHEMA_VERSION, "model": model, "messages": list(messages)}
    key["params"] = dict(params)
    if model_tag is not None:
        key["model_tag"] = model_tag
    return hashlib.sha256(canonical_json(key).encode("utf-8")).hexdigest()


class ResponseCache:
    """JSON files under ``root``, one per key; safe to share between threads and processes."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._locks_guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        _OPEN_CACHES.add(self)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored payload, or ``None`` on a miss (an unreadable entry is a logged miss)."""
        path = self.path(key)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("LLM cache entry %s is unreadable (%s); treating it as a miss", path, exc)
            return None
        if not isinstance(payload, dict) or payload.get("key") != key:
            log.warning("LLM cache entry %s does not hold key %s; treating it as a miss", path, key)
            return None
        return payload

    def put(self, key: str, payload: Mapping[str, Any]) -> Path:
        """Store ``payload`` (plus its key) atomically: temp file + ``os.replace``."""
        path = self.path(key)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            write_new_file(tmp, canonical_json({**payload, "key": key}).encode("utf-8"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        return path

    def discard(self, key: str, reason: str) -> bool:
        """Move the entry of ``key`` to ``rejected/<key>.json`` (with ``reason``): the next ``get``
        misses, so the request is made again. False when this cache does not hold the key."""
        path = self.path(key)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False
        except (OSError, ValueError):
            payload = {}
        target = self.root / REJECTED_SUBDIR / f"{key}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            tmp.write_text(canonical_json({**payload, "key": key, "rejected_reason": reason}), encoding="utf-8")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        log.info("LLM cache entry %s discarded: %s", key, reason)
        return True

    def rejected_count(self) -> int:
        """How many replies were discarded from this cache (files under ``rejected/``)."""
        folder = self.root / REJECTED_SUBDIR
        return sum(1 for _ in folder.glob("*.json")) if folder.is_dir() else 0

    @contextlib.contextmanager
    def locked(self, key: str) -> Iterator[None]:
        """Serialise work on one key in this process, so identical concurrent requests cost one call."""
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield


# every ResponseCache alive in this process: callers holding only an LLMReply (its ``cache_key``)
# can discard it without a handle on the client that cached it
_OPEN_CACHES: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


def discard_reply(key: str, reason: str) -> int:
    """Discard the cached reply ``key`` from every cache open in this process; how many held it.

    Why a process-wide lookup: judges see an ``LLMReply`` (with its ``cache_key``), not the cache
    of the client that produced it; the reply was cached by a ResponseCache of this process.
    """
    return sum(cache.discard(key, reason) for cache in list(_OPEN_CACHES))
