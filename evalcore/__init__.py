"""evalcore: datasets, LLM judges and meta-evaluation for researchers who use LLMs as judges of generated text.

No Streamlit here: the app's pages are thin views over this library, and so is the CLI (``python -m evalcore``).
"""

from evalcore.model import Dataset, Dimension, Run

__all__ = ["Dataset", "Dimension", "Run"]
__version__ = "0.1.0"
