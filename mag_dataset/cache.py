"""Where mag_dataset keeps its caches: one folder, one environment variable.

Holds the cache-directory rule and nothing else (no cache format: the built sample lives
in :mod:`mag_dataset.dataset`, the LLM answer cache in :mod:`mag_dataset.llm_client`).

The root is ``$MAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/mag_dataset``, else
``~/.cache/mag_dataset``. Below it:

* ``webmre-sample-<fingerprint>/``: the bundled sample, built once (:func:`mag_dataset.dataset.bundled_dataset`);
* ``llm/``: answers of LLM endpoints (guide drafting, the label audit), keyed by request hash.

``MAG_CACHE`` (read by the label audit before ``MAG_CACHE_DIR`` covered it) is still
honoured, with a :class:`DeprecationWarning`, when ``MAG_CACHE_DIR`` is not set; it will
be dropped in a later release.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

#: Environment variable naming the cache root.
CACHE_ENV = "MAG_CACHE_DIR"

#: The label audit's former variable: honoured (with a DeprecationWarning) when CACHE_ENV is unset.
DEPRECATED_CACHE_ENV = "MAG_CACHE"

#: Subfolder of the cache root holding LLM answers.
LLM_SUBDIR = "llm"


def default_cache_dir() -> Path:
    """The cache root: ``$MAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/mag_dataset``, else ``~/.cache/mag_dataset``.

    ``$MAG_CACHE`` stands in for ``$MAG_CACHE_DIR`` when only it is set (deprecated).
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    if os.environ.get(DEPRECATED_CACHE_ENV):
        warnings.warn(f"{DEPRECATED_CACHE_ENV} is deprecated: set {CACHE_ENV} instead (same folder)",
                      DeprecationWarning, stacklevel=2)
        return Path(os.environ[DEPRECATED_CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mag_dataset"


def llm_cache_dir() -> Path:
    """The LLM answer cache: ``llm/`` below :func:`default_cache_dir` (kept out of raw corpora on purpose)."""
    return default_cache_dir() / LLM_SUBDIR


__all__ = ["CACHE_ENV", "DEPRECATED_CACHE_ENV", "LLM_SUBDIR", "default_cache_dir", "llm_cache_dir"]
