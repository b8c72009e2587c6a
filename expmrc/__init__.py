"""expmrc: score, reproduce and improve explainable machine reading comprehension (ExpMRC)."""

__version__ = "0.1.0"
