"""Shared test setup: offline Hub, the system Chromium for browser tests, and shared fixtures.

Fixtures here are the ones several test modules need: the synthetic corpus and its build
(:mod:`synthetic_raw`, one per worker), a tiny random VLM, and the forum site served for a
module. Fixtures of one module stay in that module.

Two rules of the whole run live here too:

* The sites are the test run's own (:mod:`_site_env`: their own home and ports), so a user's
  ``mag sites serve`` is never reset or stopped by the suite.
* **No silent skips** under ``scripts/test.sh`` (it sets ``MAG_TEST_STRICT=1``; so does
  ``CI=true``): a skipped test, or a module skipped at import (a missing optional dependency),
  is reported as a failure, except tests marked ``gpu`` (their skip depends on a GPU or vLLM
  being present). The summary prints how many tests were skipped and why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from _site_env import apply_defaults

apply_defaults()


def _serialise_ast_parse() -> None:
    """Work around CPython gh-106905 (fixed in 3.11.8 and 3.12.2), the suite's old pytest INTERNALERROR.

    Before those releases the AST constructor kept its recursion depth in one global
    struct: two threads converting an AST at once (pytest formatting a failure while a
    server thread in the worker formats a traceback, whose caret anchors call ``ast.parse``
    on 3.11) corrupt it, and every later ``ast.parse`` in that process raises ``SystemError:
    AST constructor recursion depth mismatch``; pytest then stops with INTERNALERROR. The
    CPU torch wheel this project installs is built for 3.11, and the machine's 3.11 is 3.11.7,
    so the suite serialises ``ast.parse`` (every Python-level caller goes through it:
    pytest's assertion rewriting and tracebacks, ``traceback``, ``inspect``).
    """
    import ast
    import sys
    import threading

    if sys.version_info >= (3, 12, 2) or (3, 11, 8) <= sys.version_info < (3, 12):
        return
    parse, lock = ast.parse, threading.RLock()

    def locked_parse(*args, **kwargs):
        with lock:
            return parse(*args, **kwargs)

    locked_parse.__wrapped__ = parse
    ast.parse = locked_parse


_serialise_ast_parse()
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def strict() -> bool:
    """Whether a skip must fail the run (``MAG_TEST_STRICT=1``, or ``CI=true``)."""
    return os.environ.get("MAG_TEST_STRICT") == "1" or os.environ.get("CI", "").lower() == "true"


def _skip_allowed(item) -> bool:
    return item is not None and item.get_closest_marker("gpu") is not None


def _fail_skip(report, where: str) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"{where} was skipped ({reason}), and skips fail under scripts/test.sh "
                       "(MAG_TEST_STRICT=1 / CI=true): install what it needs (`pip install -e \".[all]\"`) "
                       "or mark the test `gpu` if only a GPU machine can run it")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if strict() and report.skipped and not _skip_allowed(item) and not hasattr(report, "wasxfail"):
        _fail_skip(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if strict() and report.skipped:  # a module-level importorskip / pytest.skip(allow_module_level=True)
        _fail_skip(report, f"module {collector.nodeid}")


def pytest_configure(config):
    """pytest 9.2 keeps node ids in ``Node._id``, where pytest-xdist 3.8's ``--dist loadgroup``
    cannot add the group: it then groups nothing, silently (the dev extra pins pytest < 9.2)."""
    from packaging.version import Version

    controller = not hasattr(config, "workerinput")
    if controller and config.getoption("dist", None) == "loadgroup" and Version(pytest.__version__) >= Version("9.2"):
        raise pytest.UsageError(f"--dist loadgroup does not group tests under pytest {pytest.__version__} (its node "
                                "ids have no room for xdist's group): install the pytest the dev extra pins, "
                                "pip install -e '.[dev]'")
    # the browser tests that drive Playwright themselves (the leaderboard, annotation) get the
    # package's cheap per-call stack capture, as its own browsers do (mag_dataset.live.pw_stack)
    from mag_dataset.live import pw_stack

    pw_stack.install()


#: Seconds each slow module's tests took in a CI run of scripts/test.sh (2 cores; rounded). The
#: collection puts the longest work first (by module, or by xdist group: the sum of its
#: modules), and scripts/test.sh passes ``--no-loadscope-reorder`` so xdist hands the modules out
#: in that order: longest first, so no worker is left alone with a long module at the end while
#: the other idles. Modules not listed are quick and keep their order, after these.
MODULE_SECONDS: dict[str, int] = {
    "test_site_tracker": 295, "test_site_shop": 294, "test_site_wiki": 255, "test_leaderboard_server": 243,
    "test_site_forum": 204, "test_ray_live": 124, "test_live_record": 103, "test_importer_runs": 99,
    "test_leaderboard_board": 87, "test_live_eval": 84, "test_dataset_load": 76, "test_site_recapture": 74,
    "test_publish": 71, "test_leaderboard_hostile": 71, "test_site_trace_import": 70, "test_importer": 66,
    "test_ray_infer": 63, "test_importer_hostile": 60, "test_annotation": 56, "test_coords": 46, "test_audit": 40,
    "test_score_cli": 38, "test_compare": 36, "test_baselines_grpo_distributed": 35, "test_leaderboard_app": 33,
    "test_leaderboard_integrity": 26, "test_consistency": 26, "test_baselines_gpu_check": 25, "test_parsing": 23,
    "test_baselines_mediation": 18, "test_leaderboard_compare": 17, "test_builder": 16, "test_inspect_task": 13,
    "test_baselines_sft": 12, "test_site_reproducible": 12, "test_baselines_grpo": 12,
}


def _longest_first(items: list) -> None:
    def scope(item) -> str:  # what xdist hands out whole: an xdist group, else a module
        group = item.get_closest_marker("xdist_group")
        return f"group:{group.args[0]}" if group and group.args else item.module.__name__

    modules: dict[str, set[str]] = {}
    for item in items:
        modules.setdefault(scope(item), set()).add(item.module.__name__.rsplit(".", 1)[-1])
    seconds = {key: sum(MODULE_SECONDS.get(m, 0) for m in mods) for key, mods in modules.items()}
    items.sort(key=lambda item: -seconds[scope(item)])  # stable: within a scope, and among quick ones, the order stays


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Order the work longest first (:data:`MODULE_SECONDS`); under ``--dist loadgroup``, prove
    the grouping took: the modules of one site must share a worker (scripts/test.sh), or one
    worker resets or stops the site another is using."""
    _longest_first(items)
    if not getattr(config.option, "loadgroup", False):  # set in xdist workers under --dist loadgroup
        return
    lost = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist's --dist loadgroup did not group {len(lost)} tests (first: {lost[0]}); "
                                f"pytest {pytest.__version__} with this xdist keeps no group in the node id: install "
                                "the pytest the dev extra pins")


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.write_line(f"skipped: {len(skipped)}" + ("" if strict() else " (not strict: skips allowed)"))
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"  {n} x {reason}")


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
    served (only a server it started), so modules of the ``site-forum`` xdist group run in one worker in any order (one of
    them stops the forum as a test) without serving each other a used or stopped site.
    """
    from mag_dataset.sites import manager
    from mag_dataset.sites import site as get_site

    s = get_site("forum")
    s.setup(print)
    started = manager.serve(s).started
    yield s
    if started:
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
