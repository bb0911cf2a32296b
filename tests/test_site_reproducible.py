"""`mag record` with the bundled corpus' seeds reproduces its episode: same actions, candidates and guides.

Real parts only: the forum (Spirit) served on 127.0.0.1 and the system Chromium through
BrowserGym. One short forum template is recorded again with the settings of
``scripts/make_corpus.py`` (corpus seed 0, point-only share 0.15, first episode) and compared
with the bundled episode of the same task id, step by step. The bundled episode has since
been through ``mag unify`` (a point-only click got its element back: ``coordinate_restored``)
and ``mag compact`` (WebP screenshots), so those two changes are undone before comparing;
everything else the recorder wrote must be identical. Pixels are not compared (they may
differ with the Chromium build, see :mod:`mag_dataset.live.recorder`).
"""

from __future__ import annotations

import dataclasses
import sys
import urllib.parse
from pathlib import Path

import pytest

import mag_dataset
from mag_dataset.cli import main
from mag_dataset.live.recorder import episode_seed
from mag_dataset.raw import read_corpus, read_episode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import make_corpus  # noqa: E402  (the recording settings of the bundled corpus)

# one xdist worker per site (scripts/test.sh runs this pass with --dist loadgroup): modules that
# serve, reset and stop the same site must not overlap in two workers
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

RAW = Path(mag_dataset.__file__).parent / "data" / "raw"
#: A short forum template whose bundled first episode has a point-only click.
TASK = "sites.forum.topic_author"


def _path(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(("", "", parts.path, parts.query, parts.fragment))


def test_record_reproduces_the_bundled_episode(forum, tmp_path):
    seed = episode_seed(TASK, 0, make_corpus.CORPUS_SEED)
    bundled = next(ep for ep in read_corpus(RAW) if ep.episode_id == f"{TASK}.seed-{seed}")
    assert any(st.metadata.get("recorded_as") == "point_only" for st in bundled.steps)  # both kinds of click
    out = tmp_path / "again"
    assert main(["record", "--tasks", TASK, "--episodes", "1", "--seed", str(make_corpus.CORPUS_SEED),
                 "--point-only-share", str(make_corpus.POINT_ONLY_SHARE), "--out", str(out)]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    fresh = read_episode(folder)
    assert (fresh.episode_id, fresh.intent, fresh.seed) == (bundled.episode_id, bundled.intent, bundled.seed)
    assert fresh.metadata["params"] == bundled.metadata["params"]
    assert len(fresh.steps) == len(bundled.steps)
    for a, b in zip(fresh.steps, bundled.steps):
        where = f"step {a.step_index}"
        assert a.candidates == b.candidates, where
        assert (a.image_width, a.image_height) == (b.image_width, b.image_height), where
        assert (a.guide, a.guide_source) == (b.guide, b.guide_source), where
        # the site may be served on another port (MAG_SITE_FORUM_PORT): compare the path
        assert _path(a.url) == _path(b.url), where
        assert a.metadata["browsergym_action"] == b.metadata["browsergym_action"], where
        expected = b.action
        if b.metadata.get("coordinate_restored"):  # unify restored the element of a bare point
            assert a.metadata["recorded_as"] == "point_only" and a.action.element_id is None, where
            expected = dataclasses.replace(b.action, element_id=None)
        assert a.action == expected, where
        assert a.metadata.get("recorded_as") == b.metadata.get("recorded_as"), where
