"""Ray backend of ``mag live-eval`` and ``mag record`` on a local Ray instance the tests start.

The browser tests run the same MiniWoB++ tasks and seeds with ``--backend local`` and
``--backend ray`` and compare what they wrote: the reports (timings aside) and the episode
folders. The scheduler tests crash real Ray workers and hold real per-site locks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from mag_dataset.cli import main  # noqa: E402
from mag_dataset.harness.agents import AgentSpec  # noqa: E402
from mag_dataset.harness.live_eval import LiveEvalConfig, LiveEvalError, run_live_eval  # noqa: E402
from mag_dataset.harness.live_eval.episode import performed_despite_timeout  # noqa: E402
from mag_dataset.harness.ray_backend import Crashed, Dispatcher, RayBackendError, RayOptions  # noqa: E402
from _ray_local import ray_local  # noqa: E402,F401 - the fixture

#: Two MiniWoB++ tasks the heuristic solves (one and two steps); 2 seeds each.
TASKS = ("click-button", "enter-text")


# ----------------------------------------------------------------------------- configuration


def test_ray_flags_and_config_errors_are_one_line(tmp_path, capsys):
    base = ["live-eval", "--agent", "heuristic", "--tasks", "click-button", "--view", "som", "--contract", "J",
            "--out", str(tmp_path / "run"), "--no-progress"]
    cases = [
        (["--backend", "ray", "--workers", "2"], "--workers is for the local backend"),
        (["--ray-address", "auto"], "--ray-address needs --backend ray"),
        (["--ray-max-retries", "5"], "--ray-max-retries needs --backend ray"),
        (["--backend", "ray", "--ray-max-retries", "-1"], "max_retries must be an integer >= 0"),
        (["--backend", "ray", "--ray-address", "127.0.0.1:9"], "cannot reach a Ray cluster at 127.0.0.1:9"),
        (["--backend", "ray", "--ray-address", "nohost"], "is not 'auto', HOST:PORT or ray://HOST:PORT"),
    ]
    for extra, message in cases:
        assert main(base + extra) == 2, extra
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "run").exists(), extra  # nothing written
    rec = ["record", "--out", str(tmp_path / "raw"), "--tasks", "click-button"]
    assert main(rec + ["--backend", "ray", "--ray-address", "127.0.0.1:9"]) == 2
    assert "cannot reach a Ray cluster" in capsys.readouterr().err
    assert main(rec + ["--ray-cpus-per-episode", "2"]) == 2
    assert "--ray-cpus-per-episode needs --backend ray" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(LiveEvalError, match="Ray options need backend 'ray'"):
        LiveEvalConfig(agent=AgentSpec(kind="heuristic"), tasks=("click-button",), episodes=1, view="som",
                       contract="J", out_dir=tmp_path, ray=RayOptions())
    cfg = LiveEvalConfig(agent=AgentSpec(kind="heuristic"), tasks=("click-button",), episodes=1, view="som",
                         contract="J", out_dir=tmp_path, backend="ray")
    assert cfg.ray == RayOptions()  # defaults filled in
    with pytest.raises(RayBackendError, match="cpus_per_episode"):
        RayOptions(cpus_per_episode=0)


def test_importing_the_commands_loads_no_ray():
    code = ("import sys, mag_dataset.harness.live_eval, mag_dataset.harness.ray_backend, "
            "mag_dataset.commands.live_eval, mag_dataset.commands.record, mag_dataset.harness.recorder; "
            "sys.exit(1 if 'ray' in sys.modules else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ----------------------------------------------------------------------------- scheduler


def test_crashed_worker_is_retried_and_a_dead_one_is_counted(ray_local, tmp_path):
    """A worker process that dies is rerun (max_retries); one that always dies becomes Crashed."""
    marker = tmp_path / "crashed-once"

    def crash_once(path: str, value: int) -> int:
        import os as _os

        if not _os.path.exists(path):
            open(path, "w").close()
            _os._exit(1)  # the worker process dies, as when Chromium takes it down
        return value * 10

    def always_crash() -> None:
        import os as _os

        _os._exit(1)

    d = Dispatcher(ray.remote(crash_once), RayOptions(max_retries=1), env={})
    d.submit("a", (str(marker), 4))
    assert list(d.completed()) == [("a", 40)]
    assert marker.exists()

    d = Dispatcher(ray.remote(always_crash), RayOptions(max_retries=0), env={})
    d.submit("b", ())
    [(key, value)] = list(d.completed())
    assert key == "b" and isinstance(value, Crashed) and "WorkerCrashedError" in value.reason, value


def test_an_exception_in_a_task_is_raised_as_itself(ray_local):
    def fail(n: int) -> None:
        raise KeyError(f"no such thing {n}")

    d = Dispatcher(ray.remote(fail), RayOptions(max_retries=3), env={})
    d.submit("x", (1,))
    with pytest.raises(KeyError, match="no such thing 1"):
        list(d.completed())


def test_one_episode_per_site_at_a_time(ray_local, tmp_path):
    """Calls that share an exclusive key (a site) never overlap; the others are not held back."""
    def span(name: str, seconds: float) -> tuple[str, float, float, str]:
        import os as _os
        import time as _time

        t0 = _time.time()
        _time.sleep(seconds)
        return name, t0, _time.time(), _os.environ.get("MAG_RAY_TEST_VAR", "")

    os.environ["MAG_RAY_TEST_VAR"] = "forwarded"
    try:
        from mag_dataset.harness.ray_backend import forwarded_env

        env = forwarded_env()
        assert env["MAG_RAY_TEST_VAR"] == "forwarded"
    finally:
        del os.environ["MAG_RAY_TEST_VAR"]
    d = Dispatcher(ray.remote(span), RayOptions(cpus_per_episode=0.5), env=env)
    jobs = [("forum-1", "forum"), ("forum-2", "forum"), ("forum-3", "forum"), ("wiki-1", "wiki"), ("free", None)]
    for name, site in jobs:
        d.submit(name, (name, 1.0), site)
    spans = {key: value for key, value in d.completed()}
    assert sorted(spans) == sorted(name for name, _ in jobs)
    assert all(v[3] == "forwarded" for v in spans.values())  # the driver's MAG_* variables reached the workers
    forum = sorted((spans[n][1], spans[n][2]) for n in ("forum-1", "forum-2", "forum-3"))
    for (_, end), (start, _) in zip(forum, forum[1:]):
        assert start >= end, forum  # the next forum episode started after the previous one ended


# ----------------------------------------------------------------------------- browser runs


def _same_picture(a: bytes, b: bytes) -> bool:
    """Equal screenshots, up to a text caret: same size, under 1% of the pixels differ.

    A focused input's caret blinks, so a screenshot after typing may catch it on or off.
    """
    import io

    import numpy as np
    from PIL import Image

    x, y = (np.asarray(Image.open(io.BytesIO(d)).convert("RGB")) for d in (a, b))
    return x.shape == y.shape and (x != y).any(axis=-1).mean() < 0.01


def _episode_view(folder: Path) -> dict:
    """An episode folder without its timings: episode.json fields and every image's bytes."""
    ep = json.loads((folder / "episode.json").read_text())
    live = ep["metadata"].get("live_eval")
    if live:
        live.pop("seconds")
    for t in ep["metadata"].get("trajectory", []):
        t.pop("agent_seconds")
        # a click that was performed, then timed out waiting for its acknowledgement (a busy
        # machine), acted: live evaluation's own rule; its error text depends on the load, not on the backend
        if t.get("browsergym_error") and performed_despite_timeout(t["browsergym_error"]):
            t["browsergym_error"] = None
    # final.png is taken after the task ended, while MiniWoB's end-of-episode display changes
    images = {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith("step_")}
    assert images and len(images) == 2 * len(ep["metadata"]["trajectory"])
    return {"episode": ep, "images": images}


def _assert_same_episode(a: Path, b: Path) -> None:
    x, y = _episode_view(a), _episode_view(b)
    assert x["episode"] == y["episode"], a.name
    assert sorted(x["images"]) == sorted(y["images"]), a.name
    for name in x["images"]:
        assert _same_picture(x["images"][name], y["images"][name]), f"{a.name}/{name}"


def _report_view(report: dict) -> dict:
    r = {k: v for k, v in report.items() if k != "wall_seconds"}
    r["episodes"] = [{k: v for k, v in e.items() if k != "seconds"} for e in report["episodes"]]
    return r


@pytest.mark.browser
@pytest.mark.slow
def test_live_eval_ray_gives_the_local_report(ray_local, tmp_path, capsys, chromium):
    """Same tasks and seeds: `--backend ray` writes the report and episodes `--backend local` writes."""
    local = run_live_eval(LiveEvalConfig(agent=AgentSpec(kind="heuristic"), tasks=TASKS, episodes=2, view="som",
                                         contract="J", out_dir=tmp_path / "local", max_steps=4, progress=False),
                          log=lambda s: None)
    out = tmp_path / "ray"
    assert main(["live-eval", "--agent", "heuristic", "--tasks", ",".join(TASKS), "--episodes", "2", "--view", "som",
                 "--contract", "J", "--max-steps", "4", "--out", str(out), "--backend", "ray", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert len([line for line in captured.err.splitlines() if ": success (" in line or ": failure (" in line]) == 4
    report = json.loads((out / "report.json").read_text())
    assert report["overall"]["episodes"] == 4 and report["overall"]["errors"] == 0
    assert report["overall"]["successes"] >= 3, report["episodes"]  # the heuristic solves these
    assert [(e["task"], e["seed"]) for e in report["episodes"]] == \
           [(f"miniwob.{t}", s) for t in TASKS for s in (0, 1)]  # report order, whatever finished first
    assert _report_view(report) == _report_view(local)
    names = sorted(p.name for p in (out / "episodes").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "local" / "episodes").iterdir())
    assert names == sorted(f"{t}.seed-{s}" for t in TASKS for s in (0, 1))
    for name in names:
        _assert_same_episode(out / "episodes" / name, tmp_path / "local" / "episodes" / name)


@pytest.mark.browser
@pytest.mark.slow
def test_record_ray_writes_the_same_episodes(ray_local, tmp_path, capsys, chromium):
    """`mag record --backend ray` writes the corpus the local recorder writes (a text caret aside)."""
    for backend in ("local", "ray"):
        assert main(["record", "--out", str(tmp_path / backend), "--tasks", *TASKS, "--episodes", "1",
                     "--backend", backend]) == 0
        assert "recorded 2 episodes" in capsys.readouterr().out

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    local, remote = files(tmp_path / "local"), files(tmp_path / "ray")
    assert len([f for f in local if f.endswith("episode.json")]) == 2
    assert "corpus.json" in local
    assert sorted(remote) == sorted(local)
    for name in local:
        if name.endswith(".png"):
            assert _same_picture(remote[name], local[name]), name
        elif name == "corpus.json":  # the splits byte for byte; the stage record but for the content
            # fingerprint after `record`, which hashes the screenshots' bytes (a text caret may differ)
            def unprinted(data: bytes) -> dict:
                doc = json.loads(data)
                assert [e["stage"] for e in doc["stages"]] == ["record"]
                doc["stages"] = [{**e, "fingerprint": None} for e in doc["stages"]]
                return doc

            assert unprinted(remote[name]) == unprinted(local[name])
        else:  # episode.json (actions, candidates, guides, seeds): byte for byte
            assert remote[name] == local[name], name


@pytest.mark.browser
def test_endpoint_agent_on_ray_gets_its_key_and_a_refused_key_stops_the_run(ray_local, tmp_path, capsys, chromium,
                                                                            monkeypatch):
    """The agent's API-key variable reaches the Ray workers; a 401 there stops the run with one line."""
    from stub_openai import StubOpenAI

    finish = json.dumps({"action": {"type": "finish"}, "guide": "Done."})
    # set after ray.init: the workers can only have it from the driver's forwarding
    monkeypatch.setenv("RAYTEST_API_KEY", "secret")
    base = ["live-eval", "--api-key-env", "RAYTEST_API_KEY", "--tasks", "click-button", "--view", "som",
            "--contract", "J", "--max-steps", "2", "--backend", "ray", "--no-progress"]
    with StubOpenAI(responder=lambda body: finish, require_key="secret") as stub:
        agent = f"openai:m@{stub.base_url}"
        assert main(base + ["--agent", agent, "--out", str(tmp_path / "ok")]) == 0
        assert stub.count == 1
        report = json.loads((tmp_path / "ok" / "report.json").read_text())
        assert report["episodes"][0]["ended_by"] == "finish" and report["overall"]["errors"] == 0
        capsys.readouterr()
        monkeypatch.setenv("RAYTEST_API_KEY", "wrong")
        assert main(base + ["--agent", agent, "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "agent openai:m" in err and "Traceback" not in err, err
    assert not (tmp_path / "refused" / "report.json").exists()
