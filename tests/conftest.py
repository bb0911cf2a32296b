"""Shared test setup: offline Hub, the system Chromium for browser tests, and shared fixtures.

Fixtures here are the ones several test modules need: the synthetic corpus and its build
(:mod:`synthetic_raw`, one per worker), a tiny random VLM, and the forum site served for a
module. Fixtures of one module stay in that module.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def chromium_path() -> str | None:
    for p in (os.environ.get("MAG_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if p and os.path.exists(p):
            return p
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    path = chromium_path()
    if path is None:
        pytest.fail("Debian chromium is required for browser tests (apt-get install -y chromium)")
    return path


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory):
    """Folder of a tiny random-init Qwen3.5-style VLM (built once per test worker, offline)."""
    from mag_dataset.testing.tiny_vlm import build_tiny_qwen35

    return build_tiny_qwen35(tmp_path_factory.mktemp("tiny_vlm") / "model", seed=0)


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory) -> tuple[Path, dict]:
    """The default synthetic raw corpus (:func:`synthetic_raw.make_corpus`: 5 templates x 2 seeds,
    ``corpus.json`` with split seed 7) and its manifest, once per worker.

    Shared by every test of the worker: read it, or copy it before editing.
    """
    from synthetic_raw import make_corpus

    root = tmp_path_factory.mktemp("synthetic") / "raw"
    return root, make_corpus(root)


@pytest.fixture(scope="session")
def built(synthetic_corpus, tmp_path_factory) -> Path:
    """The synthetic corpus built by :func:`mag_dataset.builder.build_dataset` (both views), once per worker.

    Shared by every test of the worker: read it, or copy it before editing.
    """
    from mag_dataset.builder import build_dataset

    return build_dataset(synthetic_corpus[0], tmp_path_factory.mktemp("built") / "webmre", progress=False)


@pytest.fixture(scope="module")
def forum():
    """The forum site (Spirit) set up and served on 127.0.0.1 for one test module, stopped after it.

    Module-scoped on purpose: each forum module starts from the seeded site and stops what it
    served, so modules of the ``site-forum`` xdist group run in one worker in any order (one of
    them stops the forum as a test) without serving each other a used or stopped site.
    """
    from mag_dataset.sites import manager
    from mag_dataset.sites import site as get_site

    s = get_site("forum")
    s.setup(print)
    manager.serve(s)
    yield s
    manager.stop(s)


def site_expert_seeds(first: int = 0) -> tuple[int, ...]:
    """Seeds each site template's expert is recorded on in the site tests.

    One seed by default, so the whole suite fits CI's budget on 2 cores (an expert episode
    costs 10-100 s there); ``MAG_SITE_EXPERT_SEEDS=3`` runs the three seeds of the sites
    issue's acceptance check (every template's expert succeeds on 3 seeds).
    """
    n = int(os.environ.get("MAG_SITE_EXPERT_SEEDS", "1"))
    return tuple(range(first, first + n))


def site_browser():
    """A context manager giving the system Chromium through BrowserGym's process-wide Playwright.

    A second ``sync_playwright()`` in a process where BrowserGym already started its own fails
    ("Sync API inside the asyncio loop"); test files share worker processes, so the site tests
    launch their own browser this way.
    """
    import contextlib

    @contextlib.contextmanager
    def _browser():
        import browsergym.core

        from mag_dataset.live.env import chromium_executable

        browser = browsergym.core._get_global_playwright().chromium.launch(executable_path=chromium_executable())
        try:
            yield browser
        finally:
            browser.close()

    return _browser()
