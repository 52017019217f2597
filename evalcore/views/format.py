"""How numbers read on screen: p-values, rates, missing cells, and which paper a heading cites.

Pure functions over plain values and frames (no Streamlit): the pages turn ``DisplayTable.formats`` into column
configs. The CSV downloads keep the raw numbers; only what is shown is formatted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import SupportsFloat

import numpy as np
import pandas as pd

from evalcore.model import counted  # re-exported: the one way a sentence of the product says how many

# ------------------------------------------------------------------------------------------------------ sources

# The papers the app follows, by the number the project files them under. Headings cite "Liu et al. 2023, Fig. 2",
# never the bare number, and every page that cites papers ends with this key.
SOURCES: dict[str, tuple[str, str]] = {
    "000": ("Liu et al. 2023",
            "Liu, Iter, Xu, Wang, Xu & Zhu (2023). G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment. "
            "EMNLP 2023."),
    "002": ("Chen et al. 2023",
            "Chen, Wang, Jiang, Zhang & Xu (2023). Exploring the Use of Large Language Models for Reference-Free "
            "Text Quality Evaluation: An Empirical Study. Findings of IJCNLP-AACL 2023."),
    "003": ("Shen et al. 2023",
            "Shen, Cheng, Nguyen, You & Bing (2023). Large Language Models are Not Yet Human-Level Evaluators for "
            "Abstractive Summarization. Findings of EMNLP 2023."),
    "004": ("Fu et al. 2023",
            "Fu, Ng, Jiang & Liu (2023). GPTScore: Evaluate as You Desire. NAACL 2024 (arXiv 2302.04166)."),
    "zhang": ("Zhang et al. 2023",
              "Zhang, Ladhak, Durmus, Liang, McKeown & Hashimoto (2023). Benchmarking Large Language Models for News "
              "Summarization. TACL 2024 (arXiv 2301.13848)."),
    "chiang": ("Chiang & Lee 2023",
               "Chiang & Lee (2023). A Closer Look into Using Large Language Models for Automatic Evaluation. "
               "Findings of EMNLP 2023."),
}


def cite(code: str, where: str = "") -> str:
    """``cite("000", "Fig. 2")`` -> "Liu et al. 2023, Fig. 2": a heading names the paper, not its file number."""
    short = SOURCES[code][0]
    return f"{short}, {where}" if where else short


def sources_key(codes: list[str] | tuple[str, ...]) -> list[str]:
    """The full references of the papers a page cites, in the order given (one line each)."""
    return [f"{SOURCES[c][0]}: {SOURCES[c][1]}" for c in dict.fromkeys(codes)]


# ------------------------------------------------------------------------------------------------------- values


def _missing(x: object) -> bool:
    if x is None or x is pd.NA or x is pd.NaT:
        return True
    try:
        return bool(isinstance(x, (float, np.floating)) and math.isnan(x))
    except TypeError:
        return False


def format_pvalue(p: SupportsFloat | None, *, missing: str = "n/a") -> str:
    """"<0.001" below a thousandth, else three decimals ("0.961", "1.000"); never scientific notation."""
    if p is None or _missing(p):
        return missing
    value = float(p)
    if value < 0.001:
        return "<0.001"
    return f"{min(value, 1.0):.3f}"


def format_rate(x: SupportsFloat | None, *, missing: str = "n/a") -> str:
    """A fraction as a percentage with one decimal: 0.32 -> "32.0%"."""
    if x is None or _missing(x):
        return missing
    return f"{100.0 * float(x):.1f}%"


# ------------------------------------------------------------------------------------------------------- tables


def is_pvalue_column(name: object) -> bool:
    n = str(name).lower()
    if n.endswith("_method"):  # pvalue_method: how the p-value was computed (text)
        return False
    return n in ("p", "pvalue", "p_value", "p-value") or n.startswith("pvalue") or n.startswith("p_value")


def is_rate_column(name: object) -> bool:
    """Columns holding a fraction shown as a percentage (first_position_win_rate, tie_rate, flip_rate, ...), and a
    rate's interval ends (``<rate>_ci_low`` / ``<rate>_ci_high``): one unit for a figure and its interval."""
    return str(name).lower().removesuffix("_ci_low").removesuffix("_ci_high").endswith("rate")


def is_percent_column(name: object) -> bool:
    """Columns already in percent (#CP's "full %", "challenge %"). Not pandas' quantile labels ("25%", "50%",
    "75%" from ``describe()``): those columns hold values on the data's scale (issue 18.7: judge-score quartiles
    read "1.0% 2.0% 4.0%")."""
    n = str(name).strip()
    if n[:-1].replace(".", "", 1).isdigit():
        return False
    return n.endswith("%")


@dataclass
class DisplayTable:
    """A frame ready to show: p-values as text, rates as percent numbers, text cells without None; ``formats``
    holds printf formats for the numeric columns (the page's column config). Missing numbers stay missing: the
    page shows them blank (``st.dataframe(placeholder="")``), never "None"."""

    frame: pd.DataFrame
    formats: dict[str, str] = field(default_factory=dict)

    def as_text(self) -> pd.DataFrame:
        """Every cell as the text a reader sees (formats applied, missing numbers blank): for a static table, which
        takes no column formats."""
        out = self.frame.copy()
        for col, fmt in self.formats.items():
            out[col] = ["" if _missing(v) else fmt % v for v in out[col]]
        return out.astype(object).where(out.notna(), "")


def display_table(frame: pd.DataFrame, *, digits: int = 3) -> DisplayTable:
    """The shown form of a result table.

    * p-value columns: "<0.001" / "0.961" text; a missing p-value -> blank.
    * rate columns (``*rate``): percent with one decimal (the number times 100, format ``%.1f%%``); columns
      already in percent (``* %``) get the same format.
    * other float columns: ``digits`` decimals, or whole numbers (``%d``) when every value is whole.
    * text columns: None/NaN -> "".
    """
    out = frame.copy()
    formats: dict[str, str] = {}
    for col in out.columns:
        s = out[col]
        if is_pvalue_column(col):
            # a p-value that does not exist (a mean of correlations) is blank; the page's caption says why
            out[col] = [format_pvalue(v, missing="") for v in s]
        elif pd.api.types.is_bool_dtype(s):
            continue
        elif is_rate_column(col) and pd.api.types.is_numeric_dtype(s):
            out[col] = s.astype(float) * 100.0
            formats[str(col)] = "%.1f%%"
        elif is_percent_column(col) and pd.api.types.is_numeric_dtype(s):
            formats[str(col)] = "%.1f%%"
        elif pd.api.types.is_integer_dtype(s):
            formats[str(col)] = "%d"
        elif pd.api.types.is_float_dtype(s):
            present = s.dropna()
            whole = len(present) > 0 and bool(np.all(np.mod(present.to_numpy(), 1) == 0))
            formats[str(col)] = "%d" if whole else f"%.{digits}f"
        elif s.isna().any():
            out[col] = ["" if _missing(v) else v for v in s]
    return DisplayTable(frame=out, formats=formats)


# -------------------------------------------------------------------------------------------------------- axes


def integer_dtick(max_count: float, *, max_ticks: int = 6) -> int:
    """A tick step for a count axis: whole numbers only (1, 2, 5, 10, 20, 50, ...), at most ``max_ticks`` steps."""
    if not max_count or max_count <= max_ticks:
        return 1
    step = 1
    while True:
        for m in (1, 2, 5):
            if max_count / (step * m) <= max_ticks:
                return step * m
        step *= 10


# ------------------------------------------------------------------------------------------------------ escaping

_MD_SPECIAL = set("\\`*_{}[]()#+-.!|<>~$:")
# Streamlit's Markdown turns bare URLs ("http://...", "www.x.y") and e-mail addresses into links whatever their
# escaping (it links the rendered text): an invisible word joiner (U+2060) after the scheme's colon, inside "www."
# and after "@" reads the same and is no URL to the autolinker (issue 21, item 7).
_AUTOLINK = re.compile(r"(?i)(:\\?)(?=//)|(www)(?=\\?\.)|(@)")


def esc(text: object) -> str:
    """Dataset-derived text (dimension names, run labels, file names, error messages quoting cells) placed inside
    a Markdown-rendered element: every Markdown/HTML character is backslash-escaped so it shows as typed, and what
    would be autolinked is broken by an invisible word joiner: no image, link, autolink or markup. A view model's
    notes quote user data through this, so the page draws them as they are."""
    escaped = "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))
    return _AUTOLINK.sub(lambda m: m.group(0) + "\u2060", escaped)


def fmt(x: SupportsFloat | str | None, digits: int = 3) -> str:
    """A number as a view model's note or headline writes it: ``digits`` decimals, "n/a"
    when missing."""
    try:
        if x is None or pd.isna(x):
            return "n/a"
        return f"{float(x):.{digits}f}"
    except (TypeError, ValueError):
        return str(x)


# ------------------------------------------------------------------------------------------------------ counts


def consent_label(calls: int, host: str, cost_usd: float | None, reason: str) -> str:
    """The box a paid plan needs ticked (pages/_spending.py): how many requests go where, at what estimated cost, and
    why it asks (evalcore.judge.spending.decide's reason). An unknown price is said as such, never as an amount.
    Escaped: a widget label is drawn as Markdown, and the host is the user's."""
    if cost_usd is None:
        return esc(f"Send {counted(calls, 'request')} to {host} ({reason}, so no cost can be estimated): I confirm")
    cost = f"${cost_usd:,.2f}" if cost_usd >= 1 else f"${cost_usd:.4f}"
    return esc(f"Send {counted(calls, 'request')} to {host} for an estimated {cost} ({reason}): I confirm")
