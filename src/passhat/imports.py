"""Importing user code (domains, agents) from a ``.py`` file or a module, the same way from any folder.

A file is imported as a module of its own folder, as Python does for a script: its folder is on
``sys.path`` (so ``from helpers import make_tools`` finds the ``helpers.py`` beside it, whatever the
current directory) and the module is a submodule of a package standing for that folder (so
``from .helpers import make_tools`` works too, and two folders' ``helpers.py`` never collide that way).

Whatever goes wrong while the user's code runs — a syntax error, a missing module, a ``TypeError`` from
``@tool`` — is a :class:`UserCodeError` naming the file and line where it happened, not a traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType


class UserCodeError(ImportError):
    """User code failed while being imported; the message says where (``file, line N``) and what.

    An ``ImportError`` so callers that already turn a failed import into their own error (naming the
    domain or agent reference) handle it the same way.
    """


def _folder_package(folder: Path) -> str:
    """The package standing for ``folder`` (created on first use): its modules are the folder's files."""
    name = "passhat_user_" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    return name


def import_file(path: Path, kind: str) -> ModuleType:
    """Import ``path`` as ``<package of its folder>.<file stem>``, with its folder on ``sys.path``.

    The file is executed on every call: a suite reloaded after its domain file was edited must see the
    edit (its content hash depends on it). ``kind`` ("domain", "agent") names the file in messages.
    The folder's other modules, once imported, are Python's to cache, as for any import.
    Raises ``ImportError`` when it cannot be imported (a :class:`UserCodeError` when its code failed).
    """
    path = Path(path).resolve()
    folder = path.parent
    # appended, as the current folder is by the CLI: a sibling never shadows an installed package
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    name = f"{_folder_package(folder)}.{path.stem.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {kind} file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise UserCodeError(describe_failure(exc, path)) from exc
    return module


def import_module(name: str) -> ModuleType:
    """``importlib.import_module``, with the user's code failing as a :class:`UserCodeError`.

    A module that does not exist stays a plain ``ModuleNotFoundError`` (the caller says what it expected).
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise
        raise UserCodeError(describe_failure(exc, None)) from exc
    except (Exception, SystemExit) as exc:
        raise UserCodeError(describe_failure(exc, None)) from exc


def describe_failure(exc: BaseException, loaded: Path | None) -> str:
    """``line 3: SyntaxError: invalid syntax`` for the loaded file, ``helpers.py, line 7: NameError: …``
    for another file it imported: the innermost place in user code, not passhat's or Python's frames."""
    where = _where(exc, loaded)
    what = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    text = f"{type(exc).__name__}: {what}" if what else type(exc).__name__
    return f"{where}: {text}" if where else text


def _where(exc: BaseException, loaded: Path | None) -> str:
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return _place(Path(exc.filename), exc.lineno, loaded)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    if not frames:
        return ""
    last = frames[-1]
    return _place(Path(last.filename), last.lineno or 0, loaded)


def _place(file: Path, line: int, loaded: Path | None) -> str:
    if loaded is not None and file.resolve() == loaded:
        return f"line {line}"
    return f"{file}, line {line}"


def is_user_file(filename: str) -> bool:
    """Not Python's import machinery, the standard library, an installed package or passhat itself."""
    if filename.startswith("<"):
        return False
    path = Path(filename).resolve()
    passhat_root = Path(__file__).resolve().parent
    if passhat_root in path.parents:
        return False
    return not any(part in ("site-packages", "dist-packages") for part in path.parts) and not _in_stdlib(path)


def _in_stdlib(path: Path) -> bool:
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    return stdlib in path.parents
