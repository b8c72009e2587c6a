"""Metrics: the leaderboard's tokenization and F1, the one implementation every score goes through."""
