"""Publishing a built dataset folder to the Hugging Face Hub.

What is uploaded is exactly the built folder's files listed by :func:`upload_plan`: the
dataset card, ``build_info.json``, ``checksums.sha256`` and the Parquet shards of both
views (hidden files are never uploaded). The folder is verified against its checksum
manifest first, so a folder edited after the build is refused. Shards of an earlier
upload that the new build no longer has are deleted in the same commit.

``eval.yaml`` (the Hub benchmark registration, :mod:`mag_dataset.hub_eval`) goes in a second
commit: the Hub validates it at push time and accepts only registered framework ids, so a
refusal leaves the dataset upload in place and says why.

The two Spaces (:func:`space_plan`): the ``evaluate`` metric Space (``loaders/webmre_metric``)
and the leaderboard Space (``leaderboard/``), each a Gradio Space whose README front
matter comes from its folder, with this package's folder ``mag_dataset/`` beside
``app.py`` (the exact source that scored locally; Space builds install only
``requirements.txt``, so the package is carried, not installed) and a ``requirements.txt``
that lists the package's own dependencies. Secrets are named (:data:`SPACE_SECRETS`), never
uploaded: a file that holds something shaped like a Hugging Face token is refused.

The token is the usual one (``HF_TOKEN`` or the credential stored by ``hf auth login``);
``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` are honoured by ``huggingface_hub``.
"""

from __future__ import annotations

import hashlib
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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

    from huggingface_hub import HfApi, get_token

    plan = upload_plan(folder)
    token = token or get_token()
    if not token:
        raise PublishError("no Hugging Face token found: set HF_TOKEN or run `hf auth login`, then retry")
    info = json.loads((Path(folder) / "build_info.json").read_text("utf-8"))
    message = commit_message or f"Upload WebMRE build (raw fingerprint {info['raw_fingerprint'][:16]})"
    from mag_dataset.hub_eval import EVAL_FILE, EVALUATION_FRAMEWORK

    api = HfApi(token=token)
    with _hub_errors(repo_id):
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        commit = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(folder),
            allow_patterns=[f.path for f in plan if f.path != EVAL_FILE],
            delete_patterns=[f"{v.value}/*" for v in View],
            commit_message=message,
        )
    url = str(getattr(commit, "commit_url", commit))
    if any(f.path == EVAL_FILE for f in plan):
        try:
            with _hub_errors(repo_id):
                api.upload_file(
                    path_or_fileobj=str(Path(folder) / EVAL_FILE),
                    path_in_repo=EVAL_FILE,
                    repo_id=repo_id,
                    repo_type="dataset",
                    commit_message="Register the WebMRE benchmark (eval.yaml)",
                )
        except PublishError as e:
            raise PublishError(
                f"the dataset is uploaded ({url}) but not {EVAL_FILE}: {e}; the Hub accepts only framework ids "
                f"registered in huggingface.js packages/tasks/src/eval.ts, and {EVALUATION_FRAMEWORK!r} must be added there first"
            ) from None
    return url


@contextmanager
def _hub_errors(repo_id: str) -> Iterator[None]:
    """Turn huggingface_hub's and the network's errors into one-line :class:`PublishError` s."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        yield
    except OfflineModeIsEnabled:
        raise PublishError("the Hub is unreachable: HF_HUB_OFFLINE is set; unset it to publish") from None
    except HfHubHTTPError as e:  # before OSError: huggingface_hub's HTTP errors subclass it
        status = e.response.status_code if e.response is not None else None
        if status in (401, 403):
            raise PublishError(f"the Hub rejected the token for {repo_id} (HTTP {status}): check HF_TOKEN / `hf auth login`") from None
        detail = getattr(e, "server_message", None) or str(e)
        first = detail.strip().splitlines()[0] if detail.strip() else f"HTTP {status}"
        raise PublishError(f"the Hub refused the upload to {repo_id} (HTTP {status}): {first}") from None
    except (*_transport_errors(), OSError) as e:
        raise PublishError(f"cannot reach the Hub at {constants.ENDPOINT} (no network?): {e}") from None
    except ValueError as e:  # huggingface_hub's check of a README's metadata
        raise PublishError(f"the Hub refused the upload to {repo_id}: {' '.join(str(e).split())}") from None


# --------------------------------------------------------------------------- Spaces

#: The Spaces ``mag publish`` deploys: kind -> (source folder in the repository, default name).
SPACES: dict[str, tuple[str, str]] = {
    "metric": ("loaders/webmre_metric", "webmre_metric"),
    "leaderboard": ("leaderboard", "webmre-leaderboard"),
}

#: Settings a Space reads from its secrets: named in the plan, set by hand, never uploaded.
SPACE_SECRETS: dict[str, tuple[str, ...]] = {
    "metric": (),
    "leaderboard": ("MAG_BOARD_GOLD", "MAG_BOARD_GOLD_TOKEN", "MAG_BOARD_SYNC_REPO", "MAG_BOARD_SYNC_TOKEN", "MAG_BOARD_ADMINS"),
}

#: The folder the package is carried in, beside ``app.py``.
PACKAGE_DIR = "mag_dataset"

_TOKEN_SHAPE = re.compile(rb"\bhf_[A-Za-z0-9]{30,}\b")


@dataclass(frozen=True)
class SpaceFile:
    """One file of a Space upload: its path in the repo and its bytes."""

    path: str
    data: bytes

    def describe(self) -> UploadFile:
        return UploadFile(self.path, len(self.data), hashlib.sha256(self.data).hexdigest())


@dataclass(frozen=True)
class SpacePlan:
    """What :func:`publish_space` uploads to one Space.

    Attributes:
        kind: ``metric`` or ``leaderboard``.
        repo_id: the Space repo, ``owner/name``.
        files: every file of the commit, in path order.
        front_matter: the README's YAML header (``sdk: gradio``, ``app_file``...).
        secrets: the secret names the Space needs, set in its settings by hand.
    """

    kind: str
    repo_id: str
    files: tuple[SpaceFile, ...]
    front_matter: dict
    secrets: tuple[str, ...]


def repository_root() -> Path:
    """The checkout this package runs from (the folder holding ``pyproject.toml``)."""
    return Path(__file__).resolve().parent.parent


def _package_files(package: Path) -> list[SpaceFile]:
    out = []
    for p in sorted(package.rglob("*")):
        rel = p.relative_to(package)
        if not p.is_file() or any(part.startswith(".") or part == "__pycache__" for part in rel.parts) or p.suffix == ".pyc":
            continue
        out.append(SpaceFile(f"{PACKAGE_DIR}/{rel.as_posix()}", p.read_bytes()))
    return out


def _core_requirements(root: Path) -> list[str]:
    """The package's own dependencies (``[project] dependencies`` of pyproject.toml)."""
    import tomllib

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]
    except (OSError, KeyError, ValueError) as e:
        raise PublishError(f"cannot read the package's dependencies from {root / 'pyproject.toml'}: {e}") from None
    return list(project.get("dependencies") or [])


def _req_name(line: str) -> str:
    return re.split(r"[\s<>=!~;\[#@]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _space_requirements(text: str, core: list[str]) -> str:
    """The folder's requirements with the package's own dependencies in force.

    A line naming the package becomes its dependencies (the package itself is the folder
    beside ``app.py``); a line naming one of them is replaced by the package's spec; the
    ones not named yet are appended.
    """
    core_names = {_req_name(r) for r in core}
    lines = text.splitlines()
    has_package = any(_req_name(line) == "mag-dataset" for line in lines)
    out = []
    for line in lines:
        if _req_name(line) == "mag-dataset":
            out.append(f"# mag_dataset is the folder {PACKAGE_DIR}/ beside app.py; its dependencies:")
            out += core
        elif _req_name(line) not in core_names:
            out.append(line)
    if not has_package:
        out += [f"# the dependencies of mag_dataset (the folder {PACKAGE_DIR}/ beside app.py):", *core]
    return "\n".join(out) + "\n"


def _front_matter(readme: bytes, where: Path) -> dict:
    import yaml

    m = re.match(rb"---\n(.*?)\n---\n", readme, re.S)
    meta = yaml.safe_load(m.group(1)) if m else None
    if not isinstance(meta, dict):
        raise PublishError(f"{where} has no YAML front matter (a Space README starts with ---)")
    return meta


def space_plan(kind: str, repo_id: str, *, root: str | os.PathLike | None = None) -> SpacePlan:
    """List what a Space upload sends, and check it.

    Args:
        kind: ``metric`` or ``leaderboard`` (:data:`SPACES`).
        repo_id: the Space repo, ``owner/name``.
        root: the repository checkout holding the Space folders (default: this package's).

    Returns:
        The plan: the folder's files (``requirements.txt`` rewritten to carry the package's
        dependencies) and the package folder ``mag_dataset/``.

    Raises:
        PublishError: no such folder (not a checkout), a README without ``sdk: gradio`` or
            whose ``app_file`` is missing, or a file that holds a Hugging Face token.
    """
    if kind not in SPACES:
        raise PublishError(f"unknown Space kind {kind!r}; one of {sorted(SPACES)}")
    root = Path(root) if root is not None else repository_root()
    source = root / SPACES[kind][0]
    package = root / PACKAGE_DIR
    if not (source / "README.md").is_file() or not (package / "__init__.py").is_file():
        raise PublishError(f"the {kind} Space's sources are not at {source}: run mag publish from a clone of the repository")
    files: dict[str, SpaceFile] = {}
    for p in sorted(source.iterdir()):
        if p.is_file() and not p.name.startswith(".") and p.suffix != ".pyc":
            files[p.name] = SpaceFile(p.name, p.read_bytes())
    meta = _front_matter(files["README.md"].data, source / "README.md")
    if meta.get("sdk") != "gradio":
        raise PublishError(f"{source / 'README.md'}: the front matter must say sdk: gradio, got {meta.get('sdk')!r}")
    app = str(meta.get("app_file") or "app.py")
    if app not in files:
        raise PublishError(f"{source / 'README.md'} names app_file {app}, which is not in {source}")
    req = files["requirements.txt"].data.decode("utf-8") if "requirements.txt" in files else ""
    files["requirements.txt"] = SpaceFile("requirements.txt", _space_requirements(req, _core_requirements(root)).encode("utf-8"))
    for f in _package_files(package):
        files[f.path] = f
    for f in files.values():
        if _TOKEN_SHAPE.search(f.data):
            raise PublishError(f"{f.path} holds something shaped like a Hugging Face token; refusing to upload it to {repo_id}")
    ordered = tuple(sorted(files.values(), key=lambda f: f.path))
    return SpacePlan(kind, repo_id, ordered, meta, SPACE_SECRETS[kind])


def format_space_plan(plan: SpacePlan) -> str:
    """A readable listing of a Space plan: every file, then the secrets to set by hand."""
    described = [f.describe() for f in plan.files]
    lines = [f"upload to https://huggingface.co/spaces/{plan.repo_id} (Space, sdk gradio, the {plan.kind} Space):"]
    width = max(len(f.path) for f in described)
    for f in described:
        lines.append(f"  {f.path:<{width}}  {f.size:>10,d} B  sha256 {f.sha256[:16]}")
    lines.append(f"{len(described)} files, {sum(f.size for f in described):,d} bytes")
    if plan.secrets:
        lines.append(f"secrets to set in the Space settings (never uploaded): {', '.join(plan.secrets)}")
    return "\n".join(lines)


def publish_space(plan: SpacePlan, *, token: str | None = None, private: bool = False) -> str:
    """Create the Space if needed and upload its files in one commit.

    Files of the package folder that the new upload no longer has are deleted in the same
    commit. No secret is set: :attr:`SpacePlan.secrets` are named for the user to set.

    Returns:
        The URL of the commit.

    Raises:
        PublishError: as :func:`publish_folder`.
    """
    import tempfile

    from huggingface_hub import HfApi, get_token

    token = token or get_token()
    if not token:
        raise PublishError("no Hugging Face token found: set HF_TOKEN or run `hf auth login`, then retry")
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="mag-space-") as tmp:
        for f in plan.files:
            path = Path(tmp) / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.data)
        with _hub_errors(plan.repo_id):
            api.create_repo(plan.repo_id, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
            commit = api.upload_folder(
                repo_id=plan.repo_id,
                repo_type="space",
                folder_path=tmp,
                delete_patterns=[f"{PACKAGE_DIR}/**"],
                commit_message=f"Deploy the WebMRE {plan.kind} Space (mag_dataset {_package_version()})",
            )
    return str(getattr(commit, "commit_url", commit))


def _package_version() -> str:
    from mag_dataset import __version__

    return __version__
