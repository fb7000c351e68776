"""A fixture file: YAML with ``now`` (where the trial clock starts) and ``tables: {table: [rows]}``.

The same file format for every database kind (in-memory SQLite, a SQLite file, PostgreSQL), read here once.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from passhat.errors import DomainError
from passhat.validation import load_yaml

Rows = dict[str, list[dict[str, Any]]]


def read_fixture(path: Path, default_start: datetime) -> tuple[Rows, datetime]:
    """The rows by table and the start time of the fixture file at ``path`` (errors name the file)."""
    try:
        data = load_yaml(path.read_text("utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DomainError(f"{path}: cannot read fixture: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("tables", {}), dict):
        raise DomainError(f"{path}: a fixture is a mapping with `now` (ISO time) and `tables: {{table: [rows]}}`")
    start = default_start
    if "now" in data:
        start = data["now"] if isinstance(data["now"], datetime) else datetime.fromisoformat(str(data["now"]))
    return data.get("tables", {}), start
