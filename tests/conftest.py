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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup``, prove the grouping took: the modules of one site must share a
    worker (scripts/test.sh), or one worker resets or stops the site another is using."""
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


def process_playwright():
    """The one sync Playwright of this test process (BrowserGym's process-wide instance); never stop it.

    A second ``sync_playwright()`` on the main thread of a process where BrowserGym already
    started its own fails ("Sync API inside the asyncio loop"), and xdist hands a worker modules
    in no fixed order: every browser a test drives on the main thread is launched from this one.
    (A test may still start its own ``sync_playwright()`` on a thread of its own.)
    """
    import browsergym.core

    return browsergym.core._get_global_playwright()


def site_browser():
    """A context manager giving the system Chromium through :func:`process_playwright`."""
    import contextlib

    @contextlib.contextmanager
    def _browser():
        from mag_dataset.live.env import chromium_executable

        browser = process_playwright().chromium.launch(executable_path=chromium_executable())
        try:
            yield browser
        finally:
            browser.close()

    return _browser()


def expert_episode_judged(task_id: str, seed: int, env, tmp_path, finish_noop: bool = False):
    """Record the expert of ``task_id`` on ``seed`` and have WebArena's own evaluators judge it.

    The task's WebArena config (:func:`mag_dataset.sites.webarena.webarena_config`) is read on
    the seeded site; WebArena's ``evaluator_router`` must fail the untouched start page with no
    answer (a no-op) and pass the expert's end page and answer. Templates whose check WebArena
    cannot express (their ``webarena_note``, :func:`~mag_dataset.sites.webarena.inexpressible`)
    are recorded only. ``finish_noop``: the no-op also finishes at once in BrowserGym, whose
    task check must fail it. Returns the :class:`~mag_dataset.harness.recorder.RecordResult`.
    """
    from mag_dataset.harness.recorder import record_episode
    from mag_dataset.sites.webarena import Inexpressible, judge, webarena_config

    env.reset(seed=seed)
    try:
        config = webarena_config(env.unwrapped.task, seed, tmp_path)
    except Inexpressible:
        config = None
    if config is not None:
        passed, reason = judge(config, env.unwrapped.page, None, settle=0)
        assert not passed, f"{task_id} seed {seed}: WebArena's evaluators pass a no-op: {reason}"
    if finish_noop:  # a no-op agent: finish at once
        _, _, terminated, _, info = env.step("send_msg_to_user('done')")
        assert terminated and info["task_info"]["success"] is False, info["task_info"]
    result = record_episode(task_id, seed, env=env)
    assert result.ok, f"{task_id} seed {seed}: {result.reason}"
    if config is not None:
        passed, reason = judge(config, env.unwrapped.page, result.episode.steps[-1].action.answer, settle=0)
        assert passed, f"{task_id} seed {seed}: {reason}"
        if config["eval"]["eval_types"] == ["string_match"]:  # the expert's page with an empty answer fails
            assert not judge(config, env.unwrapped.page, "", settle=0)[0], f"{task_id} seed {seed}: '' passes"
    return result
