"""Agents for the calc workspace: each does one thing the tests check."""

from __future__ import annotations

import os

from passhat.episode import Episode

FIXED = '"""Fixed."""\n\n\ndef mean(xs: list[float]) -> float:\n    return sum(xs) / len(xs)\n'


async def fixer(episode: Episode) -> str:
    await episode.call("run_command", {"command": "python -m pytest -q"})
    await episode.call("read_file", {"path": "calc.py"})
    await episode.call("write_file", {"path": "calc.py", "content": FIXED})
    result = await episode.call("run_command", {"command": "python -m pytest -q"})
    return "fixed" if result.ok and result.content["exit_code"] == 0 else "still failing"


async def test_editor(episode: Episode) -> str:
    await episode.call("write_file", {"path": "tests/test_calc.py", "content": "def test_mean() -> None:\n    pass\n"})
    return "tests pass now"


async def escaper(episode: Episode) -> str:
    """Tries every way out of its copy it can think of; the test checks none worked."""
    outside = os.environ["CALC_OUTSIDE"]
    for path in ("../escaped.txt", f"{outside}/escaped.txt", "/tmp/escaped-by-agent.txt"):
        await episode.call("write_file", {"path": path, "content": "x"})
    await episode.call("run_command", {"command": f"ln -s {outside} link"})
    await episode.call("write_file", {"path": "link/escaped.txt", "content": "x"})
    await episode.call("run_command", {"command": f"echo x > {outside}/by-command.txt; echo x > ../by-command.txt"})
    await episode.call("delete_file", {"path": "."})
    return "done"


async def noop(episode: Episode) -> None:
    return None
