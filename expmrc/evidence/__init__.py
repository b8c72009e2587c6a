"""Evidence methods and pseudo labels: unsupervised evidence extraction and pseudo training data."""
