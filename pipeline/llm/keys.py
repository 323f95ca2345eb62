"""Which endpoints need an API key and where it comes from: one rule for the client and for the config check.

Why one rule: the client (pipeline/llm/client.py) reads the key when it first sends a request; a
remote endpoint whose key variable was unset passed ``membench check-config`` and the definitions,
and the run then went through every stage (231 s) to fail every LLM call with "no API key", having
sent no request. pipeline/kinds/resolve.py ``check_config`` applies the same rule at load, so that
is a config error before any work; the client keeps it for callers that build a client directly.

A local server (loopback or ``0.0.0.0``) ignores the key: it gets a placeholder, since the
``openai`` client will not send a request without one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
NO_KEY_PLACEHOLDER = "no-key"  # local servers ignore the key, but the openai client needs one


def is_local(base_url: str) -> bool:
    """True when ``base_url`` is a server on this machine (no key needed)."""
    return urlsplit(base_url).hostname in LOCAL_HOSTS


def key_from_env(api_key_env: str, environ: Mapping[str, str] | None = None) -> str:
    """The key in ``$api_key_env`` ("" when unset or empty)."""
    return (os.environ if environ is None else environ).get(api_key_env, "")


def needs_key(base_url: str, api_key_env: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when a request to ``base_url`` would go out without a key: remote, and ``$api_key_env`` empty."""
    return not is_local(base_url) and not key_from_env(api_key_env, environ)
