"""Publishing a built dataset folder to the Hugging Face Hub.

What is uploaded is exactly the built folder's files listed by :func:`upload_plan`: the
dataset card, ``build_info.json``, ``checksums.sha256`` and the Parquet shards of both
views (hidden files are never uploaded). The folder is verified against its checksum
manifest first, so a folder edited after the build is refused. Shards of an earlier
upload that the new build no longer has are deleted in the same commit.

The token is the usual one (``HF_TOKEN`` or the credential stored by ``hf auth login``);
``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` are honoured by ``huggingface_hub``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from mag_dataset.actions import View


class PublishError(Exception):
    """Publishing failed for a reason the user can act on; the message says which."""


@dataclass(frozen=True)
class UploadFile:
    """One file of an upload: its path in the repo, size and sha256."""

    path: str
    size: int
    sha256: str


def upload_plan(folder: str | os.PathLike) -> list[UploadFile]:
    """Verify a built folder and list the files an upload sends, in path order.

    Raises:
        PublishError: the folder is not a complete, unmodified build.
    """
    from mag_dataset.builder import BUILD_INFO_FILE, CARD_FILE, CHECKSUM_FILE, BuildError, verify_checksums

    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder" if folder.exists() else f"dataset folder not found: {folder}")
    for name in (CARD_FILE, BUILD_INFO_FILE, CHECKSUM_FILE):
        if not (folder / name).is_file():
            raise PublishError(f"{folder} is not a built dataset folder: {name} is missing (run `mag build` first)")
    try:
        listed = verify_checksums(folder)
    except BuildError as e:
        raise PublishError(str(e)) from None
    out = []
    for rel in [*listed, CHECKSUM_FILE]:
        data = (folder / rel).read_bytes()
        out.append(UploadFile(rel, len(data), hashlib.sha256(data).hexdigest()))
    return sorted(out, key=lambda f: f.path)


def format_plan(repo_id: str, folder: str | os.PathLike, plan: list[UploadFile]) -> str:
    """A readable listing of an upload plan."""
    lines = [f"upload to https://huggingface.co/datasets/{repo_id} from {folder}:"]
    width = max(len(f.path) for f in plan)
    for f in plan:
        lines.append(f"  {f.path:<{width}}  {f.size:>10,d} B  sha256 {f.sha256[:16]}")
    lines.append(f"{len(plan)} files, {sum(f.size for f in plan):,d} bytes")
    return "\n".join(lines)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Network error classes of the HTTP clients huggingface_hub may use (httpx2, httpx, requests)."""
    import importlib

    out: list[type[BaseException]] = []
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError"), ("requests", "ConnectionError")):
        try:
            out.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            pass
    return tuple(out)


def publish_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    commit_message: str | None = None,
) -> str:
    """Create the dataset repo if needed and upload the built folder in one commit.

    Args:
        folder: a folder written by :func:`mag_dataset.builder.build_dataset`.
        repo_id: the Hub dataset repo, e.g. ``mag/webmre``.
        token: a Hub token; default the usual one (``HF_TOKEN`` / ``hf auth login``).
        private: create the repo as private (only if it does not exist yet).
        commit_message: default names the raw fingerprint of the build.

    Returns:
        The URL of the commit.

    Raises:
        PublishError: no token, no network / offline mode, token rejected, or another
            Hub error, with a message saying which.
    """
    import json

    from huggingface_hub import HfApi, constants, get_token
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    plan = upload_plan(folder)
    token = token or get_token()
    if not token:
        raise PublishError("no Hugging Face token found: set HF_TOKEN or run `hf auth login`, then retry")
    info = json.loads((Path(folder) / "build_info.json").read_text("utf-8"))
    message = commit_message or f"Upload WebMRE build (raw fingerprint {info['raw_fingerprint'][:16]})"
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        commit = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(folder),
            allow_patterns=[f.path for f in plan],
            delete_patterns=[f"{v.value}/*" for v in View],
            commit_message=message,
        )
    except OfflineModeIsEnabled:
        raise PublishError("the Hub is unreachable: HF_HUB_OFFLINE is set; unset it to publish") from None
    except (*_transport_errors(), OSError) as e:
        raise PublishError(f"cannot reach the Hub at {constants.ENDPOINT} (no network?): {e}") from None
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else None
        if status in (401, 403):
            raise PublishError(f"the Hub rejected the token for {repo_id} (HTTP {status}): check HF_TOKEN / `hf auth login`") from None
        raise PublishError(f"the Hub refused the upload to {repo_id}: {e}") from None
    return str(getattr(commit, "commit_url", commit))
