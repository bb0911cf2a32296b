"""Test helpers shared by the package's own tests and by users' tests of their baselines.

Nothing here is imported by ``import mag_dataset``; the helpers import torch and
transformers when called.
"""
