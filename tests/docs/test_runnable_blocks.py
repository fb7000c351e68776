"""The fenced blocks of README.md and docs/*.md marked runnable run as written, so they stay true.

The marker is an HTML comment on the line right before the opening fence (invisible when rendered):

    <!-- runnable: tests/docs/test_runnable_blocks.py runs this block -->
    ```bash
    passhat run reimbursement --agent careful --trials 8 --out runs/base
    ```

Mark only blocks that run offline (no API key, no network), exit 0 and take a few seconds: built-in
suites and reference agents with small trial counts. ``bash``/``sh``/``shell`` blocks run as one script
under ``bash -euo pipefail`` (every command must succeed); ``python`` blocks are executed in this process
(no interpreter start-up per block). Every block runs in one shared temporary folder, in file order, so a
later block may use a run folder an earlier one wrote. A marker before anything but such a fence is an
error, and so is a doc set with no runnable block at all (the test must not pass by finding nothing).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!--\s*runnable\b.*-->\s*$")
FENCE = re.compile(r"^```(\w+)\s*$")
SHELL, PYTHON = ("bash", "sh", "shell"), ("python",)


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    language: str
    code: str

    def __str__(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def runnable_blocks() -> list[Block]:
    blocks = []
    for doc in DOCS:
        lines = doc.read_text("utf-8").splitlines()
        for i, line in enumerate(lines):
            if not MARKER.match(line):
                continue
            fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            where = f"{doc.relative_to(ROOT)}:{i + 1}"
            assert fence and fence.group(1) in SHELL + PYTHON, f"{where}: the marker must precede a bash or python fence"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(doc, i + 2, fence.group(1), "\n".join(lines[i + 2:end]) + "\n"))
    return blocks


BLOCKS = runnable_blocks()


def test_there_are_runnable_blocks() -> None:
    assert len(BLOCKS) >= 2, "no block is marked runnable: nothing keeps the docs true"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs")


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_block_runs_as_written(block: Block, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    if block.language in SHELL:
        bin_dir = str(Path(sys.executable).parent)  # the passhat command of the interpreter under test
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{block}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    else:
        exec(compile(block.code, str(block), "exec"), {"__name__": "__docs__"})  # noqa: S102 - our own docs
