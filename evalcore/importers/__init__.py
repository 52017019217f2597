"""Bringing a researcher's own work in: human-rated tables (CSV, TSV, JSON, JSONL, Parquet) as datasets, judge-score
columns and judge-score files as runs.

Two table shapes are understood:

WIDE  one row per item (or per item x annotator, when an annotator column is mapped), one column per dimension;
      a dimension may instead map annotator names to columns (``{"coherence": {"a1": "coh_1", "a2": "coh_2"}}``).
LONG  one row per item x dimension (x annotator), with a dimension column and a value column.

Modules: :mod:`.readers` (files -> tables, pyarrow's C readers), :mod:`.mapping` (which column holds what, and the
guess), :mod:`.cells` (cells -> values), :mod:`.dataset` (the checks and the Dataset they build), :mod:`.judge_scores`
(judge scores -> runs), :mod:`.api` (the entry points), :mod:`.pairs` (pairwise preferences and verdicts) with
:mod:`.conversations` (MT-Bench's conversation layout). Texts are kept verbatim: nothing is stripped, unescaped or
HTML-escaped here (the UI escapes on display).
"""

from evalcore.importers.api import (
    ImportResult,
    import_table,
    load_user_dataset,
    near_duplicates,
    save_import,
)
from evalcore.importers.cells import REFERENCE_SEPARATOR
from evalcore.importers.judge_scores import (
    METHOD,
    ImportedRun,
    load_run_scores,
    run_id_for,
)
from evalcore.importers.mapping import (
    DEFAULT_GROUP,
    PREFERRED_GROUP,
    ROLES,
    USUAL_SCALES,
    ColumnGuess,
    ColumnMapping,
    JudgeColumn,
    guess_columns,
    implicit_notes,
    kind_prefill,
    label_prefill,
    mapping_from_guesses,
    scale_prefill,
    suggest_mapping,
    usual_scale,
)
from evalcore.importers.problems import (
    MAX_PROBLEMS_SHOWN,
    DatasetValidationError,
    Problem,
)
from evalcore.importers.readers import (
    FORMATS,
    MAX_CELL_BYTES,
    annotator_sources,
    detect_format,
    preview_frame,
    read_table,
)

from evalcore.importers import traces as _traces  # noqa: E402,F401  (registers its layout with the readers)

__all__ = [
    "DEFAULT_GROUP",
    "FORMATS",
    "MAX_CELL_BYTES",
    "MAX_PROBLEMS_SHOWN",
    "METHOD",
    "PREFERRED_GROUP",
    "REFERENCE_SEPARATOR",
    "ROLES",
    "USUAL_SCALES",
    "ColumnGuess",
    "ColumnMapping",
    "DatasetValidationError",
    "ImportResult",
    "ImportedRun",
    "JudgeColumn",
    "Problem",
    "detect_format",
    "guess_columns",
    "import_table",
    "kind_prefill",
    "label_prefill",
    "load_run_scores",
    "load_user_dataset",
    "mapping_from_guesses",
    "near_duplicates",
    "preview_frame",
    "read_table",
    "run_id_for",
    "save_import",
    "scale_prefill",
    "implicit_notes",
    "annotator_sources",
    "suggest_mapping",
    "usual_scale",
]
