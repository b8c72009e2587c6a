"""Inference: a fine-tuned model predicting questions (the prediction loop, re-prediction, faithfulness)."""
