"""Data and submissions: dataset files, training sets, prediction files, the dev-set download."""
