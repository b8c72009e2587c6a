"""Features: windows and labels for the models, and their cache."""
