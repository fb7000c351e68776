"""``passhat init FOLDER --from-mcp "stdio:…" [--db URL|PATH]``: a starter suite around a team's own MCP
server and database.

It starts the server (on the database given, which it only lists tools against), reads its tools and the
database's schema and rows, and writes: ``domain.py`` with the upstream (the database's location in the
command or environment replaced by the trial's placeholder), ``schema.sql`` and ``fixtures/default.yaml``
dumped from the database, one case per write tool and a lost-response variant of each, a starter agent
and a README saying what to edit. Everything is gathered before anything is written.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.errors import DomainError, PasshatError
from passhat.scaffold.database import Dump, dump_database
from passhat.upstream.config import Upstream
from passhat.upstream.session import list_tools
from passhat.upstream.tools import UpstreamTool
from passhat.validation import dump_yaml


@dataclass
class _ListingWorld:
    """What the server is started on to list its tools: the database as given."""

    values: dict[str, str] = field(default_factory=dict)

    def reach(self) -> dict[str, str]:
        return self.values


def create_from_mcp(folder: Path, target: str, *, db: str | None = None, env: dict[str, str] | None = None,
                    name: str | None = None, force: bool = False) -> list[Path]:
    """Write the starter suite into ``folder``; returns the files written."""
    env = dict(env or {})
    try:  # the user typed --from-mcp, not the Upstream(...) a domain file would hold
        upstream = Upstream(target, env=env, name=name or "")
    except DomainError as exc:
        raise PasshatError(str(exc).replace(f"mcp=Upstream({target!r})", f"--from-mcp {target!r}", 1)) from None
    dump = dump_database(db) if db is not None else None
    placeholder = dump.placeholder if dump is not None else None
    with tempfile.TemporaryDirectory(prefix="passhat-init-") as scratch:  # {workspace}, without a database
        world = _ListingWorld({placeholder: db} if placeholder and db else {"workspace": scratch})
        tools = list_tools([upstream], domain=folder.name, native=[], world=world, cwd=None)
    declared = _declaration(target, env, db, placeholder)
    files = _files(folder.name, upstream, declared, tools, dump)
    targets = {folder / rel: text for rel, text in files.items()}
    clashes = [t for t in targets if t.exists()]
    if clashes and not force:
        raise PasshatError(f"{folder} already has {', '.join(str(c.relative_to(folder)) for c in clashes[:5])}; "
                           "choose an empty folder or pass --force")
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    if dump is None:
        (folder / "workspace").mkdir(exist_ok=True)
    return list(targets)


def _declaration(target: str, env: dict[str, str], db: str | None, placeholder: str | None) -> tuple[str, dict[str, str], str]:
    """The target and environment with the database's location replaced by its placeholder, and a note of
    where it went (the server must be told where each trial's private database is)."""
    if db is None or placeholder is None:
        return target, env, ""
    mark = "{" + placeholder + "}"

    def literal(text: str) -> str:  # braces of the user's own text are not placeholders
        return text.replace("{", "{{").replace("}", "}}")

    found = db in target or any(db in v for v in env.values())
    target = literal(target).replace(literal(db), mark)
    env = {k: literal(v).replace(literal(db), mark) for k, v in env.items()}
    note = ""
    if not found:
        variable = "DATABASE_URL" if placeholder == "database_url" else "SQLITE_PATH"
        env[variable] = mark
        note = (f"The command did not name {db}, so the trial's database is passed as {variable}; "
                "change this if your server reads it elsewhere.")
    return target, env, note


def _files(name: str, upstream: Upstream, declared: tuple[str, dict[str, str], str], tools: dict[str, UpstreamTool],
           dump: Dump | None) -> dict[str, str]:
    target, env, note = declared
    writes = sorted(t for t, tool in tools.items() if tool.kind == "write")
    if not writes:
        raise PasshatError(f"upstream server {upstream.name!r} lists no write tool (every tool has readOnlyHint), "
                           "so there is nothing to build cases around; write the cases by hand")
    out = {"domain.py": _domain(name, upstream.name, target, env, dump), "policy.md": POLICY,
           "agent.py": AGENT, "README.md": _readme(name, upstream.name, writes, note, dump)}
    if dump is not None:
        out["schema.sql"] = dump.schema
        out["fixtures/default.yaml"] = dump_yaml({"tables": dump.rows}, sort_keys=False, allow_unicode=True)
    scope = ({"unchanged_except": {"tables": sorted(dump.rows) or [], "description": "starter: list only the rows "
                                   "this task may change (rows: [{table: ..., where: {...}}])"}}
             if dump is not None else
             {"unchanged_except": {"files": ["**"], "description": "starter: list only the files this task may change"}})
    for tool in writes:
        args = example_arguments(tools[tool].input_schema, dump)
        request = f"Call {tool} with {json.dumps(args)}."
        slug = re.sub(r"[^a-z0-9]+", "-", tool.lower()).strip("-")
        base = {"id": slug, "domain": "../domain.py",
                "description": f"Starter for {tool}: {_first_sentence(tools[tool].description)} Make the instruction "
                               "a real request and the assertions what it must change.",
                "instruction": request, "required_tools": [tool], "assertions": [scope],
                "tags": {"tool": tool, "scenario": "happy-path"}}
        lost = {**base, "id": f"{slug}-lost-response",
                "description": f"{tool} commits but its answer is lost: a careful agent looks before calling it again.",
                "faults": [{"tool": tool, "kind": "drop_response", "on_call": 1, "seconds": 30}],
                "tags": {"tool": tool, "scenario": "fault", "fault": "drop_response"}}
        lost.pop("required_tools")
        for case in (base, lost):
            out[f"cases/{case['id']}.yaml"] = dump_yaml(case, sort_keys=False, allow_unicode=True, width=110)
    return out


def example_arguments(schema: dict[str, Any], dump: Dump | None) -> dict[str, Any]:
    """Arguments that fit ``schema``'s required properties: its own examples, defaults or enums, else a value
    of the type (a query parameter gets a statement that changes nothing)."""
    props = schema.get("properties", {})
    return {key: _example(key, props.get(key, {}), dump) for key in schema.get("required", [])}


def _example(key: str, prop: dict[str, Any], dump: Dump | None) -> Any:
    for word in ("examples", "default", "enum", "const"):
        if word in prop:
            value = prop[word]
            return value[0] if word in ("examples", "enum") and isinstance(value, list) and value else value
    kind = prop.get("type", "string")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "string" and key.lower() in ("query", "sql", "statement") and dump is not None and dump.rows:
        table = sorted(dump.rows)[0]
        return f"UPDATE {table} SET {dump.columns[table][0]} = {dump.columns[table][0]} WHERE 1 = 0"
    return {"string": "example", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(kind, "example")


def _first_sentence(text: str) -> str:
    first = text.strip().split("\n")[0]
    return first if first.endswith(".") else first + "."


def _domain(name: str, server: str, target: str, env: dict[str, str], dump: Dump | None) -> str:
    world = (f"    schema=HERE / \"schema.sql\",\n    fixtures={{\"default\": {dump.fixture_source}}},\n" if dump is not None
             else "    workspace=HERE / \"workspace\",\n")
    imports = f"{dump.fixture_import}\n" if dump is not None and dump.fixture_import else ""
    return (f'"""{name}: the tools of the {server} MCP server, on a private copy of the world per trial.\n\n'
            f'Written by `passhat init --from-mcp`; see README.md for what to edit.\n"""\n\n'
            f"from pathlib import Path\n\nfrom passhat.domain import Domain\nfrom passhat.upstream import Upstream\n"
            f"{imports}\nHERE = Path(__file__).resolve().parent\n\n"
            f"domain = Domain(\n    {name!r},\n{world}    policy=HERE / \"policy.md\",\n    tools=[],\n"
            f"    mcp=Upstream({target!r}, env={env!r}, name={server!r}),\n)\n")


def _readme(name: str, server: str, writes: list[str], note: str, dump: Dump | None) -> str:
    world = ("`schema.sql` and `fixtures/default.yaml` were dumped from the database you gave; every trial gets "
             "a private copy of it." if dump is not None else "`workspace/` is the folder each trial gets a private "
             "copy of; put the files your server works on there.")
    return (f"# {name}\n\nA starter suite for the `{server}` MCP server, written by `passhat init --from-mcp`.\n\n"
            f"{world} {note}\n\n"
            f"There is one case per write tool ({', '.join(writes)}) and a lost-response variant of each (the "
            "write commits, its answer never comes). Make each instruction a real request and narrow each "
            "`unchanged_except` to what the task may change, then:\n\n"
            "    passhat cases lint cases\n    passhat run cases --agent agent.py:agent --trials 4\n\n"
            "`agent.py` is a scripted stand-in: replace it with your agent. See docs/your-own-stack.md.\n")


POLICY = """Act only on what the user asked. A write whose answer did not come back may have happened: look
before you call it again.
"""

AGENT = '''"""A starter agent: it makes the call the instruction spells out, and after a lost answer it does not
call again blindly. Replace it with your own agent:
    passhat run cases --agent agent.py:agent --trials 4
"""

import json


async def agent(episode):
    tool = episode.tags["tool"]
    arguments = json.loads(episode.instruction.split(" with ", 1)[1].rstrip("."))
    result = await episode.call(tool, arguments)
    if result.withheld:
        return f"I called {tool}; its answer was lost, so I did not call it again. Please check the result."
    return f"{tool}: {result.text()}"
'''
