"""Which tables of a SQLite database file changed, found by comparing its pages with the image's.

A SQLite file is a sequence of fixed-size pages, each belonging to one b-tree (a table, an index, the
schema) or to the free list. A trial's copy starts byte-identical to the image, so any row a trial
inserts, updates or deletes rewrites at least one page of its table's b-tree (a leaf, an overflow page,
or the interior page that points to a new one). Comparing the two files page by page (numpy, at memory
speed) and mapping each changed page to its b-tree with the image's ``dbstat`` table names the tables
to diff, without anything of the harness inside the file — a server that lists tables or triggers sees
only the fixture's.
"""

from __future__ import annotations

import mmap
import sqlite3
from pathlib import Path

import numpy as np

SCHEMA_BTREE = "sqlite_schema"
"""What the page map calls the schema's b-tree (page 1 and its children)."""
EVERYTHING = None
"""Returned instead of a set of tables when the file changed in a way pages cannot attribute (it shrank,
its page size changed): every table is then diffed."""


def page_owners(path: Path) -> tuple[int, dict[int, str]]:
    """The page size of the database file at ``path`` and, per page number, the table that owns it (an
    index page is owned by its table; the schema's pages by :data:`SCHEMA_BTREE`)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        table_of = {name: tbl for name, tbl in conn.execute("SELECT name, tbl_name FROM sqlite_master")}
        owners = {}
        for name, page in conn.execute("SELECT name, pageno FROM dbstat"):
            owner = table_of.get(name, name)
            owners[int(page)] = SCHEMA_BTREE if owner in ("sqlite_master", "sqlite_schema") else owner
        return page_size, owners
    finally:
        conn.close()


def changed_pages(image: Path, copy: Path, page_size: int) -> tuple[list[int], int] | None:
    """1-based numbers of the pages of ``copy`` that differ from ``image`` (pages past the image's end
    count as changed), and the copy's page count; ``None`` if the copy is shorter (it was vacuumed)."""
    size_a, size_b = image.stat().st_size, copy.stat().st_size
    if size_b < size_a or size_a % page_size or size_b % page_size:
        return None
    n_a, n_b = size_a // page_size, size_b // page_size
    if n_a == 0:
        return list(range(1, n_b + 1)), n_b
    with image.open("rb") as fa, copy.open("rb") as fb:
        with mmap.mmap(fa.fileno(), size_a, access=mmap.ACCESS_READ) as ma, \
                mmap.mmap(fb.fileno(), size_b, access=mmap.ACCESS_READ) as mb:
            a = np.frombuffer(ma, dtype=np.uint64, count=size_a // 8).reshape(n_a, page_size // 8)
            b = np.frombuffer(mb, dtype=np.uint64, count=size_a // 8).reshape(n_a, page_size // 8)
            differs = np.flatnonzero((a != b).any(axis=1)) + 1
            first = [int(p) for p in differs if p != 1]
            del a, b  # views into the maps: they must go before the maps close
            header = ma[100:page_size] != mb[100:page_size]  # page 1 past the file header: the schema's root
    pages = ([1] if header else []) + first + list(range(n_a + 1, n_b + 1))
    return pages, n_b


def touched_tables(image: Path, copy: Path, page_size: int, owners: dict[int, str]) -> set[str] | None:
    """The tables whose b-tree has a changed page (:data:`SCHEMA_BTREE` when the schema changed), or
    :data:`EVERYTHING` when the change cannot be attributed to pages."""
    found = changed_pages(image, copy, page_size)
    if found is None:
        return EVERYTHING
    pages, _ = found
    return {owners[p] for p in pages if p in owners}
