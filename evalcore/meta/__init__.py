"""Meta-evaluation: how well a judge's scores agree with human scores. Every statistic returns an Estimate
(evalcore.meta.results: statistic, interval, n, method, notes); arguments are checked by evalcore.meta.validation.

Correlations at dataset / summary / system level with document-bootstrap CIs (correlation), Shen et al.'s
system-wise analyses (systems: per-system correlation, meta-correlation, #CP, reliability), pairwise analyses
(pairwise: H2H, position bias, 002's pairwise Kendall by difficulty), annotator agreement and the human ceiling
(agreement), paired comparison of two judges (compare), and kappa / F1 / confusion matrix / calibration for
binary, nominal and ordinal labels (classification: import it as evalcore.meta.classification; it is not loaded
here because scikit-learn adds half a second to every import of evalcore.meta). Imported as modules too: the
Alternative Annotator Test (alt_test), prediction-powered estimates from few human labels (ppi) and Bradley-Terry
rankings with length control (bradley_terry; docs/statistics-alt-test-ppi-bt.md). Pure functions over DataFrames;
no Streamlit.
"""

from evalcore.meta.agreement import human_ceiling, krippendorff_alpha, reliability_matrix
from evalcore.meta.compare import PairedComparisonResult, paired_difference
from evalcore.meta.correlation import (
    COEFFICIENTS, LEVELS, bootstrap_indices, correlate, correlation_table,
)
from evalcore.meta.pairwise import (
    h2h_correct_preferences, h2h_preferences, pairwise_kendall_by_difficulty, pairwise_tau_b, position_bias,
)
from evalcore.meta.results import Estimate
from evalcore.meta.systems import (
    CorrectPreferencesResult, MetaCorrelationResult, ReliabilityResult, challenge_pairs, correct_preferences,
    meta_correlation, per_system, reliability, system_quality,
)

__all__ = [
    "Estimate", "COEFFICIENTS", "LEVELS", "bootstrap_indices", "correlate", "correlation_table",
    "system_quality", "per_system", "MetaCorrelationResult", "meta_correlation", "CorrectPreferencesResult",
    "correct_preferences", "challenge_pairs", "ReliabilityResult", "reliability",
    "h2h_preferences", "h2h_correct_preferences", "position_bias", "pairwise_kendall_by_difficulty", "pairwise_tau_b",
    "krippendorff_alpha", "human_ceiling", "reliability_matrix",
    "PairedComparisonResult", "paired_difference",
]
