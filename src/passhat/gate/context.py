"""What a rule may look at: the run, the baseline (if any) and the cases both measured identically."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from passhat.compare import LoadedRun, Matching
from passhat.errors import PasshatError
from passhat.gate.select import Selection
from passhat.inputs import open_regular
from passhat.results.tally import CaseTally


class RuleInputError(Exception):
    """A rule's input is unusable (bad input, exit 2); ``field`` is relative to the rule, e.g. ``file``."""

    def __init__(self, field: str, message: str) -> None:
        self.field, self.message = field, message
        super().__init__(message)


@dataclass(frozen=True)
class GateInput:
    """Inputs shared by every rule of one gate evaluation."""

    run: LoadedRun
    baseline: LoadedRun | None
    matching: Matching | None
    """Cases comparable with the baseline (None without a baseline)."""
    gate_dir: Path
    """Folder of the gate file: relative paths in rules (calibration and canary files) resolve against it."""
    alpha: float
    """The gate's one-sided error rate; a rule's own ``alpha`` overrides it."""

    def rule_path(self, file: str) -> Path:
        """A path named in a rule: absolute as written, else relative to the gate file's folder."""
        return Path(file) if Path(file).is_absolute() else self.gate_dir / file

    def selected(self, select: Selection) -> list[str]:
        """Ids of the run's cases that the selection matches, in manifest order."""
        return [cid for cid in self.run.suite.cases if select.matches(cid, self.run.meta(cid))]

    @property
    def planned_trials(self) -> int:
        """Trials per case the run planned (``manifest.trials``)."""
        return self.run.manifest.trials

    def incomplete(self, case_ids: list[str]) -> list[str]:
        """Cases with fewer graded trials than planned: the rest ended in infrastructure errors (or never ran).

        Their evidence is missing, not negative: a rule may still FAIL on what they show, never PASS.
        """
        planned = self.planned_trials
        return [c for c in case_ids if self.run.tallies[c].n < planned]

    def perfect(self, passing: bool = True, trials: int | None = None) -> GateInput:
        """The same input with every case of the run at ``trials`` trials (default: the planned ones), all passing
        (``passing``) or all failing: the best (worst) any run of these cases can show. What a suite-mean
        rule decides on it says which outcomes the real run can reach at all (``gate.evaluate.reachable``)."""
        n = trials if trials is not None else self.planned_trials
        tallies = {cid: CaseTally(cid, passes=n if passing else 0, fails=0 if passing else n)
                   for cid in self.run.suite.cases}
        return replace(self, run=LoadedRun(self.run.folder, self.run.manifest, tallies))

    def paired(self, select: Selection) -> list[str]:
        """Selected cases that are also comparable with the baseline."""
        comparable = set(self.matching.case_ids) if self.matching else set()
        return [cid for cid in self.selected(select) if cid in comparable]


def read_rule_file(path: Path, field: str, what: str, limit: int, hint: str) -> bytes:
    """The bytes of a file a rule reads, refusing (bad input on ``field``) one larger than ``limit`` bytes.

    The size is checked on the open file and the read is bounded, so a huge or endless file (a device,
    a growing log) is refused without being loaded into memory. The caller hashes and parses these same
    bytes, so what gate.json records is exactly what decided the verdict.
    """
    try:
        with open(open_regular(path, what), "rb") as fh:  # a named pipe blocked a plain open for ever
            raw = fh.read(limit + 1)
    except PasshatError as exc:
        raise RuleInputError(field, str(exc)) from None
    except OSError as exc:
        raise RuleInputError(field, f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise RuleInputError(field, f"{what} {path} is larger than {limit} bytes; {hint}")
    return raw
