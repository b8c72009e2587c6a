"""Scoring: submissions scored against datasets, breakdowns, signatures, human performance."""
