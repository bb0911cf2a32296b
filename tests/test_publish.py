"""``mag publish``: dry run lists exactly the built files; clear errors without token or network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mag_dataset.builder import build_dataset
from mag_dataset.cli import main
from mag_dataset.hub import PublishError, publish_folder, upload_plan
from synthetic_raw import make_corpus


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    raw = tmp_path_factory.mktemp("raw") / "raw"
    make_corpus(raw)
    return build_dataset(raw, tmp_path_factory.mktemp("out") / "webmre", progress=False)


@pytest.fixture()
def copy(built, tmp_path) -> Path:
    import shutil

    return Path(shutil.copytree(built, tmp_path / "webmre"))


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_dry_run_lists_exactly_the_built_files(built, capsys):
    rc = main(["publish", "--repo-id", "mag/webmre", "--folder", str(built), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert listed == _files(built)
    assert len(listed) == 7 and sum(name.endswith(".parquet") for name in listed) == 4
    assert "https://huggingface.co/datasets/mag/webmre" in out
    assert "7 files" in out and "dry run: nothing uploaded" in out
    plan = upload_plan(built)
    assert [f.path for f in plan] == listed
    assert all(f.size == (built / f.path).stat().st_size for f in plan)


def test_hidden_files_are_never_uploaded(copy):
    (copy / ".cache").mkdir()
    (copy / ".cache" / "lock").write_text("x")
    assert ".cache/lock" not in [f.path for f in upload_plan(copy)]
    assert len(upload_plan(copy)) == 7


def test_a_modified_build_is_refused(copy, capsys):
    shard = copy / "som" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes() + b"\0")
    rc = main(["publish", "--repo-id", "mag/webmre", "--folder", str(copy), "--dry-run"])
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
    assert main(["publish", "--repo-id", "mag/webmre", "--folder", str(tmp_path), "--dry-run"]) == 2
    assert "is not a built dataset folder: README.md is missing (run `mag build` first)" in capsys.readouterr().err


def test_a_file_or_a_missing_folder_is_refused(tmp_path):
    (tmp_path / "webmre.tar").write_bytes(b"x")
    with pytest.raises(PublishError, match=r"webmre.tar is not a folder$"):
        upload_plan(tmp_path / "webmre.tar")
    with pytest.raises(PublishError, match=r"^dataset folder not found: .*missing$"):
        upload_plan(tmp_path / "missing")


def test_bad_repo_id(built, capsys):
    assert main(["publish", "--repo-id", "webmre", "--folder", str(built), "--dry-run"]) == 2
    assert "--repo-id must look like owner/name, got 'webmre'" in capsys.readouterr().err


def _publish_subprocess(folder: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    clean.update(HF_HOME=str(tmp_path / "hf-home"), **env)  # no stored credential there
    return subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "publish", "--repo-id", "mag/webmre", "--folder", str(folder)],
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
    assert main(["publish", "--repo-id", "mag/webmre", "--folder", str(target), "--dry-run"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert listed == _files(target) and len(listed) == 7
    assert f"building the bundled sample corpus into {target}" in out


def test_upload_sends_exactly_the_plan_to_a_dataset_repo(built, monkeypatch):
    # Wiring only (no Hub here): the real HfApi methods are replaced by recorders.
    import huggingface_hub

    calls = []

    class Commit:
        commit_url = "https://huggingface.co/datasets/mag/webmre/commit/abc"

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, repo_id, **kw: calls.append(("create", repo_id, kw)))
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda self, **kw: calls.append(("upload", kw)) or Commit())
    url = publish_folder(built, "mag/webmre", token="hf_notarealtoken")
    assert url == Commit.commit_url
    assert calls[0] == ("create", "mag/webmre", {"repo_type": "dataset", "exist_ok": True, "private": False})
    kind, kw = calls[1]
    assert kind == "upload" and kw["repo_type"] == "dataset" and kw["folder_path"] == str(built)
    assert kw["allow_patterns"] == [f.path for f in upload_plan(built)] == _files(built)
    assert kw["delete_patterns"] == ["som/*", "coord/*"]  # shards of an older build are removed
    assert "raw fingerprint" in kw["commit_message"]
