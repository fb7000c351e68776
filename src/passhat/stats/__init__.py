"""Pure statistics for passhat: numbers in, numbers and frozen dataclasses out.

This package imports nothing else from passhat, so every formula can be audited and tested on its
own. Formulas and sources: ``reference/statistics.md``; each function's docstring cites its section.
"""

from passhat.stats.bootstrap import Interval, IntervalMethod, coherent_curve, suite_interval, suite_intervals
from passhat.stats.describe import Distribution, percentile
from passhat.stats.intervals import Alternative, clopper_pearson, clopper_pearson_lower, wilson, wilson_score
from passhat.stats.paired import (
    PairedInterval,
    PairedResult,
    PairedTest,
    detectable_change,
    holm,
    mcnemar_midp,
    mcnemar_score,
    minimum_detectable_effect,
    paired_difference,
    paired_differences,
    tango_interval,
)
from passhat.stats.passk import (
    PassMetric,
    curve,
    estimate,
    estimate_matrix,
    fixed_suite_se,
    pass_at_k,
    pass_hat_k,
    unbiased_variance_pass_at_k,
    unbiased_variance_pass_hat_k,
)
from passhat.stats.regressions import DropTest, drop_test, fisher_drop

__all__ = [
    "Alternative",
    "Distribution",
    "Interval",
    "IntervalMethod",
    "PairedInterval",
    "PairedResult",
    "PairedTest",
    "PassMetric",
    "clopper_pearson",
    "clopper_pearson_lower",
    "curve",
    "DropTest",
    "drop_test",
    "detectable_change",
    "estimate",
    "estimate_matrix",
    "fisher_drop",
    "fixed_suite_se",
    "holm",
    "mcnemar_midp",
    "mcnemar_score",
    "minimum_detectable_effect",
    "paired_difference",
    "paired_differences",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "suite_interval",
    "suite_intervals",
    "coherent_curve",
    "tango_interval",
    "unbiased_variance_pass_at_k",
    "unbiased_variance_pass_hat_k",
    "wilson",
    "wilson_score",
]
