"""Decoding: model outputs back to answer and evidence texts."""
