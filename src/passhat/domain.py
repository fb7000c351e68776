"""A domain: a sandboxed business system (schema, fixtures, policy, tools) and its own graders.

A domain is plain data plus declared tools. It never touches anything real: payment adapters record
intent, email goes to a sink table, and all state lives in the trial's world (an in-memory SQLite image by
default; a PostgreSQL database, a SQLite file, a workspace folder: docs/worlds.md). Checks its cases
need beyond the built-in assertions are graders declared with ``@grader`` and registered here, so a
suite stays self-contained and its hash covers them.

The hash covers what decides a verdict (docs/design/014): each fixture's built state (whatever the
fixture read to build it), the schema, the policy, the source of the domain's module and of the local
modules it imports, and the data files it declares with ``files=``.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from passhat.errors import DomainError
from passhat.imports import import_file, import_module
from passhat.sources import CodeRoot, defining_file, local_files
from passhat.tools import Tool
from passhat.workspace.bounds import WorkspaceBounds
from passhat.world import Diff, FixtureImage, World
from passhat.world.fixture_file import read_fixture
from passhat.world.image import insert_rows
from passhat.world.kind import StateReader, WorldCopy, WorldImage, WorldSource
from passhat.world.parts import open_parts, open_parts_async, rebuild_parts
from passhat.world.sqlite_kind import SqliteImage
from passhat.worlds.workspace_source import GitTree, Overlay, WorkspaceSource, copy_folder

if TYPE_CHECKING:
    from passhat.upstream import Upstream
    from passhat.workspace.tree import FileDiff, WorkspaceCopy, WorkspaceImage

if TYPE_CHECKING:  # passhat.graders imports passhat.cases, which imports this module
    from passhat.graders.declare import CustomGrader

FixtureSource = Path | Callable[[sqlite3.Connection], None] | WorldSource
"""A database fixture: YAML or a loader function (an in-memory SQLite image), or a source of another kind
(``Postgres(...)``, ``SqliteFile(...)``: docs/worlds.md)."""


class Domain:
    """Schema, named fixtures, policy text and tools of one sandboxed system."""

    def __init__(
        self,
        name: str,
        *,
        schema: str | Path = "",
        fixtures: dict[str, FixtureSource] | None = None,
        policy: str | Path,
        tools: Iterable[Tool] = (),
        graders: Iterable[CustomGrader] = (),
        start: datetime | None = None,
        files: Iterable[str | Path] = (),
        workspace: WorkspaceSource | dict[str, WorkspaceSource] | None = None,
        command_env: dict[str, str] | None = None,
        preflight: str | None = None,
        mcp: Upstream | Iterable[Upstream] | None = None,
        workspace_bounds: WorkspaceBounds | None = None,
        user_tools: Iterable[Tool] = (),
    ) -> None:
        self.name = name
        self.schema_sql = schema.read_text("utf-8") if isinstance(schema, Path) else schema
        self.fixtures = dict(fixtures or {})
        self.workspaces: dict[str, WorkspaceSource] = (
            {} if workspace is None else dict(workspace) if isinstance(workspace, dict) else {"default": workspace})
        """Workspace fixtures by name: each trial works on a private copy of the one its case names
        (docs/workspace.md). A fixture name may have a database fixture, a workspace, or both."""
        self.command_env = dict(command_env or {})
        """Environment variables for every command run in a workspace (the agent's and the checks'), on top
        of the sandbox's scrubbed environment, e.g. ``{"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}`` so the
        project's tests do not load every pytest plugin installed beside passhat."""
        self.workspace_bounds = workspace_bounds or WorkspaceBounds()
        """Disk, process and memory bounds of each trial's copy, for every command run in it (docs/workspace.md)."""
        self.preflight = preflight
        """A command run once per run, before any trial, in a copy of a workspace (e.g. ``python -c "import
        pytest"``): if it fails the run stops as bad input instead of grading every trial a failure of the
        agent for what the environment lacks (``runner/preflight.py``)."""
        bad = [k for k, v in self.command_env.items() if not (isinstance(k, str) and k and "=" not in k and isinstance(v, str))]
        if bad:
            raise DomainError(f"domain {name!r}: command_env: {bad[0]!r} is not NAME=text (names and values are strings)")
        if not self.fixtures and not self.workspaces:
            raise DomainError(f"domain {name!r}: give `fixtures` (database states) and/or `workspace` (a directory)")
        for fixture, source in self.workspaces.items():
            folders = ([source.repo] if isinstance(source, GitTree) else [source.base, source.over]
                       if isinstance(source, Overlay) else [Path(source)])
            for folder in folders:
                if not Path(folder).is_dir():
                    raise DomainError(f"domain {name!r}: workspace {fixture!r}: {folder} is not a directory")
        self.policy = policy.read_text("utf-8") if isinstance(policy, Path) else policy
        self._native_tools = {t.name: t for t in tools}
        self.user_tools: dict[str, Tool] = {t.name: t for t in user_tools}
        """Tools the user calls, not the agent (dual control: the user's own phone in τ²-bench telecom). They
        act on the same world through the same boundary, and are recorded as the user's calls (``by: user``)."""
        from passhat.upstream.config import upstream_list  # no SDK import: only when a server starts

        self.upstreams = upstream_list(mcp, name)
        """MCP servers whose tools the agent calls too, started per trial on its world (docs/your-own-stack.md)."""
        self._tools: dict[str, Tool] | None = None if self.upstreams else dict(self._native_tools)
        self._tools_lock = threading.Lock()
        self.graders = _graders(name, graders)
        self.start = start or datetime(2026, 1, 1, 9, 0, 0)
        self.files = [Path(f) for f in files]
        """Data files the tools read while a trial runs: the hash covers their bytes. Files a fixture
        function reads need no declaring (its built state is hashed)."""
        for f in self.files:
            if not f.is_file():
                raise DomainError(f"domain {name!r}: files: {f} does not exist (declare the data files the tools read)")
        self.code_root: CodeRoot | None = None
        """The module the domain was loaded from (set by :func:`load_domain`); its local imports are hashed."""
        self._images: dict[str, FixtureImage] = {}
        self._worlds: dict[str, WorldImage[Any]] = {}  # fixtures of other kinds (Postgres, SqliteFile)
        self._worlds_lock = threading.Lock()
        self._parts: dict[str, list[WorldImage[Any]]] = {}  # every fixture's images, as world_images built them
        self._trees: dict[str, WorkspaceImage] = {}
        self._trees_lock = threading.Lock()  # trials copy workspaces in threads: an image is built once
        self._schema_hash: str | None = None
        self._code_hash: str | None = None

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools by name: the native ``@tool`` functions and the upstream servers' tools, which are listed
        on first use (a server is started once for that, on a scratch world; passhat/upstream/session.py)."""
        if self._tools is None:
            with self._tools_lock:
                if self._tools is None:
                    from passhat.upstream.listing import listed_tools

                    self._tools = {**self._native_tools, **listed_tools(self)}
        return self._tools

    def tool_list(self) -> list[Tool]:
        return list(self.tools.values())

    @property
    def fixture_names(self) -> list[str]:
        """Every fixture a case may name: database fixtures and workspaces."""
        return sorted({*self.fixtures, *self.workspaces})

    def image(self, fixture: str) -> FixtureImage:
        """The fixture's in-memory SQLite image, built on first use and cached for the rest of the run (a
        fixture that is only a workspace has the schema's empty database). Fixtures of another kind
        (``Postgres(...)``, ``SqliteFile(...)``) have none: use :meth:`world_images`."""
        if fixture not in self._images:
            if fixture not in self.fixtures and fixture not in self.workspaces:
                raise DomainError(f"domain {self.name!r} has no fixture {fixture!r}; fixtures: {self.fixture_names}")
            source = self.fixtures.get(fixture, _empty)
            if isinstance(source, WorldSource):
                raise DomainError(f"domain {self.name!r}: fixture {fixture!r} is {source.describe()}, "
                                  "not an in-memory SQLite image")
            loader, start = _loader(source, self.start)
            self._images[fixture] = FixtureImage.build(fixture, self.schema_sql, loader, start)
        return self._images[fixture]

    def world_images(self, fixture: str) -> list[WorldImage[Any]]:
        """Every part of the fixture's world, each built once per run: its database (the in-memory SQLite
        image unless the fixture names another kind) and, if it has one, its workspace (docs/design/019)."""
        parts = self._parts.get(fixture)
        if parts is not None:
            return parts
        source = self.fixtures.get(fixture)
        if isinstance(source, WorldSource):
            with self._worlds_lock:
                built = self._worlds.get(fixture)
                if built is None:
                    built = source.build(fixture, self.schema_sql, self.start)
                    self._worlds[fixture] = built
            parts = [built]
        else:
            parts = [SqliteImage(self.image(fixture))]
        tree = self.workspace_image(fixture)
        if tree is not None:
            from passhat.worlds.workspace import WorkspaceWorld  # lazily: only workspace domains need it

            parts.append(WorkspaceWorld(tree, lambda: self.copy_workspace(fixture)))
        self._parts[fixture] = parts
        return parts

    def workspace_image(self, fixture: str) -> WorkspaceImage | None:
        """The fixture's workspace, captured once per run (``None`` when the fixture has none)."""
        if fixture not in self.workspaces:
            return None
        with self._trees_lock:
            if fixture not in self._trees:
                from passhat.workspace.tree import WorkspaceImage  # lazily: only workspace domains need it

                source = self.workspaces[fixture]
                if isinstance(source, GitTree):
                    tree = WorkspaceImage.from_git(source.repo, source.commit)
                elif isinstance(source, Overlay):
                    tree = WorkspaceImage.from_dir(source.base, overlays=[source.over])
                else:
                    tree = WorkspaceImage.from_dir(Path(source))
                self._trees[fixture] = tree
            return self._trees[fixture]

    def close_workspaces(self) -> None:
        """Remove the master copies of the workspace images built so far (a later trial builds them again),
        and release the images of other kinds (template databases). Finalizers and exit handlers do it when
        the process exits normally; a process killed instead (a Ray worker at the end of a run) calls this
        first, or every run leaves a copy of every fixture tree behind."""
        with self._trees_lock:
            trees, self._trees = self._trees, {}
        with self._worlds_lock:
            worlds, self._worlds = self._worlds, {}
            self._parts = {}
        for tree in trees.values():
            tree.close()
        for image in worlds.values():
            image.close()

    def restore(self, fixture: str, seed: int) -> World:
        """A trial's world in the fixture's initial state, every part opened here (synchronously: reference
        runs, promotion). :meth:`World.close` discards it. The runner uses :meth:`open_world`."""
        images = self.world_images(fixture)
        return self._world(images, open_parts(images), seed)

    async def open_world(self, fixture: str, seed: int) -> World:
        """:meth:`restore` for async callers: parts whose kind blocks (file copies, a database to clone) are
        opened in a thread, so other trials' agents keep running; the rest on the event loop's thread."""
        images = self.world_images(fixture)
        return self._world(images, await open_parts_async(images), seed)

    def rebuild_world(self, fixture: str, diff: Diff, files: FileDiff | None, seed: int) -> World:
        """A trial's final state again, from its recorded diffs (re-grading): each part rebuilt by its kind.
        Raises ``ReplayError`` or ``WorkspaceError`` when a diff no longer fits the fixture."""
        images = self.world_images(fixture)
        if files and not any(i.facet == "files" for i in images):
            from passhat.workspace.errors import WorkspaceError

            raise WorkspaceError(f"the record has file changes but fixture {fixture!r} no longer has a workspace")
        return self._world(images, rebuild_parts(images, lambda i: diff if i.facet == "rows" else files), seed)

    def _world(self, images: list[WorldImage[Any]], parts: list[WorldCopy[Any]], seed: int) -> World:
        start = next((i.start for i in images if i.start is not None), self.start)
        world = World(parts, seed, start, self.command_env)
        world.workspace_bounds = self.workspace_bounds
        return world

    @contextmanager
    def reading(self, fixture: str) -> Iterator[StateReader | None]:
        """The fixture's database as it is before any trial, read-only (checking cases): ``None`` without one."""
        database = next((i for i in self.world_images(fixture) if i.facet == "rows"), None)
        if database is None:
            yield None
            return
        with database.reading() as reader:
            yield reader

    def copy_workspace(self, fixture: str) -> WorkspaceCopy | None:
        """A fresh private copy of the fixture's workspace (``None`` without one). It blocks (file copies):
        async callers run it in a thread. Small trees go to ``/dev/shm`` when there is one (a memory file
        system: several times faster to create files in); ``PASSHAT_WORKSPACE_DIR`` chooses the folder."""
        tree = self.workspace_image(fixture)
        return tree.restore(parent=copy_folder(tree.size_bytes)) if tree is not None else None

    def tool_schema_hash(self) -> str:
        """Hash of the tool specs an agent sees (names, kinds, descriptions, parameter schemas), for traces."""
        if self._schema_hash is None:
            specs = [self.tools[name].spec() for name in sorted(self.tools)]
            self._schema_hash = hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:16]
        return self._schema_hash

    def fixture_hash(self, fixture: str) -> str:
        """Hash of the fixture's built state (rows, schema objects, start time), however it was built, and of
        its workspace's files (paths, contents, executable bits)."""
        images = self.world_images(fixture)
        rows = next(i.content_hash() for i in images if i.facet == "rows")
        files = next((i.content_hash() for i in images if i.facet == "files"), None)
        return rows if files is None else hashlib.sha256(f"{rows} workspace {files}".encode()).hexdigest()

    def source_files(self) -> dict[str, Path]:
        """The code and data files the hash covers, by a label that does not depend on where they are."""
        roots = [self.code_root] if self.code_root is not None else []
        funcs = [t.func for t in self.tools.values()] + [g.func for g in self.graders.values()]
        funcs += [f for f in self.fixtures.values()
                  if callable(f) and not isinstance(f, Path | WorldSource)]
        for file in dict.fromkeys(filter(None, map(defining_file, funcs))):
            if not any(file.is_relative_to(r.folder) for r in roots):  # defined outside the loaded module's folder
                roots.append(CodeRoot.of_file(file))
        out: dict[str, Path] = {}
        for root in roots:
            for path in local_files(root):
                out.setdefault(path.relative_to(root.folder).as_posix(), path)
        folder = self.code_root.folder if self.code_root is not None else None
        for f in self.files:
            resolved = f.resolve()
            label = resolved.relative_to(folder).as_posix() if folder and resolved.is_relative_to(folder) else f.name
            out.setdefault(f"files/{label}", resolved)
        return dict(sorted(out.items()))

    def code_hash(self) -> str:
        """Hash of :meth:`source_files`' contents, taken once: what the domain was loaded with."""
        if self._code_hash is None:
            h = hashlib.sha256()
            for label, path in self.source_files().items():
                try:
                    data = path.read_bytes()
                except OSError as exc:
                    raise DomainError(f"domain {self.name!r}: cannot read {path} to hash it: {exc}") from exc
                h.update(f"{label} {hashlib.sha256(data).hexdigest()}\n".encode())
            self._code_hash = h.hexdigest()
        return self._code_hash

    def content_hash(self) -> str:
        """Hash of everything that decides the domain's verdicts: schema, policy, each fixture's built state,
        tool and grader source, and the code and data files of :meth:`source_files` (docs/design/014)."""
        h = hashlib.sha256()
        h.update(self.schema_sql.encode())
        h.update(self.policy.encode())
        for name in self.fixture_names:
            h.update(f"fixture {name} {self.fixture_hash(name)}\n".encode())
        for name in sorted(self.tools):
            t = self.tools[name]
            h.update(f"{name}:{t.kind}:{t.external}{':idempotent' if t.idempotent else ''}".encode())
            h.update(_source(t.func).encode())
        for name in sorted(self.user_tools):  # domains without user tools hash as before
            t = self.user_tools[name]
            h.update(f"user tool {name}:{t.kind}".encode())
            h.update(_source(t.func).encode())
        for name in sorted(self.graders):
            g = self.graders[name]
            h.update(f"grader {name}:{g.kind}".encode())
            h.update(_source(g.func).encode())
        if self.command_env:  # domains without one hash as before
            h.update(f"command_env {json.dumps(self.command_env, sort_keys=True)}\n".encode())
        h.update(f"code {self.code_hash()}\n".encode())
        if self.upstreams:  # the servers as declared and the tools they listed (domains without one hash as before)
            from passhat.upstream.listing import upstream_hash

            h.update(upstream_hash(self).encode())
        return h.hexdigest()


def _graders(domain: str, graders: Iterable[Any]) -> dict[str, CustomGrader]:
    """Graders by name; each declared with ``@grader``, no name twice."""
    from passhat.graders.declare import CustomGrader  # here, not at import: see TYPE_CHECKING above

    out: dict[str, CustomGrader] = {}
    for g in graders:
        if not isinstance(g, CustomGrader):
            what = getattr(g, "__name__", repr(g))
            raise DomainError(f"domain {domain!r}: graders: {what} is not a declared grader; "
                              "decorate it with @grader(kind=...) from passhat.graders")
        if g.name in out:
            raise DomainError(f"domain {domain!r}: two graders are named {g.name!r}")
        out[g.name] = g
    return out


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return repr(obj)


def _empty(conn: sqlite3.Connection) -> None:
    """The database fixture of a fixture that is only a workspace: the schema, no rows."""


def _loader(source: FixtureSource, default_start: datetime) -> tuple[Callable[[sqlite3.Connection], None], datetime]:
    if callable(source) and not isinstance(source, Path):
        return source, default_start
    path = Path(source)  # type: ignore[arg-type]
    tables, start = read_fixture(path, default_start)
    return (lambda conn: insert_rows(conn, tables, str(path))), start


BUILTIN_DOMAINS = ("reimbursement", "refunds", "bugfix")


@dataclass(frozen=True)
class DomainRef:
    """A domain reference resolved: two spellings of one domain (``./domain.py``, ``domain.py``) have one ``key``."""

    kind: Literal["builtin", "file", "module"]
    target: str
    """The built-in's name, the resolved ``.py`` file, or the module name."""
    attr: str
    shown: str = field(default="", compare=False)
    """The file as the reference spells it (for messages)."""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.target}:{self.attr}"


def resolve_domain_ref(ref: str, base: Path | None = None) -> DomainRef:
    """What ``ref`` names, without importing it: a built-in, a ``.py`` file (resolved), or ``module:attr``."""
    if ref in BUILTIN_DOMAINS:
        return DomainRef("builtin", ref, "domain")
    target, _, attr = ref.partition(":")
    path = Path(target) if base is None else (base / target)
    if target.endswith(".py") or path.is_dir():
        file = path / "domain.py" if path.is_dir() else path
        if not file.exists():
            raise DomainError(f"domain {ref!r}: file {file} does not exist")
        return DomainRef("file", str(file.resolve()), attr or "domain", str(file))
    return DomainRef("module", target, attr or "domain")


def load_domain(ref: str, base: Path | None = None) -> Domain:
    """Resolve a domain reference: a built-in name, ``package.module:attr``, or a path to a ``.py`` file.

    A module or file must define ``domain`` (a :class:`Domain`) unless ``:attr`` names another attribute.
    A file is executed on every call (a reloaded suite sees its edits); callers that load many cases
    load each :attr:`DomainRef.key` once.
    """
    resolved = resolve_domain_ref(ref, base)
    if resolved.kind == "builtin":
        module = importlib.import_module(f"passhat.domains.{ref}")
    elif resolved.kind == "file":
        try:
            module = import_file(Path(resolved.target), "domain")
        except ImportError as exc:
            raise DomainError(f"domain {ref!r}: cannot import {resolved.shown}: {exc}") from exc
    else:
        try:
            module = import_module(resolved.target)
        except ImportError as exc:
            raise DomainError(
                f"unknown domain {ref!r}: not a built-in ({', '.join(BUILTIN_DOMAINS)}), "
                f"an importable module:attr, or a .py file ({exc})"
            ) from exc
    domain = _domain_attr(module, resolved.attr, ref)
    domain.code_root = CodeRoot.of_module(module)
    domain.code_hash()  # taken now: the files as they were when the domain was loaded
    return domain


def _domain_attr(module: Any, attr: str, ref: str) -> Domain:
    value = getattr(module, attr, None)
    where = getattr(module, "__file__", None) or module.__name__
    if value is None:
        raise DomainError(f"domain {ref!r}: {where} defines no {attr!r} (a passhat Domain)")
    if not isinstance(value, Domain):
        raise DomainError(f"domain {ref!r}: {attr!r} in {where} is a {type(value).__name__}, not a passhat Domain")
    return value
