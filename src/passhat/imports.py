"""Importing user code from a ``.py`` file (domains, agents) under a stable, collision-free name."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(path: Path, kind: str) -> ModuleType:
    """Import ``path`` as a module named after its resolved location, so two files never collide.

    The file is executed on every call: a suite reloaded after its domain file was edited must see the
    edit (its content hash depends on it). Raises ``ImportError`` when it cannot be imported.
    """
    name = f"passhat_user_{kind}_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
