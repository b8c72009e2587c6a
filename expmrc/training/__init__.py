"""Training and run directories: flags, the training loop, the baseline runs and their records."""
