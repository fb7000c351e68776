"""Where a SQLite database file changed, found by comparing its pages with the image's.

A SQLite file is a sequence of fixed-size pages, each belonging to one b-tree (a table, an index, the
schema) or to the free list. A trial's copy starts byte-identical to the image, so any row a trial
inserts, updates or deletes rewrites at least one page of its table's b-tree: the leaf that holds (or
would hold) its rowid, or the interior page above a leaf that was freed or split. Comparing the two
files page by page (numpy, at memory speed) and mapping each changed page to its table (the image's
``dbstat``) and to the rowid interval it covers (read from the image's interior pages, once) gives the
rows to compare — without anything of the harness inside the file: a server that lists tables or
triggers sees only the fixture's.

The interval of a page is the keys its subtree may hold: the root's is everything; an interior page's
``i``-th child holds keys in ``(key[i-1], key[i]]``, its right-most child those above its last key. A
changed overflow page (a large value rewritten in place, its leaf unchanged) or a table without rowids
gives its whole table.
"""

from __future__ import annotations

import mmap
import sqlite3
from pathlib import Path

SCHEMA_BTREE = "sqlite_schema"
"""What the page map calls the schema's b-tree (page 1 and its children)."""
EVERYTHING = None
"""Returned instead of a set of tables when the file changed in a way pages cannot attribute (it shrank,
its page size changed): every table is then diffed."""


Owner = tuple[str, str]
"""A page's table and what the page is to it: ``table`` (its b-tree), ``overflow`` (of a large value in the
table's b-tree) or ``index`` (of one of its indexes)."""


def page_owners(path: Path) -> tuple[int, dict[int, Owner], dict[str, int]]:
    """The page size of the database file at ``path``, each page's :data:`Owner` (the schema's pages are
    owned by :data:`SCHEMA_BTREE`), and the root page of every rowid table."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        objects = conn.execute("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master").fetchall()
        table_of = {name: tbl for _, name, tbl, _, _ in objects}
        roots = {name: int(root) for kind, name, _, root, sql in objects
                 if kind == "table" and root and not name.startswith("sqlite_")
                 and "WITHOUT ROWID" not in (sql or "").upper()}
        owners: dict[int, Owner] = {}
        for name, page, pagetype in conn.execute("SELECT name, pageno, pagetype FROM dbstat"):
            table = table_of.get(name, name)
            if table in ("sqlite_master", "sqlite_schema"):
                owners[int(page)] = (SCHEMA_BTREE, "table")
            elif name != table:
                owners[int(page)] = (table, "index")
            else:
                owners[int(page)] = (table, "overflow" if pagetype == "overflow" else "table")
        return page_size, owners, roots
    finally:
        conn.close()


Interval = tuple[int | None, int | None]
"""Rowids ``lo < rowid <= hi`` (``None``: unbounded)."""
EVERY_ROW: Interval = (None, None)


def _varint(data: bytes, at: int) -> int:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return (value << 8) | data[at + 8]


def rowid_intervals(path: Path, page_size: int, roots: dict[str, int]) -> dict[int, tuple[str, Interval]]:
    """Per page of each rowid table's b-tree (``roots``: table → root page), its table and rowid interval,
    walking only interior pages (a 100 MB table has a few dozen)."""
    out: dict[int, tuple[str, Interval]] = {}
    with path.open("rb") as f:
        def page(number: int) -> bytes:
            f.seek((number - 1) * page_size)
            return f.read(page_size)

        for table, root in roots.items():
            stack: list[tuple[int, Interval]] = [(root, EVERY_ROW)]
            while stack:
                number, (lo, hi) = stack.pop()
                out[number] = (table, (lo, hi))
                data = page(number)
                head = 100 if number == 1 else 0
                if data[head] != 0x05:  # not an interior table page: a leaf (or corrupt: the leaf's interval will do)
                    continue
                cells = int.from_bytes(data[head + 3:head + 5], "big")
                right = int.from_bytes(data[head + 8:head + 12], "big")
                prev = lo
                for i in range(cells):
                    at = int.from_bytes(data[head + 12 + 2 * i:head + 14 + 2 * i], "big")
                    child = int.from_bytes(data[at:at + 4], "big")
                    key = _varint(data, at + 4)
                    stack.append((child, (prev, key)))
                    prev = key
                stack.append((right, (prev, hi)))
    return out


def changed_pages(image: Path, copy: Path, page_size: int) -> tuple[list[int], int] | None:
    """1-based numbers of the pages of ``copy`` that differ from ``image`` (pages past the image's end
    count as changed), and the copy's page count; ``None`` if the copy is shorter (it was vacuumed)."""
    size_a, size_b = image.stat().st_size, copy.stat().st_size
    if size_b < size_a or size_a % page_size or size_b % page_size:
        return None
    import numpy as np  # on first use: a domain without SQLite-file worlds never loads it

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


def touched_rows(image: Path, copy: Path, page_size: int, owners: dict[int, Owner],
                 intervals: dict[int, tuple[str, Interval]]) -> dict[str, list[Interval]] | None:
    """Per table with a changed page (:data:`SCHEMA_BTREE` too when the schema changed), the rowid intervals
    to compare (:data:`EVERY_ROW` for a changed overflow page, or any change of a table without rowids);
    :data:`EVERYTHING` when the change cannot be attributed to pages at all (the file shrank)."""
    found = changed_pages(image, copy, page_size)
    if found is None:
        return EVERYTHING
    pages, _ = found
    rowid_tables = {t for t, _ in intervals.values()}
    out: dict[str, list[Interval]] = {}
    for p in pages:
        if p in intervals:
            table, interval = intervals[p]
            out.setdefault(table, []).append(interval)
        elif p in owners:
            table, what = owners[p]
            if what == "index" and table in rowid_tables:
                continue  # an index changes with its table's rows, which the table's own pages show
            out.setdefault(table, []).append(EVERY_ROW)
    return out
