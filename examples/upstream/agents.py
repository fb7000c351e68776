"""Scripted agents for the third-party server suites in this folder: ``careful`` and ``hasty``.

    passhat run examples/upstream/filesystem/cases --agent examples/upstream/agents.py:careful

Rule-based and deterministic (no model), like passhat's reference agents: they read the instruction and
tool results, and pick their steps by the case's ``task`` tag. ``careful`` does what the policy says:
changes only what was asked, looks before repeating a write whose answer was lost. ``hasty`` does the
job in the obvious way and gets exactly that wrong: it repeats a write after a lost answer, copies where
it should move, and "tidies" what it only had to read. The suites' cases expect careful to pass and
hasty to fail the cases built for those mistakes.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from passhat.episode import Episode, ToolResult


def lost(result: ToolResult) -> bool:
    """The call's answer never came: the write may or may not have happened."""
    return result.withheld or "timeout" in (result.error or "").lower()


def quoted(text: str) -> str:
    m = re.search(r'"([^"]+)"', text)
    if m is None:
        raise ValueError(f"no quoted item in {text!r}")
    return m.group(1)


def paths(text: str) -> list[str]:
    return re.findall(r"[\w.-]+(?:/[\w.-]+)+\.\w+", text)


# --- @modelcontextprotocol/server-filesystem -------------------------------------------------------------


async def _read(episode: Episode, path: str) -> str:
    r = await episode.call("read_text_file", {"path": path})
    if not r.ok:
        raise RuntimeError(f"cannot read {path}: {r.error}")
    return r.content["content"] if isinstance(r.content, dict) else str(r.content)


async def _append(episode: Episode, path: str, item: str) -> ToolResult:
    last = [line for line in (await _read(episode, path)).splitlines() if line.strip()][-1]
    return await episode.call("edit_file", {"path": path, "edits": [{"oldText": last, "newText": f"{last}\n- {item}"}]})


async def files(episode: Episode, style: str) -> str:
    task, text = episode.tags["task"], episode.instruction
    if task == "add-todo":
        path, item = paths(text)[0], quoted(text)
        if f"- {item}" in (await _read(episode, path)).splitlines():
            return f"{item} is already on your list."
        r = await _append(episode, path, item)
        if lost(r):
            if style == "careful" and f"- {item}" in (await _read(episode, path)).splitlines():
                return f"Added {item} (the first answer was lost, but the list has it)."
            r = await _append(episode, path, item)
        return f"Added {item} to {path}." if r.ok else f"I could not edit {path}: {r.error}"
    if task == "rename-draft":
        source, target = paths(text)
        if style == "careful":
            r = await episode.call("move_file", {"source": source, "destination": target})
            return f"Renamed {source} to {target}." if r.ok else f"I could not rename it: {r.error}"
        content = await _read(episode, source)  # hasty: a copy, which leaves the draft behind
        r = await episode.call("write_file", {"path": target, "content": content})
        return f"{target} is ready." if r.ok else f"I could not write {target}: {r.error}"
    if task == "read-timezone":
        path = paths(text)[0]
        settings = json.loads(await _read(episode, path))
        if style == "hasty":  # "while I'm here": reformats a file it only had to read
            await episode.call("write_file", {"path": path, "content": json.dumps(settings, indent=2) + "\n"})
        return f"The timezone is {settings['timezone']}."
    raise ValueError(f"no playbook for task {task!r}")


# --- SQL servers: mcp-server-sqlite (read_query / write_query) and mcp-alchemy (execute_query) -------------


def rows(result: ToolResult) -> list[dict[str, Any]]:
    """Rows from a query tool's answer: JSON, the Python literal mcp-server-sqlite prints, or mcp-alchemy's
    "1. row / column: value" blocks."""
    if not result.ok:
        raise RuntimeError(f"query failed: {result.error}")
    content = result.content
    if isinstance(content, dict) and "result" in content:
        content = content["result"]
    if isinstance(content, list):
        return content
    text = str(content)
    if re.match(r"\s*\d+\. row", text):
        out = []
        for block in re.split(r"\n\s*\n", text):
            lines = [line for line in block.splitlines() if ": " in line and not line.startswith("Result:")]
            if lines:
                out.append({k: _number(v) for k, v in (line.split(": ", 1) for line in lines)})
        return out
    try:
        return list(json.loads(text))
    except ValueError:
        return list(ast.literal_eval(text))


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Sql:
    """One SQL surface over the two servers' tools."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self.split = "write_query" in {t.name for t in episode.tools}  # mcp-server-sqlite reads and writes apart

    async def read(self, query: str) -> list[dict[str, Any]]:
        return rows(await self.episode.call("read_query" if self.split else "execute_query", {"query": query}))

    async def write(self, query: str) -> ToolResult:
        return await self.episode.call("write_query" if self.split else "execute_query", {"query": query})


async def shop(episode: Episode, style: str) -> str:
    task, text, sql = episode.tags["task"], episode.instruction, Sql(episode)
    if task == "ship-order":
        order = int(re.search(r"\b(\d{4})\b", text).group(1))  # type: ignore[union-attr]
        where = f"id = {order}" if style == "careful" else "customer = 'Dana' AND status = 'pending'"  # hasty: all of hers
        r = await sql.write(f"UPDATE orders SET status = 'shipped' WHERE {where}")
        return f"Order {order} is marked shipped." if r.ok else f"I could not update it: {r.error}"
    if task == "refund":
        order = int(re.search(r"\b(\d{4})\b", text).group(1))  # type: ignore[union-attr]
        [due] = await sql.read(f"SELECT o.quantity * p.price AS amount FROM orders o JOIN products p "
                               f"ON p.id = o.product_id WHERE o.id = {order}")
        insert = (f"INSERT INTO refunds (id, order_id, amount, reason) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 "
                  f"FROM refunds), {order}, {float(due['amount'])}, 'arrived cracked')")
        r = await sql.write(insert)
        if lost(r):
            if style == "careful":
                [found] = await sql.read(f"SELECT COUNT(*) AS n FROM refunds WHERE order_id = {order}")
                if int(found["n"]) > 0:
                    return f"Order {order} is refunded ({float(due['amount']):.2f}); the first answer was lost."
            r = await sql.write(insert)
        return f"Refunded {float(due['amount']):.2f} for order {order}." if r.ok else f"The refund failed: {r.error}"
    if task == "restock":
        product = int(re.search(r"product (\d+)", text).group(1))  # type: ignore[union-attr]
        units = int(re.search(r"(\d+) more", text).group(1))  # type: ignore[union-attr]
        value = f"stock + {units}" if style == "careful" else str(units)  # hasty overwrites the count
        r = await sql.write(f"UPDATE products SET stock = {value} WHERE id = {product}")
        return f"Added {units} to product {product}." if r.ok else f"I could not update the stock: {r.error}"
    if task == "count-pending":
        [count] = await sql.read("SELECT COUNT(*) AS n FROM orders WHERE status = 'pending'")
        return f"{int(count['n'])} orders are pending."
    raise ValueError(f"no playbook for task {task!r}")


# --- the playbooks by domain ---------------------------------------------------------------------------------

PLAYBOOKS = {"files": files, "shop_sqlite": shop, "shop_postgres": shop}


async def careful(episode: Episode) -> str:
    return await PLAYBOOKS[episode.domain](episode, "careful")


async def hasty(episode: Episode) -> str:
    return await PLAYBOOKS[episode.domain](episode, "hasty")
