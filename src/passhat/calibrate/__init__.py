"""Calibrating the LLM judge against human labels: agreement, bias and a corrected pass rate.

``calibration_report(labels, judgments, pairwise, thresholds=...)`` returns the JSON document that
``passhat calibrate`` writes (format ``passhat.calibration/1``); ``check_thresholds`` is what a gate
rule calls to require a minimum agreement, so a drifted judge fails CI.
"""

from passhat.calibrate.agreement import Confusion, cohen_kappa, consistency, gwet_ac1, percent_agreement, rogan_gladen
from passhat.calibrate.inputs import Judgment, judgments_from_grades, read_judgments, read_labels, read_pairwise
from passhat.calibrate.report import FORMAT, Thresholds, calibration_report, check_thresholds

__all__ = [
    "FORMAT", "Confusion", "Judgment", "Thresholds", "calibration_report", "check_thresholds", "cohen_kappa",
    "consistency", "gwet_ac1", "judgments_from_grades", "percent_agreement", "read_judgments", "read_labels",
    "read_pairwise", "rogan_gladen",
]
