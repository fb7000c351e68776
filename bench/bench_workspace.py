"""Per-trial cost of a code workspace: image, copy, diff, digest, discard, and a sandboxed command.

Builds a tree of about ``--mb`` MB in ``--files`` files (sizes log-uniform from 100 B to 200 KB, one in
five binary, the rest Python-like text) in a temporary folder, then measures:

- building the image (copy + sha256 of every file), once;
- ``restore`` (a private copy per trial) over ``--trials`` trials, median and P95, and to ``/dev/shm``;
- ``diff`` on an untouched copy (the stat fast path) and after 5 files changed, and ``digest``;
- ``discard``;
- ``run_command("true")`` with the ``unshare`` sandbox and with ``none`` (the sandbox's own overhead).

Prints a table of milliseconds and a few ratios; asserts nothing. Also says whether copies shared blocks
(a reflink; ext4 has none, Btrfs and XFS do). Run: ``python bench/bench_workspace.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from passhat.workspace import WorkspaceImage, _fs, isolation, run_command
from passhat.workspace import copies as copies_module

WORDS = "def return self value items result config import from class for in if else while yield".split()


def build_tree(root: Path, files: int, mb: float, seed: int = 0) -> int:
    """About ``mb`` MB in ``files`` files under ~40 folders; returns the bytes written."""
    rng = random.Random(seed)
    sizes = [math.exp(rng.uniform(math.log(100), math.log(200_000))) for _ in range(files)]
    scale = mb * 1e6 / sum(sizes)
    total = 0
    for i, raw in enumerate(sizes):
        size = max(1, int(raw * scale))
        folder = root / f"pkg{i % 8}" / f"mod{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 5 == 0:
            data = rng.randbytes(size)
            name = f"blob{i}.bin"
        else:
            line = " ".join(rng.choice(WORDS) for _ in range(10)) + "\n"
            data = (line * (size // len(line) + 1)).encode()[:size]
            name = f"file{i}.py"
        (folder / name).write_bytes(data)
        total += len(data)
    return total


T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000, value


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, math.ceil(0.95 * len(values)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50, help="tree size in MB (default 50)")
    parser.add_argument("--files", type=int, default=2000, help="number of files (default 2000)")
    parser.add_argument("--trials", type=int, default=20, help="restores to time (default 20)")
    parser.add_argument("--commands", type=int, default=30, help="commands per isolation level (default 30)")
    parser.add_argument("--quick", action="store_true", help="10 MB, 500 files, 5 trials, 10 commands")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.files, args.trials, args.commands = 10, 500, 5, 10

    tmp = Path(tempfile.mkdtemp(prefix="passhat-bench-"))
    try:
        rows: dict[str, list[float]] = {k: [] for k in ["restore", "diff (untouched)", "diff (5 changed)", "digest", "discard"]}
        # commands first, on a quiet disk: their private HOME/TMPDIR are made and removed on it too
        work = Path(tempfile.mkdtemp(prefix="passhat-bench-cmd-"))
        levels = ["unshare", "none"] if isolation() == "unshare" else ["none"]
        for level in levels:
            key = f"run_command true ({level})"
            rows[key] = []

            async def many(lv: str = level, k: str = key) -> None:
                for _ in range(args.commands):
                    result = await run_command(work, "true", timeout_s=30, sandbox=lv)  # type: ignore[arg-type]
                    assert result.ok, result.stderr
                    rows[k].append(result.seconds * 1000)

            asyncio.run(many())
        shutil.rmtree(work)
        size = build_tree(tmp / "src", args.files, args.mb)
        build_ms, image = timed(lambda: WorkspaceImage.from_dir(tmp / "src"))
        # as a trial would see it: the copy's stat is old enough to trust (see RACY_NS) by the time it is diffed
        racy, copies_module.RACY_NS = copies_module.RACY_NS, 0
        for _ in range(args.trials):
            ms, copy = timed(image.restore)
            rows["restore"].append(ms)
            rows["diff (untouched)"].append(timed(copy.diff)[0])
            changed = sorted(p for p in image.files if p.endswith(".py"))[:5]
            for rel in changed:
                path = copy.root / rel
                path.write_bytes(path.read_bytes() + b"# edited\n")
            ms, diff = timed(copy.diff)
            assert len(diff.changes) == 5
            rows["diff (5 changed)"].append(ms)
            rows["digest"].append(timed(copy.digest)[0])
            rows["discard"].append(timed(copy.discard)[0])
        copies_module.RACY_NS = racy
        racy_ms = []
        for _ in range(min(args.trials, 5)):  # a diff right after restore hashes the files copied last
            copy = image.restore()
            racy_ms.append(timed(copy.diff)[0])
            copy.discard()
        rows["diff (just restored)"] = racy_ms
        if Path("/dev/shm").is_dir():  # the same copies on a tmpfs: what file creation costs on the disk
            shm = []
            for _ in range(min(args.trials, 10)):
                ms, copy = timed(lambda: image.restore(parent=Path("/dev/shm")))
                shm.append(ms)
                copy.discard()
            rows["restore (to /dev/shm)"] = shm

        print(f"tree: {len(image.files):,} files, {size / 1e6:.1f} MB; image build {build_ms:.0f} ms; "
              f"reflink copies: {'yes' if _fs.clone_used() else 'no (in-kernel copy_file_range)'}; "
              f"isolation here: {isolation()}")
        print(f"{'operation':<28} {'median ms':>10} {'P95 ms':>9} {'n':>4}")
        order = ["restore", "restore (to /dev/shm)", "diff (untouched)", "diff (just restored)", "diff (5 changed)", "digest",
                 "discard", "run_command true (unshare)", "run_command true (none)"]
        for name in [k for k in order if k in rows]:
            values = rows[name]
            print(f"{name:<28} {statistics.median(values):>10.1f} {p95(values):>9.1f} {len(values):>4}")
        med = {k: statistics.median(v) for k, v in rows.items()}
        print(f"restore throughput: {size / 1e6 / (med['restore'] / 1000):.0f} MB/s; "
              f"diff untouched / restore: {med['diff (untouched)'] / med['restore']:.2f}; "
              f"digest / diff untouched: {med['digest'] / med['diff (untouched)']:.2f}")
        if "run_command true (unshare)" in med:
            extra = med["run_command true (unshare)"] - med["run_command true (none)"]
            print(f"sandbox overhead per command: +{extra:.1f} ms "
                  f"({med['run_command true (unshare)'] / med['run_command true (none)']:.1f}× a bare /bin/sh)")
        image.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
