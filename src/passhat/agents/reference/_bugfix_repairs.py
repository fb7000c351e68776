"""What the bugfix playbook knows: how to read pytest's output, how to find a function in a file, and a
small table of bug patterns with their fixes (like a linter's autofixes).

The table says *what* a bug looks like, never *where* it is: the playbook finds the place from the test
run (the failing test, the frames of its traceback) and from ``search``/``read_file``, then asks each
repair whether it recognises the code there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

FAILURES_HEADER = re.compile(r"^=+ FAILURES =+$")
SECTION_END = re.compile(r"^=+ .* =+$")
TEST_HEADER = re.compile(r"^_{3,} (\S.*?) _{3,}$")
FRAME = re.compile(r"^(\S[^:\s]*\.py):(\d+): in (\S+)$")
WHERE = re.compile(r"^\s*\+\s+where .*? = (\w+)\(")
EXCEPTION = re.compile(r"^(\w+(?:Error|Exception)): (.*)$")
ASSERT_EQ = re.compile(r"^(?:AssertionError: )?assert (.+) == (.+)$")
LITERAL = re.compile(r"-?\d+(?:\.\d+)?|'[^'\\]*'|True|False|None")
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error).*?)\s*=*$")


@dataclass(frozen=True)
class Frame:
    """One entry of a short traceback: ``path:line: in func`` and the source line shown under it."""

    path: str
    line: int
    func: str
    source: str = ""


@dataclass
class Failure:
    """One failed test as pytest's ``--tb=short`` output shows it."""

    test: str
    frames: list[Frame] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """The ``E`` lines, without the ``E`` and its indentation."""

    @property
    def exception(self) -> tuple[str, str] | None:
        """The exception raised outside an assertion (``KeyError``, ``'nl'``), if any."""
        for text in self.errors:
            m = EXCEPTION.match(text)
            if m and m.group(1) != "AssertionError":
                return m.group(1), m.group(2)
        return None

    @property
    def where_names(self) -> list[str]:
        """Functions pytest's assertion rewriting names (``where 21 = median([...])``)."""
        return [m.group(1) for m in map(WHERE.match, self.errors) if m]

    @property
    def compared(self) -> tuple[str, str] | None:
        """``(actual, expected)`` of a failed ``assert actual == expected``."""
        for text in self.errors:
            m = ASSERT_EQ.match(text.strip())
            if m:
                return m.group(1).strip(), m.group(2).strip()
        return None


def parse_failures(output: str) -> list[Failure]:
    """The failed tests of a ``pytest --tb=short`` run, in the order they are reported."""
    failures: list[Failure] = []
    inside = False
    for line in output.splitlines():
        if FAILURES_HEADER.match(line):
            inside = True
            continue
        if not inside:
            continue
        if SECTION_END.match(line):
            break
        header = TEST_HEADER.match(line)
        if header:
            failures.append(Failure(header.group(1)))
        elif failures:
            current = failures[-1]
            frame = FRAME.match(line)
            if frame:
                current.frames.append(Frame(frame.group(1), int(frame.group(2)), frame.group(3)))
            elif line.startswith("E "):
                current.errors.append(line[1:].strip())
            elif line.startswith("    ") and current.frames and not current.frames[-1].source:
                last = current.frames[-1]
                current.frames[-1] = Frame(last.path, last.line, last.func, line.strip())
    return failures


def summary_line(output: str) -> str:
    """pytest's last line (``1 failed, 18 passed in 0.04s``), or '' when there is none."""
    for line in reversed(output.strip().splitlines()):
        m = SUMMARY.match(line.strip())
        if m:
            return m.group(1)
    return ""


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "tests" in path.split("/")[:-1] or name.startswith("test_") or name.endswith("_test.py")


def is_generated(text: str) -> bool:
    """A file whose header says it is generated and must not be edited by hand."""
    head = "\n".join(text.splitlines()[:5]).lower()
    return "generated" in head and ("do not edit" in head or "don't edit" in head)


def function_span(lines: list[str], name: str) -> tuple[int, int] | None:
    """Lines ``[start, end)`` of ``def name(`` (decorators excluded), up to the next line indented as
    little as the ``def``."""
    pattern = re.compile(rf"^(\s*)(?:async\s+)?def {re.escape(name)}\(")
    for i, line in enumerate(lines):
        m = pattern.match(line)
        if not m:
            continue
        indent = len(m.group(1))
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        return i, end
    return None


def imported_names(text: str) -> list[str]:
    """Names a test module imports with ``from module import a, b`` (not from pytest)."""
    names: list[str] = []
    for m in re.finditer(r"^from ([\w.]+) import ([\w, ]+)$", text, re.MULTILINE):
        if m.group(1).split(".")[0] != "pytest":
            names += [n.strip() for n in m.group(2).split(",") if n.strip()]
    return names


def called_names(body: str, among: list[str]) -> list[str]:
    """The names of ``among`` that ``body`` calls, in order of first call."""
    found: list[str] = []
    for m in re.finditer(r"\b(\w+)\(", body):
        if m.group(1) in among and m.group(1) not in found:
            found.append(m.group(1))
    return found


# --- the repair table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """Where a repair is tried: a function of a file, and the traceback line in it if there is one."""

    path: str
    func: str
    line: int | None = None
    callee: str | None = None
    """The function the traceback entered next from ``line`` (the deeper frame)."""


Fix = Callable[[str, Site, Failure], "str | None"]


@dataclass(frozen=True)
class Repair:
    """A bug pattern: what is wrong, in words, and a fix that returns the patched file (or None when the
    code at the site does not have this bug)."""

    name: str
    problem: str
    """What is wrong, for the report; ``{func}`` is the function's name."""
    fix: Fix


def _in_function(text: str, func: str, edit: Callable[[str], str | None]) -> str | None:
    """Apply ``edit`` to the source of ``func`` and splice the result back into the file."""
    lines = text.splitlines(keepends=True)
    span = function_span([x.rstrip("\n") for x in lines], func)
    if span is None:
        return None
    start, end = span
    new = edit("".join(lines[start:end]))
    if new is None:
        return None
    return "".join(lines[:start]) + new + "".join(lines[end:])


def _even_median(text: str, site: Site, failure: Failure) -> str | None:
    def edit(body: str) -> str | None:
        if "% 2" in body:
            return None
        m = re.search(r"^(\s*)return (\w+)\[len\(\2\) // 2\]\n", body, re.MULTILINE)
        if not m:
            return None
        i, v = m.group(1), m.group(2)
        even = (f"{i}mid = len({v}) // 2\n{i}if len({v}) % 2 == 0:\n{i}    return ({v}[mid - 1] + {v}[mid]) / 2\n"
                f"{i}return {v}[mid]\n")
        return body[:m.start()] + even + body[m.end():]
    return _in_function(text, site.func, edit)


def _half_up(text: str, site: Site, failure: Failure) -> str | None:
    lines = text.splitlines()
    span = function_span(lines, site.func)
    if span is None or "ROUND_HALF_EVEN" not in text:
        return None
    body = "\n".join(lines[span[0]:span[1]])
    if not re.search(r"half[ -]up", body, re.IGNORECASE) or "ROUND_HALF_EVEN" not in body:
        return None
    return text.replace("ROUND_HALF_EVEN", "ROUND_HALF_UP")


def _inclusive_range(text: str, site: Site, failure: Failure) -> str | None:
    def edit(body: str) -> str | None:
        if "inclusive" not in body.lower():
            return None
        new = re.sub(r"\b(\w+) <= (\w+) < (\w+)\b", r"\1 <= \2 <= \3", body)
        return new if new != body else None
    return _in_function(text, site.func, edit)


def _mutable_default(text: str, site: Site, failure: Failure) -> str | None:
    def edit(body: str) -> str | None:
        head, _, rest = body.partition("\n")
        found = re.search(r"(\w+)(?:: ([^=,()]+?))? ?= ?(\[\]|\{\})", head)
        if not found:
            return None
        name, annotation, empty = found.groups()
        default = f"{name}: {annotation} | None = None" if annotation else f"{name}=None"
        head = head[:found.start()] + default + head[found.end():]
        lines = rest.split("\n")
        indent = re.match(r"\s*", lines[0]).group(0) if lines else "    "  # type: ignore[union-attr]
        after = 0
        if lines and lines[0].strip().startswith(('"""', "'''")):
            quote = lines[0].strip()[:3]
            after = 1 if lines[0].strip().count(quote) >= 2 else next(
                (k + 1 for k in range(1, len(lines)) if quote in lines[k]), 1)
        guard = [f"{indent}if {name} is None:", f"{indent}    {name} = {empty}"]
        return "\n".join([head, *lines[:after], *guard, *lines[after:]])
    return _in_function(text, site.func, edit)


def _month_end(text: str, site: Site, failure: Failure) -> str | None:
    def edit(body: str) -> str | None:
        if "monthrange" in body:
            return None
        new = re.sub(r"\bdate\((\w+), (\w+), (\w+)\.day\)",
                     r"date(\1, \2, min(\3.day, calendar.monthrange(\1, \2)[1]))", body)
        return new if new != body else None
    fixed = _in_function(text, site.func, edit)
    if fixed is None or re.search(r"^import calendar$", fixed, re.MULTILINE):
        return fixed
    first_import = re.search(r"^(?:import|from) ", fixed, re.MULTILINE)
    at = first_import.start() if first_import else 0
    return fixed[:at] + "import calendar\n" + fixed[at:]


def _truncate_width(text: str, site: Site, failure: Failure) -> str | None:
    def edit(body: str) -> str | None:
        new = re.sub(r"\b(\w+)\[:\s*(\w+)\] \+ (\w+)\b", r"\1[: \2 - len(\3)] + \3", body)
        return new if new != body else None
    return _in_function(text, site.func, edit)


def _normalise_key(text: str, site: Site, failure: Failure) -> str | None:
    exc = failure.exception
    if site.line is None or exc is None or exc[0] != "KeyError":
        return None
    key = exc[1].strip("'\"")
    if key == key.strip().upper():
        return None  # the key is already a normalised code: a missing entry, not a spelling
    lines = text.splitlines(keepends=True)
    if not 0 < site.line <= len(lines):
        return None
    line = lines[site.line - 1]
    if site.callee and re.search(rf"\b{re.escape(site.callee)}\((\w+)\)", line):
        new = re.sub(rf"\b({re.escape(site.callee)})\((\w+)\)", r"\1(\2.strip().upper())", line, count=1)
    else:
        new = re.sub(r"\b(\w+)\[(\w+)\]", r"\1[\2.strip().upper()]", line, count=1)
    if new == line:
        return None
    lines[site.line - 1] = new
    return "".join(lines)


REPAIRS: tuple[Repair, ...] = (
    Repair("even-median", "`{func}` returns the upper middle value for an even number of values instead of the "
           "mean of the two middle ones", _even_median),
    Repair("half-up-rounding", "`{func}` rounds half to even (banker's rounding) although it is documented to round "
           "half up", _half_up),
    Repair("inclusive-range", "`{func}` leaves out the end of the range although its docstring says both ends are "
           "inclusive", _inclusive_range),
    Repair("mutable-default", "`{func}` has a mutable default argument, so every call that relies on the default "
           "shares (and grows) one list", _mutable_default),
    Repair("month-end", "`{func}` keeps the day of the month when the target month is shorter, so `date()` raises "
           "for days like the 31st", _month_end),
    Repair("truncate-width", "`{func}` cuts the text to the full width and then appends the ellipsis, so the result "
           "is longer than the width", _truncate_width),
    Repair("normalise-key", "`{func}` looks a code up without normalising it, but the table's keys are upper-case "
           "(a lower-case code raises KeyError)", _normalise_key),
)
