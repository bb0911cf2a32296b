"""Hub sync of a board: mirror its database snapshot and stored files to a private Hub
dataset repo (one commit per sync) and restore them at start-up when the local database is
missing. Holds only the Hub and file-copy side; what to upload is chosen by
:meth:`mag_dataset.board.Board.sync_payload`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from mag_dataset.board.config import BoardConfig
from mag_dataset.fileio import atomic_write


def restore_from_folder(config: BoardConfig, folder: Path) -> bool:
    """Put a mirrored ``board.sqlite`` and ``files/`` from ``folder`` into ``config``'s place.

    Returns:
        Whether a database was found and restored. Files are written before the database,
        each atomically, so a row never points at a missing file.
    """
    folder = Path(folder)
    src_db = folder / "board.sqlite"
    if not src_db.is_file():
        return False
    files = folder / "files"
    for f in sorted(files.rglob("*")) if files.is_dir() else []:
        if f.is_file():
            dest = config.data_dir / f.relative_to(folder)
            if not dest.exists():
                atomic_write(dest, f.read_bytes(), fsync=True)
    atomic_write(Path(config.db_path), src_db.read_bytes(), fsync=True)
    return True


def restore_from_hub(config: BoardConfig) -> bool:
    """Download the mirror in ``config.sync_repo`` and restore it (see :func:`restore_from_folder`)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError

    with tempfile.TemporaryDirectory() as tmp:
        try:
            folder = snapshot_download(config.sync_repo, repo_type="dataset", token=config.sync_token, local_dir=tmp)
        except RepositoryNotFoundError:
            return False  # no mirror yet: the first sync creates it (with the same token)
        return restore_from_folder(config, Path(folder))


def push_to_hub(config: BoardConfig, payload: list[tuple[str, Path]], message: str) -> None:
    """Upload ``(path in the repo, local file)`` pairs to ``config.sync_repo`` as one commit,
    creating the private dataset repo when it does not exist yet."""
    from huggingface_hub import CommitOperationAdd, HfApi

    ops = [CommitOperationAdd(path_in_repo, str(local)) for path_in_repo, local in payload]
    api = HfApi(token=config.sync_token)
    api.create_repo(config.sync_repo, repo_type="dataset", private=True, exist_ok=True)
    api.create_commit(config.sync_repo, ops, commit_message=message, repo_type="dataset")


__all__ = ["push_to_hub", "restore_from_folder", "restore_from_hub"]
