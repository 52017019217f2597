"""What the app's pages show, as plain frames and plotly figures (no Streamlit here): one module per page.

``common`` (run names, default runs, score frames), ``data``, ``criteria``, ``score``, ``alignment``, ``bias``,
``compare`` mirror ``pages/``; ``report`` builds the HTML report of the current analysis. Keeping the frames and
figures here means the same analysis feeds the report and is testable without a browser. The functions take loaded
objects (``Dataset``, ``Run``) and the view's parameters; caching by ids is the app's business.
"""

from evalcore.parsers import PARSE_MODES  # noqa: F401
from evalcore.views.common import (  # noqa: F401
    DEFAULT_DATASET,
    DEFAULT_RUNS,
    default_run_ids,
    frames_for,
    run_label,
)


def __getattr__(name: str):
    """``COEFFICIENTS`` and ``LEVELS`` (the pages' pickers) load the statistics module (scipy) on first use only
    (PEP 562), so that a page without statistics, e.g. the app's Data page, does not wait for scipy to import."""
    if name in ("COEFFICIENTS", "LEVELS"):
        from evalcore.meta import correlation

        return getattr(correlation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
