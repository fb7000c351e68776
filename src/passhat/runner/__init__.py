"""The runner: trials, records, and the run folder."""

from passhat.runner.records import Outcome, Timing, TrialRecord
from passhat.runner.run import RunConfig, execute
from passhat.runner.store import RunStore
from passhat.runner.trial import run_trial

__all__ = ["Outcome", "RunConfig", "RunStore", "Timing", "TrialRecord", "execute", "run_trial"]
