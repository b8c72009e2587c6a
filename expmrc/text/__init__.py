"""Text: sentence splitting with character offsets, and a small dense sentence encoder."""
