"""Finding a run's suite again, from any folder and from a run folder copied elsewhere.

``cases from-failure`` and ``regrade`` need the suite a run measured. The manifest records where it
was in three ways, because a run folder travels: a CI artifact downloaded into ``/tmp`` of another
machine, with the suite in a checkout at another path.

- ``folder``: the absolute path it was read from (right on the machine that ran it);
- ``folder_from_run``: the same folder relative to the run folder (right when both moved together,
  e.g. a checkout with its ``runs/`` copied whole);
- ``folder_in_project``: relative to the project root, the nearest folder above the suite holding
  ``.git`` or ``pyproject.toml`` (right from anywhere in another checkout of the same project: it is
  resolved against the project root above the current folder);
- ``builtin``: a built-in suite is found by name, wherever passhat is installed.

The folder the run read (``folder``) is used as it is now, whatever was edited since (that is what
``regrade`` is for). A folder at a guessed place (run- or project-relative) is used only if it holds
the run's suite: its content hash equals the recorded one, or at least one case is unchanged; some other
suite there is refused, never silently graded against. ``--suite PATH`` names the folder outright.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from passhat.cases import Suite, load_suite
from passhat.cases.suite import BUILTIN_ROOT
from passhat.domain import BUILTIN_DOMAINS
from passhat.errors import RunError
from passhat.models import Manifest, SuiteInfo

PROJECT_MARKERS = (".git", "pyproject.toml")


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` or ``pyproject.toml`` (None: none)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return None


def suite_location(folder: Path, run_folder: Path) -> dict[str, Any]:
    """The manifest's record of where the suite is (see the module docstring)."""
    where = Path(folder).resolve()
    if where == BUILTIN_ROOT or BUILTIN_ROOT in where.parents:
        return {"folder": str(where), "builtin": True}
    record: dict[str, Any] = {"folder": str(where),
                              "folder_from_run": os.path.relpath(where, Path(run_folder).resolve())}
    root = project_root(where)
    if root is not None:
        record["folder_in_project"] = where.relative_to(root).as_posix()
    return record


def _candidates(info: SuiteInfo, run_folder: Path) -> list[Path]:
    places: list[Path] = []
    if info.folder:
        places.append(Path(info.folder))
    if info.folder_from_run:
        places.append(Path(run_folder).resolve() / info.folder_from_run)
    if info.folder_in_project:
        root = project_root(Path.cwd())
        if root is not None:
            places.append(root / info.folder_in_project)
    unique: list[Path] = []
    for place in places:
        resolved = place.resolve()
        if resolved not in unique:
            unique.append(resolved)
    return unique


def is_the_runs_suite(suite: Suite, info: SuiteInfo) -> bool:
    """Same content hash, or at least one case with an unchanged case hash."""
    if suite.content_hash() == info.hash:
        return True
    return any(info.cases.get(cid) == h for cid, h in suite.case_hashes().items())


def locate_suite(manifest: Manifest, run_folder: Path, given: str | None = None) -> Suite:
    """The suite of the run in ``run_folder``: ``given`` (``--suite``) as is, else the first recorded place
    holding it (a :class:`RunError` naming every place tried otherwise)."""
    if given is not None:
        return load_suite(given)
    info = manifest.suite
    name = info.name
    if info.builtin:
        return load_suite(name)
    tried: list[str] = []
    recorded = Path(info.folder).resolve() if info.folder else None
    for place in _candidates(info, run_folder):
        if not place.is_dir():
            tried.append(f"{place} (not there)")
            continue
        suite = load_suite(str(place))
        # the folder the run read is the user's suite even with every case edited since (what regrade is
        # for); a guessed place must prove it holds the run's suite
        if (place == recorded and suite.name == name) or is_the_runs_suite(suite, info):
            return suite
        tried.append(f"{place} (another suite: no case of the run is unchanged there)")
    if name in BUILTIN_DOMAINS and not info.folder_from_run:  # recorded before `builtin` was
        return load_suite(name)
    looked = "; ".join(tried) or "no place is recorded in its manifest"
    raise RunError(f"{run_folder}: cannot find the suite {name!r} this run measured (suite hash "
                   f"{info.hash[:12]}): looked in {looked}; pass --suite PATH (the folder of its case files)")


__all__ = ["is_the_runs_suite", "locate_suite", "project_root", "suite_location"]
