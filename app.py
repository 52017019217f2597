"""JudgeScope: how far can you trust an LLM judge? The Streamlit app (``streamlit run app.py``).

Navigation and sidebar live in ``pages/_nav.py``; each page in ``pages/`` is a thin view over ``evalcore.views``.
The whole view state (dataset, runs, dimension, parse mode, resamples, each page's controls) is written to the URL's
query parameters on every run (``pages/_url.py``), so a copied URL reopens the same view.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # evalcore from the checkout even when the package is not installed
    sys.path.insert(0, str(ROOT))

from pages import _nav  # noqa: E402

if __name__ == "__main__":  # streamlit runs this file as __main__; a multiprocessing child re-imports it as __mp_main__
    _nav.main()
