"""What the model relay forwards to: ``--agent-model-relay NAME=URL``, checked before any trial.

``NAME`` is how the agent reaches it (``{trial_url}/models/NAME``; a ``cmd:`` agent also gets it as
``NAME_BASE_URL``, the variable the provider's SDK reads: ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``),
``URL`` the provider's base URL as that SDK would use it (``https://api.openai.com/v1``,
``https://api.anthropic.com``): the path the SDK appends goes after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from passhat.errors import PasshatError

_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
OPTION = "--agent-model-relay"


@dataclass(frozen=True)
class ModelUpstream:
    """One provider the relay forwards to."""

    name: str
    """The path segment the agent uses (``openai``); lower case, so ``NAME_BASE_URL`` is unambiguous."""
    url: str
    """The provider's base URL, without a trailing slash (``https://api.openai.com/v1``)."""

    @property
    def env_name(self) -> str:
        """The variable a ``cmd:`` agent finds the relay's URL in (:func:`base_url_variable`)."""
        return base_url_variable(self.name)


def base_url_variable(name: str) -> str:
    """``NAME_BASE_URL``: the variable the provider's SDK reads its base URL from (``OPENAI_BASE_URL``,
    ``ANTHROPIC_BASE_URL``; other SDKs follow the pattern, e.g. ``GROQ_BASE_URL``)."""
    return f"{name.upper()}_BASE_URL"


def parse_model_upstream(text: str) -> ModelUpstream:
    """``NAME=URL`` → :class:`ModelUpstream`; bad input (naming the option and what is valid) otherwise."""
    name, sep, url = text.strip().partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not _NAME.fullmatch(name):
        raise PasshatError(f"{OPTION} {text!r}: expected NAME=URL with NAME in lower case letters, digits and _ "
                           "(e.g. openai=https://api.openai.com/v1 or anthropic=https://api.anthropic.com)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PasshatError(f"{OPTION} {text!r}: the URL must be http:// or https:// with a host, e.g. "
                           "https://api.openai.com/v1")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise PasshatError(f"{OPTION} {text!r}: the URL must not carry a query, a fragment or credentials "
                           "(the agent's SDK sends its own key, and the relay passes it on)")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise PasshatError(f"{OPTION} {text!r}: the port must be a number from 1 to 65535") from None
    return ModelUpstream(name, url.rstrip("/"))


def parse_model_upstreams(items: Iterable[str] | Mapping[str, str]) -> tuple[ModelUpstream, ...]:
    """Every ``NAME=URL`` (or a mapping name → URL, from Python), each name once."""
    texts = [f"{k}={v}" for k, v in items.items()] if isinstance(items, Mapping) else list(items)
    upstreams = tuple(parse_model_upstream(t) for t in texts)
    names = [u.name for u in upstreams]
    for name in names:
        if names.count(name) > 1:
            raise PasshatError(f"{OPTION}: {name!r} is given {names.count(name)} times; each name names one provider")
    return upstreams


__all__ = ["OPTION", "ModelUpstream", "base_url_variable", "parse_model_upstream", "parse_model_upstreams"]
