"""`mag record` with the bundled corpus' seeds reproduces its episode: same actions, candidates and guides.

Real parts only: the forum (Spirit) served on 127.0.0.1 and the system Chromium through
BrowserGym. One short forum template is recorded twice with the settings of
``scripts/make_corpus.py`` (corpus seed 0, point-only share 0.15, first episode: the bundled
episode's id and seed) and the two recordings are compared step by step: intent, parameters,
candidates, guides and their plans, actions and the BrowserGym actions (click points
included), and with the bundled episode itself. Pixels are not compared (they may differ
with the Chromium build, see :mod:`mag_dataset.harness.recorder`). The drift the bundled
recaptures saw is made again on a reset forum with the same seed and compared.
"""

from __future__ import annotations

import json
import sys
import urllib.parse
from pathlib import Path

import pytest

import mag_dataset
from mag_dataset.cli import main
from mag_dataset.harness.recorder import episode_seed
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


def _record(out: Path) -> object:
    assert main(["record", "--tasks", TASK, "--episodes", "1", "--seed", str(make_corpus.CORPUS_SEED),
                 "--point-only-share", str(make_corpus.POINT_ONLY_SHARE), "--out", str(out)]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return read_episode(folder)


def test_record_reproduces_its_episode(forum, tmp_path):
    """The same seeds give the same episode: recorded twice with the bundled corpus' settings,
    and both the bundled episode as recorded (before ``mag unify`` restored its point-only
    clicks: the restored element id aside, the recorded point is kept)."""
    seed = episode_seed(TASK, 0, make_corpus.CORPUS_SEED)
    bundled = next(ep for ep in read_corpus(RAW) if ep.episode_id == f"{TASK}.seed-{seed}")
    fresh, again = _record(tmp_path / "one"), _record(tmp_path / "two")
    for ep in (fresh, again):
        assert (ep.episode_id, ep.intent, ep.seed) == (bundled.episode_id, bundled.intent, bundled.seed)
        assert ep.metadata["params"] == bundled.metadata["params"]
        assert ep.metadata.get("instantiation_dict") == bundled.metadata.get("instantiation_dict")
        assert len(ep.steps) == len(bundled.steps) >= 2
        for a, b in zip(ep.steps, bundled.steps):
            where = f"{ep.episode_id} step {a.step_index}"
            assert a.candidates == b.candidates, where
            assert (a.image_width, a.image_height) == (b.image_width, b.image_height), where
            assert (a.guide, a.guide_source) == (b.guide, b.guide_source), where
            assert _path(a.url) == _path(b.url), where
            assert a.metadata["browsergym_action"] == b.metadata["browsergym_action"], where
            assert a.metadata.get("recorded_as") == b.metadata.get("recorded_as"), where
            assert a.metadata.get("plan_purpose") == b.metadata.get("plan_purpose"), where
            if b.metadata.get("coordinate_restored"):  # mag unify gave the bundled point its element
                assert a.action.element_id is None and a.action.coordinate == b.action.coordinate, where
            else:
                assert a.action == b.action, where


def test_drift_reproduces_the_bundled_recapture(forum):
    """The bundled episodes were recaptured on a site reset and drifted with the corpus' drift
    seed: the same seed on a reset site makes the same changes (drift included)."""
    bundled = [ep for ep in read_corpus(RAW) if ep.site == "forum"]
    drifts = {json.dumps(ep.metadata["recaptured"]["drift"], sort_keys=True) for ep in bundled}
    assert len(drifts) == 1, drifts  # every forum episode saw the same moved-on forum
    recorded = json.loads(drifts.pop())
    forum.reset()
    try:
        changes = forum.drift(recorded["seed"], recorded["level"])
    finally:
        forum.reset()
    assert changes == recorded["changes"] and sum(changes.values()) > 0
