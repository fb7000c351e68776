"""passhat in pytest: evaluate an agent inside a test, or collect case files as test items.

Registered as the ``pytest11`` entry point ``passhat.pytest_plugin`` (so ``-p passhat.pytest_plugin``
works whether or not the package is installed). pytest is imported only here, and passhat's own modules
only when a test uses them: an installed plugin costs other test suites nothing.

Inside a test — the ``passhat_eval`` fixture runs :func:`passhat.evaluate` into the test's temporary
folder and returns the :class:`passhat.Run`::

    def test_refunds(passhat_eval):
        run = passhat_eval("refunds", "careful", trials=4)
        assert run.pass_hat_k(4).low >= 0.75

or with the marker and the ``passhat_run`` fixture::

    @pytest.mark.passhat("refunds", trials=4)        # agent: --passhat-agent / passhat_agent
    def test_refunds(passhat_run):
        assert passhat_run.pass_hat_k(4).low >= 0.75

When such a test fails, its report gains a ``passhat`` section: every case that did not pass every
trial, with the first failing check of its first failing trial.

Case files as items — off unless an agent is configured (``--passhat-agent SPEC`` or the ini option
``passhat_agent``), so test suites that hold YAML files are unaffected: ``pytest path/to/cases/`` then
collects each case file (a YAML mapping with a top-level ``id`` and a case's own keys, hidden-goal cases
without ``instruction`` included) as one item — a file that looks like a case and does not load is a
collection error — runs it ``--passhat-trials`` times and decides it by ``--passhat-rule``:

- ``all`` (default): every trial passes;
- ``pass_rate>=X``: the lower end of the 95 % Wilson interval on the case's pass rate is at least X;
- ``pass^K>=X``: that lower end to the power K — a lower bound on the case's pass^K — is at least X.

A rule that a perfect agent could not meet at the configured trials is a usage error before collection.

Trials that end in infrastructure errors fail the item as not measured. Run folders go to pytest's
temporary folders (one per worker under pytest-xdist), or under ``--passhat-out DIR``, each in a folder
of its own: runs never collide.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import pytest
except ImportError:  # imported by name (-p passhat.pytest_plugin) where pytest is missing
    raise ImportError("passhat's pytest plugin needs pytest, which passhat does not install: "
                      "pip install 'passhat[pytest]'") from None

if TYPE_CHECKING:
    from passhat.api import Run
    from passhat.cases import Suite

REWRITTEN = ("passhat.pytest_plugin", "passhat.testing")
"""passhat's modules whose ``assert`` statements pytest should explain: the plugin's and the testing helpers'."""


def _rewrite_only_our_test_helpers() -> None:
    """Undo pytest's marking of the whole ``passhat`` package for assertion rewriting.

    pytest marks every package of a distribution with a ``pytest11`` entry point for rewriting, so every
    passhat module a test session imports is parsed, rewritten and compiled again instead of loaded from its
    ``.pyc`` — and never cached where ``PYTHONDONTWRITEBYTECODE`` is set: ~250 modules, seconds of CPU per
    pytest process (this project's own collection: 14.8 s of CPU with it, 10.8 s without). Their
    ``assert`` statements are internal invariants, not a test's checks: only :data:`REWRITTEN` stay marked.
    Through pytest's private ``_must_rewrite`` set: where that is gone, everything stays as pytest made it."""
    import sys

    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(marked, set) and "passhat" in marked:
            marked.discard("passhat")
            marked.update(REWRITTEN)
            cache = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(cache, dict):
                cache.clear()


_rewrite_only_our_test_helpers()

RUNS = pytest.StashKey[list["Run"]]()
"""The runs a test evaluated (for the failure report)."""
DOMAINS = pytest.StashKey[dict[str, Any]]()
"""Domains loaded by case items, per resolved reference (`DomainRef.key`): loaded once per worker."""
TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:", re.MULTILINE)
CASE_KEYS = frozenset({"domain", "instruction", "assertions", "faults", "required_tools", "forbidden_tools",
                       "allowed_tools", "reference"})
"""With a top-level ``id``, any of these marks a YAML file as a case file (``instruction`` may be left out of a
hidden-goal case, ``domain`` misspelt): it is collected, and one that does not load is an error."""
RULE = re.compile(r"^\s*(?:(?P<all>all)|pass_rate\s*>=\s*(?P<rate>[0-9]*\.?[0-9]+)"
                  r"|pass\^(?P<k>[1-9][0-9]*)\s*>=\s*(?P<bar>[0-9]*\.?[0-9]+))\s*$")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("passhat", "passhat: evaluate tool-using agents")
    group.addoption("--passhat-agent", metavar="SPEC", default=None,
                    help="Agent for passhat fixtures and case files (careful, module:function, openai:MODEL, "
                         "http://…, cmd:\"…\"); collecting case files is off without one.")
    group.addoption("--passhat-trials", metavar="K", type=int, default=None, help="Trials per case (default 4).")
    group.addoption("--passhat-rule", metavar="RULE", default=None,
                    help="Verdict of a case item: all (default), pass_rate>=X, or pass^K>=X (on the lower bound).")
    group.addoption("--passhat-out", metavar="DIR", default=None,
                    help="Keep run folders under DIR (default: pytest's temporary folders).")
    parser.addini("passhat_agent", "Agent for passhat fixtures and case files (enables collecting case files).",
                  default=None)
    parser.addini("passhat_trials", "Trials per case (default 4).", default=None)
    parser.addini("passhat_rule", "Verdict of a case item: all, pass_rate>=X, pass^K>=X.", default=None)
    parser.addini("passhat_out", "Keep run folders under this folder.", default=None)


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"--passhat-{name}")
    return value if value is not None else config.getini(f"passhat_{name}") or None


@dataclass(frozen=True)
class Rule:
    """How a case item is decided from its trials."""

    text: str
    rate: float | None = None
    k: int | None = None
    bar: float | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        m = RULE.match(text)
        if m is None:
            raise pytest.UsageError(f"--passhat-rule / passhat_rule {text!r}: expected all, pass_rate>=X or pass^K>=X "
                                    "(X between 0 and 1), e.g. pass^4>=0.5")
        bar = m["rate"] or m["bar"]
        if bar is not None and not 0 <= float(bar) <= 1:
            raise pytest.UsageError(f"--passhat-rule {text!r}: the bar must be between 0 and 1")
        return cls(text.strip(), float(m["rate"]) if m["rate"] else None, int(m["k"]) if m["k"] else None,
                   float(m["bar"]) if m["bar"] else None)

    def describe(self) -> str:
        if self.rate is not None:
            return f"95% Wilson lower bound of the pass rate ≥ {self.rate:g}"
        if self.k is not None:
            return f"lower bound of pass^{self.k} (Wilson lower bound ^ {self.k}) ≥ {self.bar:g}"
        return "every trial passes"

    @property
    def threshold(self) -> float | None:
        """The bar the rule's lower bound must reach (``None`` for ``all``)."""
        return self.rate if self.rate is not None else self.bar

    def best(self, trials: int) -> float:
        """The rule's lower bound when every one of ``trials`` trials passes: the most it can ever show."""
        from passhat.stats.intervals import wilson

        low = wilson(trials, trials)[0]
        return low ** (self.k or 1)

    def check_reachable(self, trials: int) -> None:
        """A rule that even a perfect agent cannot meet at this many trials is a usage error, before anything runs.

        The lower bound grows with the trials (8/8 has a Wilson lower bound of 0.676, so ``pass^4>=0.5``
        would need 0.676⁴ = 0.209 ≥ 0.5: never); such a rule would fail every case of every agent and read
        as a verdict about the agent."""
        bar = self.threshold
        if bar is None or self.best(trials) >= bar:
            return
        need = self.trials_needed()
        more = (f"at least {need} trials (--passhat-trials {need})" if need is not None
                else "more trials than any run could make (a lower bound never reaches 1: use `all`)")
        raise pytest.UsageError(
            f"--passhat-rule {self.text!r} can never pass with {trials} trial(s) per case: even {trials}/{trials} "
            f"gives a lower bound of {self.best(trials):.3f} < {bar:g} ({self.describe()}). It needs {more}, "
            f"or a bar of at most {math.floor(self.best(trials) * 1000) / 1000:g} at {trials} trials")

    def trials_needed(self, most: int = 10**7) -> int | None:
        """The fewest trials at which a perfect agent meets the rule (``None``: none up to ``most``)."""
        bar = self.threshold or 0.0
        if self.best(most) < bar:
            return None
        low, high = 1, 1
        while self.best(high) < bar:
            low, high = high, high * 2
        while low < high:  # the bound grows with n: the first n that reaches the bar
            mid = (low + high) // 2
            low, high = (mid + 1, high) if self.best(mid) < bar else (low, mid)
        return low

    def decide(self, passed: int, graded: int, wilson_low: float | None) -> tuple[bool, str]:
        """(verdict, the numbers in words)."""
        if self.rate is None and self.k is None:
            return passed == graded > 0, f"{passed}/{graded} trials passed"
        low = wilson_low or 0.0
        if self.rate is not None:
            return low >= self.rate, f"{passed}/{graded} trials passed, Wilson lower bound {low:.3f}"
        assert self.k is not None and self.bar is not None
        return low**self.k >= self.bar, (f"{passed}/{graded} trials passed, lower bound of pass^{self.k} "
                                         f"{low:.3f}^{self.k} = {low**self.k:.3f}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "passhat(suite, agent=None, trials=None, **options): the run the passhat_run "
                            "fixture evaluates (options are those of passhat.evaluate)")
    config.stash[DOMAINS] = {}
    rule = _setting(config, "rule")
    trials = _setting(config, "trials")
    if trials is not None and (not str(trials).isdigit() or int(trials) < 1):
        raise pytest.UsageError(f"--passhat-trials / passhat_trials {trials!r}: expected a whole number ≥ 1")
    if rule:  # a malformed rule, or one no agent could meet at these trials, is a usage error before collecting
        Rule.parse(rule).check_reachable(_trials(config))


def _trials(config: pytest.Config) -> int:
    return int(_setting(config, "trials") or 4)


def _run_folder(config: pytest.Config, name: str) -> Path:
    """A fresh folder for one run: under --passhat-out, or in pytest's temporary folders (per xdist worker)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:80] or "run"
    out = _setting(config, "out")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{safe}-", dir=out))  # unique, atomically, across workers
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        return Path(factory.mktemp(f"passhat-{safe}", numbered=True))
    return Path(tempfile.mkdtemp(prefix=f"passhat-{safe}-"))


class PasshatEval:
    """The ``passhat_eval`` fixture: ``passhat_eval(suite, agent=None, trials=None, **options) -> Run``."""

    def __init__(self, node: pytest.Item) -> None:
        self._node = node
        self.agent = _setting(node.config, "agent")
        """The default agent (``--passhat-agent`` / ``passhat_agent``)."""
        self.trials = _trials(node.config)
        """The default trials per case (``--passhat-trials`` / ``passhat_trials``)."""

    def _options(self, suite: Any, agent: Any, trials: int | None, options: dict[str, Any]) -> dict[str, Any]:
        agent = agent if agent is not None else self.agent
        if agent is None:
            pytest.fail("passhat: no agent — pass one (passhat_eval(suite, agent)) or configure it with "
                        "--passhat-agent SPEC or the ini option passhat_agent", pytrace=False)
        name = f"{self._node.name}-{Path(str(suite)).name}"
        options.setdefault("out", _run_folder(self._node.config, name))
        return {"suite": suite, "agent": agent, "trials": trials or self.trials, **options}

    def __call__(self, suite: str | Path | Suite, agent: Any = None, *, trials: int | None = None,
                 **options: Any) -> Run:
        """Evaluate ``agent`` on ``suite`` (``cases=[...]`` for some of its cases); see :func:`passhat.evaluate`."""
        from passhat.api import evaluate

        run = evaluate(**self._options(suite, agent, trials, options))
        self._node.stash.setdefault(RUNS, []).append(run)
        return run

    async def evaluate_async(self, suite: str | Path | Suite, agent: Any = None, *, trials: int | None = None,
                             **options: Any) -> Run:
        """The same from an async test (:func:`passhat.evaluate_async`)."""
        from passhat.api import evaluate_async

        run = await evaluate_async(**self._options(suite, agent, trials, options))
        self._node.stash.setdefault(RUNS, []).append(run)
        return run


@pytest.fixture
def passhat_eval(request: pytest.FixtureRequest) -> PasshatEval:
    """Evaluate an agent on a suite inside the test: ``run = passhat_eval("refunds", "careful", trials=4)``."""
    return PasshatEval(request.node)


@pytest.fixture
def passhat_run(request: pytest.FixtureRequest, passhat_eval: PasshatEval) -> Run:
    """The run described by the test's ``@pytest.mark.passhat(suite, agent=None, trials=None, **options)``."""
    marker = request.node.get_closest_marker("passhat")
    if marker is None or not (marker.args or "suite" in marker.kwargs):
        pytest.fail("passhat_run needs @pytest.mark.passhat(SUITE, agent=..., trials=...) on the test", pytrace=False)
    return passhat_eval(*marker.args, **marker.kwargs)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                            pytest.TestReport]:
    report = yield
    runs = item.stash.get(RUNS, [])
    if report.when == "call" and report.failed and runs and not isinstance(item, CaseItem):
        report.sections.append(("passhat", "\n\n".join(_describe(run) for run in runs)))
    return report


def _describe(run: Run) -> str:
    from passhat.metric_names import headline_ks
    from passhat.rounding import interval

    try:
        s = run.summary.suite
        shown = headline_ks(s.trials_per_case)
        curve = ", ".join(f"pass^{k} {v.estimate:.3f} {interval(v.ci_low, v.ci_high, 3)}" for k in shown
                          if (v := s.pass_hat_k.get(k)) is not None and v.estimate is not None
                          and v.ci_low is not None and v.ci_high is not None)
        return f"{run.failure_report()}\n  {curve}"
    except Exception as exc:  # the report of a failed test must not hide the failure
        return f"{run.folder}: cannot describe the run ({exc})"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml") or not _setting(parent.config, "agent"):
        return None
    try:
        head = file_path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    keys = {m.group(1) for m in TOP_KEY.finditer(head)}
    if "id" not in keys or not keys & CASE_KEYS:
        return None  # not a case file: gates, fixtures, CI configs and other YAML are left alone
    return CaseFile.from_parent(parent, path=file_path)


class CaseFile(pytest.File):
    """A case file: one item, named by the case id. A file that looks like a case (a top-level ``id`` and a
    case's own keys) but does not load is a collection error naming the file and the field, never a skip."""

    def collect(self) -> Iterator[pytest.Item]:
        from passhat.cases.load import load_case

        case = load_case(self.path)  # CaseError: bad YAML, an unknown or missing field (hidden-goal cases load)
        item = CaseItem.from_parent(self, name=case.id)
        item.case = case
        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from passhat.errors import PasshatError

        if isinstance(excinfo.value, PasshatError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # type: ignore[call-arg]  # Collector's lacks style=; Node's has it


class CaseFailed(Exception):
    """A case item's trials did not meet the rule (its message is the whole failure report)."""


class CaseItem(pytest.Item):
    """One case, run ``--passhat-trials`` times with ``--passhat-agent``, decided by ``--passhat-rule``."""

    case: Any = None
    """The parsed case (collected from the file)."""

    def runtest(self) -> None:
        from passhat.api import evaluate

        config = self.config
        rule = Rule.parse(_setting(config, "rule") or "all")
        agent = _setting(config, "agent")
        suite = _case_suite(self.path, self.case, config.stash[DOMAINS])
        run = evaluate(suite, agent, trials=_trials(config), out=_run_folder(config, self.name))
        self.stash[RUNS] = [run]
        self.user_properties.append(("passhat_run", str(run.folder)))
        (case,) = run.summary.cases
        if case.errors:
            failure = next(iter(run.failures()), None)
            raise CaseFailed(f"{case.id}: {case.errors} of {case.errors + case.n} trial(s) ended in infrastructure "
                             f"errors — not measured (agent {agent}){_first(failure)}\n  run folder: {run.folder}")
        ok, numbers = rule.decide(case.successes, case.n, case.wilson_low)
        if not ok:
            failure = next(iter(run.failures()), None)
            raise CaseFailed(f"{case.id}: {numbers} with {agent}; rule: {rule.describe()}{_first(failure)}\n"
                             f"  run folder: {run.folder}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from passhat.errors import PasshatError

        if isinstance(excinfo.value, CaseFailed | PasshatError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"passhat case {self.name}"


def _first(failure: Any) -> str:
    if failure is None or failure.check is None:
        return ""
    category = f" [{failure.category}]" if failure.category else ""
    return f"\n  first failure, trial {failure.trial}: {failure.check}{category}"


def _case_suite(path: Path, case: Any, domains: dict[str, Any]) -> Suite:
    """A suite of the one case in ``path`` (its domain loaded once per worker); a domain, fixture or reference
    the case gets wrong raises ``CaseError`` (the item fails with the file and field)."""
    from passhat.cases import Suite
    from passhat.cases.load import check_references
    from passhat.cases.suite import resolve_suite_folder
    from passhat.domain import load_domain, resolve_domain_ref
    from passhat.errors import CaseError, DomainError

    folder = path.parent
    try:
        key = resolve_domain_ref(case.domain, folder).key
        if key not in domains:
            domains[key] = load_domain(case.domain, folder)
    except DomainError as exc:
        raise CaseError(str(path), "domain", str(exc)) from None
    check_references(case, str(path), domains[key])
    name, _ = resolve_suite_folder(str(folder))
    return Suite(name, folder, [case], {case.id: path}, {case.domain: domains[key]})
