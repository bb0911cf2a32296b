"""Baseline recipes of the WebMRE / MAG benchmark; run them as ``python -m baselines.<name>``."""
