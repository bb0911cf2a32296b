"""Board settings: :class:`BoardConfig` and how it is read from the ``MAG_BOARD_*``
environment (the variables are listed in :mod:`mag_dataset.board`). Holds no I/O beyond
reading the environment; the gold, the database and the Hub are other modules' concern."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Largest share of format failures a file may have before it is rejected (default).
MAX_FORMAT_FAILURE_RATE = 0.5


def _env_int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


@dataclass(frozen=True)
class BoardConfig:
    """Board settings; see :mod:`mag_dataset.board` for the environment variables.

    Attributes:
        data_dir: folder for the database (by default) and the stored files.
        db_path: the SQLite database.
        gold: gold source (folder or Hub repo id); ``None`` means the bundled corpus.
        gold_token: token for a private Hub gold dataset.
        split: split scored.
        max_bytes: upload cap in bytes (also the decompressed cap of ``.jsonl.gz``).
        max_lines: most lines a predictions file may have.
        max_seeds: most seeds one file may hold.
        score_seconds: time limit for decoding and scoring one submission.
        worker_mb: memory limit (MiB) of the process that decodes and scores it.
        workers: submissions decoded and scored at once.
        daily_cap: accepted submissions per submitter per UTC day.
        admins: submitter names exempt from the daily cap.
        local_submitter: who submits through the page when it does not run on a Space (where the
            submitter is the Hugging Face login): this server's configured identity, never typed
            in the form, so the daily cap cannot be dodged by typing other names.
        compare_per_min: comparisons one user may ask for per minute (0: no limit).
        compare_all_per_min: comparisons everyone together may ask for per minute.
        details_per_min: Details views one user may open per minute.
        details_all_per_min: Details views everyone together may open per minute.
        sync_repo: Hub dataset repo id to mirror to, or ``None``.
        sync_token: token for ``sync_repo``.
        verdicts: cached judge verdicts for usefulness, or ``None``.
        max_format_failure_rate: largest share of format failures a file may have.
    """

    data_dir: Path = Path("leaderboard_data")
    db_path: Path | None = None
    gold: str | None = None
    gold_token: str | None = None
    split: str = "test"
    max_bytes: int = 20 * 1024 * 1024
    max_lines: int = 200_000
    max_seeds: int = 10
    score_seconds: float = 60.0
    worker_mb: int = 1024
    workers: int = 2
    daily_cap: int = 5
    admins: frozenset[str] = frozenset()
    local_submitter: str = "local"
    compare_per_min: int = 6
    compare_all_per_min: int = 30
    details_per_min: int = 30
    details_all_per_min: int = 300
    sync_repo: str | None = None
    sync_token: str | None = None
    verdicts: Path | None = None
    max_format_failure_rate: float = MAX_FORMAT_FAILURE_RATE

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        if self.db_path is None:
            object.__setattr__(self, "db_path", self.data_dir / "board.sqlite")
        else:
            object.__setattr__(self, "db_path", Path(self.db_path))
        object.__setattr__(self, "admins", frozenset(self.admins))
        if self.max_bytes <= 0 or self.max_lines <= 0:
            raise ValueError("max_bytes and max_lines must be positive")
        if self.max_seeds <= 0 or self.workers <= 0 or self.score_seconds <= 0:
            raise ValueError("max_seeds, workers and score_seconds must be positive")
        if not 0.0 <= self.max_format_failure_rate <= 1.0:
            raise ValueError("MAG_BOARD_MAX_FORMAT_FAILURES must be a percentage from 0 to 100")
        if self.worker_mb < 256:
            raise ValueError(f"MAG_BOARD_WORKER_MB must be at least 256, got {self.worker_mb}")

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> "BoardConfig":
        """Read the ``MAG_BOARD_*`` variables; keyword overrides win over the environment."""
        env = dict(os.environ if env is None else env)
        hf_token = env.get("HF_TOKEN") or None
        kwargs: dict[str, Any] = {
            "data_dir": Path(env.get("MAG_BOARD_DIR") or "leaderboard_data"),
            "db_path": Path(env["MAG_BOARD_DB"]) if env.get("MAG_BOARD_DB") else None,
            "gold": env.get("MAG_BOARD_GOLD") or None,
            "gold_token": env.get("MAG_BOARD_GOLD_TOKEN") or hf_token,
            "split": env.get("MAG_BOARD_SPLIT") or "test",
            "max_bytes": _env_int(env, "MAG_BOARD_MAX_MB", 20) * 1024 * 1024,
            "max_lines": _env_int(env, "MAG_BOARD_MAX_LINES", 200_000),
            "max_seeds": _env_int(env, "MAG_BOARD_MAX_SEEDS", 10),
            "score_seconds": float(_env_int(env, "MAG_BOARD_SCORE_SECONDS", 60)),
            "worker_mb": _env_int(env, "MAG_BOARD_WORKER_MB", 1024),
            "workers": _env_int(env, "MAG_BOARD_WORKERS", 2),
            "daily_cap": _env_int(env, "MAG_BOARD_DAILY_CAP", 5),
            "admins": frozenset(a.strip() for a in env.get("MAG_BOARD_ADMINS", "").split(",") if a.strip()),
            "local_submitter": (env.get("MAG_BOARD_SUBMITTER") or "").strip() or "local",
            "compare_per_min": _env_int(env, "MAG_BOARD_COMPARE_PER_MIN", 6),
            "compare_all_per_min": _env_int(env, "MAG_BOARD_COMPARE_ALL_PER_MIN", 30),
            "details_per_min": _env_int(env, "MAG_BOARD_DETAILS_PER_MIN", 30),
            "details_all_per_min": _env_int(env, "MAG_BOARD_DETAILS_ALL_PER_MIN", 300),
            "sync_repo": env.get("MAG_BOARD_SYNC_REPO") or None,
            "sync_token": env.get("MAG_BOARD_SYNC_TOKEN") or hf_token,
            "verdicts": Path(env["MAG_BOARD_VERDICTS"]) if env.get("MAG_BOARD_VERDICTS") else None,
            "max_format_failure_rate": _env_int(env, "MAG_BOARD_MAX_FORMAT_FAILURES", 50) / 100,
        }
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)


__all__ = ["BoardConfig", "MAX_FORMAT_FAILURE_RATE"]
