"""``mag publish``: dry run lists exactly the built files and the two Spaces' files; clear errors
without token or network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.builder import BUILD_INFO_FILE
from mag_dataset.cli import main
from mag_dataset.dataset import bundled_dataset
from mag_dataset.publish import PublishError, publish_folder, upload_plan


@pytest.fixture()
def copy(built, tmp_path) -> Path:
    import shutil

    return Path(shutil.copytree(built, tmp_path / "webmre"))


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_dry_run_lists_exactly_the_built_files(built, capsys):
    rc = main(["publish", "--repo-id", "mag/webmre", "--dataset", str(built), "--dry-run", "--only", "dataset"])
    out = capsys.readouterr().out
    assert rc == 0
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert listed == _files(built)
    assert len(listed) == 8 and sum(name.endswith(".parquet") for name in listed) == 4 and "eval.yaml" in listed
    assert "https://huggingface.co/datasets/mag/webmre" in out and "spaces/" not in out
    assert "8 files" in out and "dry run: nothing uploaded" in out
    plan = upload_plan(built)
    assert [f.path for f in plan] == listed
    assert all(f.size == (built / f.path).stat().st_size for f in plan)


def test_hidden_files_are_never_uploaded(copy):
    (copy / ".cache").mkdir()
    (copy / ".cache" / "lock").write_text("x")
    assert ".cache/lock" not in [f.path for f in upload_plan(copy)]
    assert len(upload_plan(copy)) == 8


def test_a_modified_build_is_refused(copy, capsys):
    shard = copy / "som" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes() + b"\0")
    rc = main(["publish", "--repo-id", "mag/webmre", "--dataset", str(copy), "--dry-run"])
    assert rc == 2
    assert capsys.readouterr().err.strip() == (
        f"mag publish: error: {copy}: som/test-00000-of-00001.parquet does not match its sha256 in checksums.sha256"
    )


def test_an_unlisted_file_is_refused(copy):
    (copy / "som" / "extra-00000-of-00001.parquet").write_bytes(b"PAR1")
    with pytest.raises(PublishError, match="som/extra-00000-of-00001.parquet is not listed in checksums.sha256"):
        upload_plan(copy)


def test_a_folder_that_is_not_a_build_is_refused(tmp_path, capsys):
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    assert main(["publish", "--repo-id", "mag/webmre", "--dataset", str(tmp_path), "--dry-run"]) == 2
    assert "is not a built dataset folder: README.md is missing (run `mag build` first)" in capsys.readouterr().err


def test_a_file_or_a_missing_folder_is_refused(tmp_path):
    (tmp_path / "webmre.tar").write_bytes(b"x")
    with pytest.raises(PublishError, match=r"webmre.tar is not a folder$"):
        upload_plan(tmp_path / "webmre.tar")
    with pytest.raises(PublishError, match=r"^dataset folder not found: .*missing$"):
        upload_plan(tmp_path / "missing")


def test_bad_repo_id(built, capsys):
    assert main(["publish", "--repo-id", "webmre", "--dataset", str(built), "--dry-run"]) == 2
    assert "--repo-id must look like owner/name, got 'webmre'" in capsys.readouterr().err


def _publish_subprocess(folder: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    clean.update(HF_HOME=str(tmp_path / "hf-home"), **env)  # no stored credential there
    return subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "publish", "--repo-id", "mag/webmre", "--dataset", str(folder)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_token_gives_a_clear_message(built, tmp_path):
    r = _publish_subprocess(built, tmp_path, HF_HUB_OFFLINE="0", HF_ENDPOINT="http://127.0.0.1:9")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "mag publish: error: no Hugging Face token found: set HF_TOKEN or run `hf auth login`, then retry"
    assert "Traceback" not in r.stderr


def test_offline_mode_gives_a_clear_message(built, tmp_path):
    r = _publish_subprocess(built, tmp_path, HF_TOKEN="hf_notarealtoken", HF_HUB_OFFLINE="1")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "mag publish: error: the Hub is unreachable: HF_HUB_OFFLINE is set; unset it to publish"


def test_no_network_gives_a_clear_message(built, tmp_path):
    with socket.socket() as s:  # a local port with nothing listening: connection refused, no traffic out
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    r = _publish_subprocess(built, tmp_path, HF_TOKEN="hf_notarealtoken", HF_HUB_OFFLINE="0", HF_ENDPOINT=endpoint)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().startswith(f"mag publish: error: cannot reach the Hub at {endpoint} (no network?)")
    assert "Traceback" not in r.stderr


def test_library_call_without_token_raises_publish_error(built, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    with pytest.raises(PublishError, match="no Hugging Face token found"):
        publish_folder(built, "mag/webmre")


def test_dry_run_into_a_new_folder_writes_the_bundled_build(tmp_path, capsys):
    target = tmp_path / "to-upload"
    assert main(["publish", "--repo-id", "mag/webmre", "--dataset", str(target), "--dry-run", "--only", "dataset"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert listed == _files(target) and len(listed) == 8
    assert f"copying the bundled sample corpus's build into {target}" in out
    assert _files(target) == _files(bundled_dataset())  # the cached build, whole (built once per machine)
    assert (target / BUILD_INFO_FILE).read_bytes() == (bundled_dataset() / BUILD_INFO_FILE).read_bytes()


def test_upload_sends_exactly_the_plan_to_a_dataset_repo(built, monkeypatch):
    # Wiring only (no Hub here): the real HfApi methods are replaced by recorders.
    import huggingface_hub

    calls = []

    class Commit:
        commit_url = "https://huggingface.co/datasets/mag/webmre/commit/abc"

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, repo_id, **kw: calls.append(("create", repo_id, kw)))
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda self, **kw: calls.append(("upload", kw)) or Commit())
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_file", lambda self, **kw: calls.append(("file", kw)) or Commit())
    url = publish_folder(built, "mag/webmre", token="hf_notarealtoken")
    assert url == Commit.commit_url
    assert calls[0] == ("create", "mag/webmre", {"repo_type": "dataset", "exist_ok": True, "private": False})
    kind, kw = calls[1]
    assert kind == "upload" and kw["repo_type"] == "dataset" and kw["folder_path"] == str(built)
    assert sorted(kw["allow_patterns"] + ["eval.yaml"]) == _files(built)  # eval.yaml goes in a commit of its own
    assert kw["delete_patterns"] == ["som/*", "coord/*"]  # shards of an older build are removed
    assert "raw fingerprint" in kw["commit_message"]
    kind, kw = calls[2]
    assert kind == "file" and kw["path_in_repo"] == "eval.yaml" and kw["repo_type"] == "dataset"
    assert kw["path_or_fileobj"] == str(built / "eval.yaml") and len(calls) == 3


# --------------------------------------------------------------------------- Spaces


def _sections(out: str) -> dict[str, list[str]]:
    """Dry-run output split by upload: its header line -> the listed paths."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("upload to "):
            current = line.split()[2]
            sections[current] = []
        elif line.startswith("  ") and current is not None:
            sections[current].append(line.split()[0])
    return sections


def _package_files() -> list[str]:
    import mag_dataset

    pkg = Path(mag_dataset.__file__).parent
    return sorted(
        f"mag_dataset/{p.relative_to(pkg).as_posix()}" for p in pkg.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        and not any(part.startswith(".") for part in p.relative_to(pkg).parts)
    )


def test_dry_run_lists_the_dataset_and_both_spaces(built, capsys):
    from mag_dataset.publish import repository_root

    assert main(["publish", "--repo-id", "mag/webmre", "--dataset", str(built), "--dry-run"]) == 0
    out = capsys.readouterr().out
    sections = _sections(out)
    assert list(sections) == [
        "https://huggingface.co/datasets/mag/webmre",
        "https://huggingface.co/spaces/mag/webmre_metric",
        "https://huggingface.co/spaces/mag/webmre-leaderboard",
    ]
    assert sections["https://huggingface.co/datasets/mag/webmre"] == _files(built)
    package = _package_files()
    assert len(package) > 100 and "mag_dataset/scoring/__init__.py" in package and "mag_dataset/hub_eval.py" in package
    root = repository_root()
    metric = sorted(p.name for p in (root / "loaders/webmre_metric").iterdir() if p.is_file())
    board = sorted(p.name for p in (root / "leaderboard").iterdir() if p.is_file())
    assert sections["https://huggingface.co/spaces/mag/webmre_metric"] == sorted(metric + package)
    assert sections["https://huggingface.co/spaces/mag/webmre-leaderboard"] == sorted(board + package)
    assert {"README.md", "app.py", "requirements.txt"} <= set(metric) & set(board)
    assert (
        "secrets to set in the Space settings (never uploaded): MAG_BOARD_GOLD, MAG_BOARD_GOLD_TOKEN, "
        "MAG_BOARD_SYNC_REPO, MAG_BOARD_SYNC_TOKEN, MAG_BOARD_ADMINS"
    ) in out
    assert out.strip().endswith("dry run: nothing uploaded")


def test_space_plans_carry_front_matter_and_the_package_dependencies():
    import tomllib

    from mag_dataset.publish import repository_root, space_plan

    core = tomllib.loads((repository_root() / "pyproject.toml").read_text())["project"]["dependencies"]
    for kind in ("metric", "leaderboard"):
        plan = space_plan(kind, f"mag/{kind}")
        assert plan.front_matter["sdk"] == "gradio" and plan.front_matter["app_file"] == "app.py"
        files = {f.path: f.data for f in plan.files}
        req = files["requirements.txt"].decode().splitlines()
        assert all(r in req for r in core), kind
        assert not any(line.split("=")[0].strip().lower() in ("mag_dataset", "mag-dataset") for line in req)
        names = [line.split("[")[0].split(">")[0].split("=")[0].strip().lower() for line in req if line and not line.startswith("#")]
        assert len(names) == len(set(names)), names
        # the package travels as the exact source that runs here
        import mag_dataset

        assert files["mag_dataset/scoring/__init__.py"] == (Path(mag_dataset.__file__).parent / "scoring" / "__init__.py").read_bytes()
    assert "evaluate>=0.4.6" in {f.path: f.data for f in space_plan("metric", "m/x").files}["requirements.txt"].decode()


def _fake_checkout(tmp_path: Path) -> Path:
    import shutil

    from mag_dataset.publish import repository_root

    root = repository_root()
    dst = tmp_path / "checkout"
    shutil.copytree(root / "leaderboard", dst / "leaderboard")
    shutil.copytree(root / "loaders", dst / "loaders")
    (dst / "mag_dataset").mkdir()
    (dst / "mag_dataset" / "__init__.py").write_text('__version__ = "0.0.0"\n')
    shutil.copy(root / "pyproject.toml", dst / "pyproject.toml")
    return dst


def test_a_token_in_a_space_file_is_refused(tmp_path):
    from mag_dataset.publish import space_plan

    root = _fake_checkout(tmp_path)
    (root / "leaderboard" / "notes.txt").write_text("HF_TOKEN=hf_" + "a1B2" * 9 + "\n")
    with pytest.raises(PublishError, match=r"^notes.txt holds something shaped like a Hugging Face token; refusing"):
        space_plan("leaderboard", "mag/board", root=root)
    assert [f.path for f in space_plan("metric", "mag/m", root=root).files] == [
        "README.md", "app.py", "mag_dataset/__init__.py", "requirements.txt", "webmre_metric.py"
    ]


def test_a_space_readme_without_gradio_front_matter_is_refused(tmp_path):
    from mag_dataset.publish import space_plan

    root = _fake_checkout(tmp_path)
    readme = root / "loaders" / "webmre_metric" / "README.md"
    readme.write_text(readme.read_text().replace("sdk: gradio", "sdk: docker", 1))
    with pytest.raises(PublishError, match="the front matter must say sdk: gradio, got 'docker'"):
        space_plan("metric", "mag/m", root=root)
    readme.write_text("# no front matter\n")
    with pytest.raises(PublishError, match="has no YAML front matter"):
        space_plan("metric", "mag/m", root=root)
    with pytest.raises(PublishError, match="run mag publish from a clone of the repository"):
        space_plan("metric", "mag/m", root=tmp_path / "nowhere")


def test_bad_space_ids_and_only(built, capsys):
    assert main(["publish", "--repo-id", "mag/webmre", "--metric-space", "metric", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == "mag publish: error: --metric-space must look like owner/name, got 'metric'"
    assert main(["publish", "--repo-id", "mag/webmre", "--only", "leaderboard", "--leaderboard-space", "me/board", "--dry-run"]) == 0
    assert list(_sections(capsys.readouterr().out)) == ["https://huggingface.co/spaces/me/board"]


# --------------------------------------------------------------------------- against a local fake of the Hub API
# No Hub is reachable here: huggingface_hub's real client talks HTTP to tests/_fake_hub.py.

FAKE_TOKEN = "hf_" + "Fake0Token1For2Tests3Only4x" + "y" * 8


def _publish_to(hub, tmp_path: Path, *argv: str, token: str = FAKE_TOKEN) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    clean.update(HF_HOME=str(tmp_path / "hf-home"), HF_ENDPOINT=hub.endpoint, HF_TOKEN=token, HF_HUB_OFFLINE="0",
                 HF_HUB_DISABLE_XET="1")
    return subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "publish", "--repo-id", "mag/webmre", *argv],
        env=clean, capture_output=True, text=True, timeout=300,
    )


def test_publish_sends_the_dataset_and_both_spaces_through_huggingface_hub(built, tmp_path):
    from _fake_hub import FakeHub, FakeRepo

    from mag_dataset.publish import space_plan

    with FakeHub(FAKE_TOKEN) as hub:
        # an earlier deployment left a module the package no longer has: the new commit deletes it
        hub.repos[("space", "mag/webmre_metric")] = FakeRepo(
            "space", "mag/webmre_metric", {}, files={"mag_dataset/gone.py": b"x = 1\n", "README.md": b"old"}
        )
        r = _publish_to(hub, tmp_path, "--dataset", str(built))
        assert r.returncode == 0, r.stderr
    assert all(hub.authorized) and len(hub.authorized) >= 10
    dataset = hub.repos[("dataset", "mag/webmre")]
    assert dataset.files == {f: (built / f).read_bytes() for f in _files(built)}
    assert [c["added"] for c in dataset.commits] == [[f for f in _files(built) if f != "eval.yaml"], ["eval.yaml"]]
    for kind, repo_id in (("metric", "mag/webmre_metric"), ("leaderboard", "mag/webmre-leaderboard")):
        repo = hub.repos[("space", repo_id)]
        plan = {f.path: f.data for f in space_plan(kind, repo_id).files}
        assert set(repo.files) == set(plan), set(repo.files) ^ set(plan)
        for name in ("README.md", "app.py", "requirements.txt", "mag_dataset/scoring/__init__.py", "mag_dataset/publish.py"):
            assert repo.files[name] == plan[name], name
        assert not any(FAKE_TOKEN.encode() in data for data in repo.files.values())  # the token is never a file
        assert len(repo.commits) == 1 and repo.commits[0]["summary"].startswith(f"Deploy the WebMRE {kind} Space")
    metric = hub.repos[("space", "mag/webmre_metric")]
    assert metric.commits[0]["deleted"] == ["mag_dataset/gone.py"] and "mag_dataset/gone.py" not in metric.files
    created = hub.repos[("space", "mag/webmre-leaderboard")].create_body
    assert (created["type"], created["sdk"], created["name"], created["organization"]) == ("space", "gradio", "webmre-leaderboard", "mag")
    assert f"published: {hub.endpoint}/spaces/mag/webmre-leaderboard/commit/" in r.stdout
    assert "now set the secrets of https://huggingface.co/spaces/mag/webmre-leaderboard: MAG_BOARD_GOLD," in r.stdout


def test_a_refused_eval_yaml_leaves_the_dataset_uploaded_and_says_why(built, tmp_path):
    from _fake_hub import FakeHub

    with FakeHub(FAKE_TOKEN, reject={"eval.yaml": "Invalid eval.yaml: evaluation_framework 'webmre' is not supported"}) as hub:
        r = _publish_to(hub, tmp_path, "--dataset", str(built), "--only", "dataset")
    assert r.returncode == 2
    err = r.stderr.strip()
    assert err.startswith(f"mag publish: error: the dataset is uploaded ({hub.endpoint}/datasets/mag/webmre/commit/")
    assert "(HTTP 400): Invalid eval.yaml: evaluation_framework 'webmre' is not supported;" in err
    assert err.endswith("and 'webmre' must be added there first") and "\n" not in err
    assert sorted(hub.repos[("dataset", "mag/webmre")].files) == [f for f in _files(built) if f != "eval.yaml"]


def test_a_rejected_token_is_named_not_taken_for_a_network_failure(built, tmp_path):
    from _fake_hub import FakeHub

    with FakeHub(FAKE_TOKEN) as hub:
        r = _publish_to(hub, tmp_path, "--dataset", str(built), "--only", "dataset", token="hf_" + "w" * 34)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "mag publish: error: the Hub rejected the token for mag/webmre (HTTP 401): check HF_TOKEN / `hf auth login`"
    )
    assert hub.repos == {}
