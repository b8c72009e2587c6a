"""Helpers the tests import: tiny models and datasets, shared paths and skips."""
