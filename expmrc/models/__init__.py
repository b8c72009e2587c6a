"""Models: encoders and their checkpoints, and the span and multiple-choice task models."""
