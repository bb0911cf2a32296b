"""The :class:`Board` facade: the one object the leaderboard Space, ``mag leaderboard`` and
the API use. It wires the modules of :mod:`mag_dataset.board` together (fields, upload
decoding and scoring in an isolated child, integrity, storage, ranking, granularity, Hub
sync) and holds the caches and locks; it holds no rule of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from mag_dataset.actions import Contract, View
from mag_dataset.board.config import BoardConfig
from mag_dataset.board.errors import SubmissionRejected
from mag_dataset.board.fields import Entry, parse_enum, uploaded_bytes
from mag_dataset.board.gold import Gold
from mag_dataset.board.grading import (
    read_upload,
    report_columns,
    score_report,
    scorer_version,
    step_values,
)
from mag_dataset.board.granularity import coarsen_comparison, public_report
from mag_dataset.board.mirror import push_to_hub, restore_from_hub
from mag_dataset.board.integrity import content_sha256
from mag_dataset.board.ranking import Ranked, rank_key, rank_table
from mag_dataset.board.records import RescoreResult, Submission
from mag_dataset.board.storage import Store
from mag_dataset.board.upload import check_upload_envelope, file_extension
from mag_dataset.fileio import atomic_write

# The package's logger name, as before the package existed (log configuration keeps working).
log = logging.getLogger("mag_dataset.board")


class Board:
    """The leaderboard: validate, score with the library, store, list.

    Thread-safe: each operation opens its own short-lived SQLite connection; writes take
    a process lock and a ``BEGIN IMMEDIATE`` transaction, so concurrent submissions are
    never lost.

    Args:
        config: settings.
        gold: the gold; loaded from ``config`` on first use when not given.
        clock: returns the current UTC time (tests pass a fixed clock).
    """

    def __init__(
        self,
        config: BoardConfig,
        gold: Gold | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = config
        self._gold = gold
        self._verdicts: Any = None
        self._gold_lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._sync_lock = threading.Lock()
        self._workers = threading.BoundedSemaphore(config.workers)
        config.data_dir.mkdir(parents=True, exist_ok=True)
        config.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._sync_blocked: str | None = None
        if config.sync_repo and not config.db_path.exists():
            try:
                restore_from_hub(config)
            except Exception as e:  # a Space must still start when the Hub is down ...
                # ... but must not then overwrite the mirror with a database that lacks its rows
                self._sync_blocked = f"the start-up restore from {config.sync_repo} failed ({e})"
                log.warning("could not restore the board from %s: %s; Hub sync is off for this run",
                            config.sync_repo, e)
        self._rank_cache: dict[tuple, list[Ranked]] = {}
        self._pair_p: dict[tuple[int, int], float] = {}
        self.store = Store(config.db_path)
        self.store.migrate()

    # ---- infrastructure

    @property
    def verdicts(self) -> Any:
        """The cached judge verdicts (``None`` when not configured), read once."""
        if self.config.verdicts is None:
            return None
        if self._verdicts is None:
            from mag_dataset.verdicts import read_usefulness_verdicts

            self._verdicts = read_usefulness_verdicts(self.config.verdicts)
        return self._verdicts

    @property
    def gold(self) -> Gold:
        if self._gold is None:
            with self._gold_lock:
                if self._gold is None:
                    self._gold = Gold.load(self.config.gold, self.config.split, self.config.gold_token)
        return self._gold

    def file_path(self, sha256: str, ext: str) -> Path:
        """Where the uploaded bytes with this hash are kept."""
        return self.config.files_dir / sha256[:2] / f"{sha256}{ext}"

    def _gold_steps(self, view: View) -> list[Any]:
        """The gold steps of ``view``, or a refusal when this board has none."""
        if view not in self.gold.steps:
            raise SubmissionRejected(f"this board has no gold for the {view.value} view")
        return self.gold.steps[view]

    # ---- submitting

    def submit(
        self,
        *,
        data: bytes,
        filename: str,
        model_name: str,
        view: str,
        contract: str,
        submitter: str | None = None,
        organisation: str = "",
        link: str = "",
        provenance_tag: str = "self-reported",
    ) -> Submission:
        """Validate, score and store one predictions file.

        Args:
            data: the uploaded bytes.
            filename: the uploaded file's name (for its extension).
            model_name: shown on the board.
            view: ``som`` or ``coord``.
            contract: ``A``, ``G``, ``J`` or ``JG``.
            submitter: who submits (the HF login on a Space); the daily cap counts per
                submitter. Defaults to the organisation, else the model name.
            organisation: shown on the board.
            link: optional http(s) link (paper, model card).
            provenance_tag: one of :data:`~mag_dataset.board.fields.PROVENANCE_TAGS`.

        Returns:
            The stored submission.

        Raises:
            SubmissionRejected: for any bad input or limit; nothing is stored then.
        """
        entry = Entry.clean(model_name=model_name, organisation=organisation, link=link, view=view,
                            contract=contract, provenance_tag=provenance_tag, submitter=submitter)
        data, filename = uploaded_bytes(data), filename or ""
        check_upload_envelope(data, filename, self.config.max_bytes)
        sha = hashlib.sha256(data).hexdigest()
        with self.store.connect() as con:  # cheap early checks, repeated under the write lock
            self._check_limits(con, entry.submitter, sha, entry.view, entry.contract)
        self._gold_steps(entry.view)
        scored = self._score_isolated(data, filename, entry.view, entry.contract)
        with self.store.connect() as con:
            self._check_limits(con, entry.submitter, sha, entry.view, entry.contract, scored["content_sha256"])
        new_id = self._store(self._row(entry, data, filename, sha, scored), data)
        sub = self.get(new_id)
        assert sub is not None
        if self.config.sync_repo:
            threading.Thread(target=self._sync_quietly, args=(sub,), daemon=True).start()
        return sub

    def _row(self, entry: Entry, data: bytes, filename: str, sha: str, scored: dict[str, Any]) -> dict[str, Any]:
        """The database row of an accepted submission (column -> value, in the table's order)."""
        columns = report_columns(scored["report_json"])
        return {
            "created_at": self._clock().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "submitter": entry.submitter,
            "model_name": entry.model_name,
            "organisation": entry.organisation,
            "link": entry.link,
            "provenance_tag": entry.provenance_tag,
            "view": entry.view.value,
            "contract": entry.contract.value,
            "split": self.gold.split,
            "file_sha256": sha,
            "file_ext": file_extension(filename),
            "file_size": len(data),
            "seeds": int(scored["seeds"]),
            "scorer_version": columns["scorer_version"],
            "gold_fingerprint": columns["gold_fingerprint"],
            "summary_json": columns["summary_json"],
            "report_json": columns["report_json"],
            "content_sha256": str(scored["content_sha256"]),
            "step_values_json": json.dumps(scored["step_values"]),
        }

    def validate(self, *, data: bytes, filename: str, view: str, contract: str) -> dict[str, Any]:
        """"Validate only": decode and check a file as :meth:`submit` would, without scoring
        or storing it (so it reveals no score and counts against no cap).

        Returns:
            :func:`~mag_dataset.board.integrity.validation_summary`'s dict plus
            ``duplicate_of`` (the id of a stored submission with the same content, view and
            contract, or ``None``).

        Raises:
            SubmissionRejected: a file that cannot be read at all (the reason).
        """
        v = parse_enum(View, view, "view")
        c = parse_enum(Contract, contract, "contract")
        data, filename = uploaded_bytes(data), filename or ""
        check_upload_envelope(data, filename, self.config.max_bytes)
        self._gold_steps(v)
        out = self._score_isolated(data, filename, v, c, mode="validate")
        with self.store.connect() as con:
            self._backfill_content(con)
            dup = self.store.same(con, "content_sha256", out["content_sha256"], v.value, c.value)
        out["duplicate_of"] = dup
        if dup:
            out["problems"].append(f"the same predictions were already scored (submission #{dup})")
        return out

    def _score_isolated(self, data: bytes, filename: str, view: View, contract: Contract,
                        mode: str = "score") -> dict[str, Any]:
        """Decode, validate and score an upload in a limited child process (see :mod:`mag_dataset.board`)."""
        from mag_dataset.isolation import Limits, run_isolated

        cfg = self.config
        request = {
            "data": data, "filename": filename, "view": view.value, "contract": contract.value,
            "gold": self.gold.for_view(view), "verdicts": self.verdicts, "max_bytes": cfg.max_bytes,
            "max_lines": cfg.max_lines, "max_seeds": cfg.max_seeds, "mode": mode,
            "max_format_failure_rate": cfg.max_format_failure_rate,
        }
        with self._workers:
            try:
                out = run_isolated("board.score", request, Limits(memory_mb=cfg.worker_mb, seconds=cfg.score_seconds),
                                   warm=True)
            except OSError as e:  # no process could be started (out of PIDs, memory): not the file's fault
                log.warning("could not start the isolated scorer: %s", e)
                raise SubmissionRejected("the server could not start a scoring process right now; try again later") from None
        if out.kind == "ok" and isinstance(out.value, dict):
            return out.value
        if out.kind == "refused":
            raise SubmissionRejected(out.message)
        if out.kind == "time":
            raise SubmissionRejected(
                f"decoding and scoring this file took longer than the limit of {cfg.score_seconds:g} s per submission"
            )
        if out.kind == "memory":
            raise SubmissionRejected(
                f"decoding this file needs more than the memory limit of {cfg.worker_mb:,} MiB per submission"
            )
        log.warning("isolated scoring of %s failed: %s %s", filename, out.kind, out.message)
        raise SubmissionRejected(f"the file could not be decoded: {out.message}")

    def _check_limits(self, con: Any, who: str, sha: str, view: View, contract: Contract,
                      content: str | None = None) -> None:
        """Refuse a file stored before (bytes, then content) or a submitter over the daily cap."""
        dup = self.store.same(con, "file_sha256", sha, view.value, contract.value)
        if dup:
            raise SubmissionRejected(
                f"this exact file was already scored for view {view.value}, contract {contract.value} "
                f"(submission #{dup}); it is not scored twice"
            )
        if content is not None:
            self._backfill_content(con)
            dup = self.store.same(con, "content_sha256", content, view.value, contract.value)
            if dup:
                raise SubmissionRejected(
                    f"the same predictions (the same step ids and outputs, whatever the file's format, line order "
                    f"or blank lines) were already scored for view {view.value}, contract {contract.value} "
                    f"(submission #{dup}); they are not scored twice"
                )
        if who in self.config.admins:
            return
        day = self._clock().astimezone(timezone.utc).strftime("%Y-%m-%d")
        n = self.store.count_on_day(con, who, day)
        if n >= self.config.daily_cap:
            raise SubmissionRejected(
                f"daily limit reached: {who!r} already has {n} submission(s) today (UTC), the cap is "
                f"{self.config.daily_cap}; try again tomorrow"
            )

    def _store(self, row: dict[str, Any], data: bytes) -> int:
        """Write the file (content-addressed) and insert the row in one transaction, checking
        the limits again under the write lock; a file written for a row that fails is removed."""
        path = self.file_path(row["file_sha256"], row["file_ext"])
        created_file = False
        try:
            with self.store.transaction() as con:
                self._check_limits(con, row["submitter"], row["file_sha256"], View(row["view"]),
                                   Contract(row["contract"]), row["content_sha256"])
                if not path.exists():
                    atomic_write(path, data, fsync=True)
                    created_file = True
                new_id = self.store.insert(con, row)
        except BaseException:
            if created_file:
                path.unlink(missing_ok=True)
            raise
        self._rank_cache.clear()
        return new_id

    # ---- reading

    def get(self, submission_id: int) -> Submission | None:
        return self.store.get(submission_id)

    def submissions(self, view: str | None = None, contract: str | None = None) -> list[Submission]:
        """Stored submissions, oldest first, optionally filtered."""
        return self.store.submissions(View(view).value if view else None,
                                      Contract(contract).value if contract else None)

    def count(self) -> int:
        return self.store.count()

    def ranked(self, view: str, contract: str | None = None) -> list[tuple[int, Submission]]:
        """``(rank, submission)`` pairs of :meth:`ranking`."""
        return [(r.rank, r.submission) for r in self.ranking(view, contract)]

    def similar_names(self) -> dict[int, int]:
        """Submission id -> the id of an older row of another submitter whose model name reads
        the same or one edit apart (:func:`~mag_dataset.board.fields.near_duplicate_of`): the
        board marks such rows, so a look-alike of a known model cannot pass for it."""
        from mag_dataset.board.fields import near_duplicate_of

        out: dict[int, int] = {}
        seen: list[tuple[int, str, str]] = []
        for sub in sorted(self.submissions(), key=lambda x: x.id):
            other = near_duplicate_of(sub.model_name, sub.submitter, seen)
            if other is not None:
                out[sub.id] = other
            seen.append((sub.id, sub.model_name, sub.submitter))
        return out

    def ranking(self, view: str, contract: str | None = None) -> list[Ranked]:
        """Submissions of a view ranked within their contract (the rule of
        :mod:`mag_dataset.board.ranking`: one plus the number of submissions that beat it
        significantly).

        Returns:
            Rows ordered by contract (A, G, J, JG), then by :func:`~mag_dataset.board.ranking.rank_key`.
        """
        out: list[Ranked] = []
        subs = self.submissions(view, contract)
        for c in Contract:
            group = sorted((s for s in subs if s.contract == c.value), key=rank_key)
            if group:
                out.extend(self._rank_group(View(view), c, group))
        return out

    def _rank_group(self, view: View, contract: Contract, group: list[Submission]) -> list[Ranked]:
        from mag_dataset.compare import paired_test

        key = (view.value, contract.value, tuple(s.id for s in group))
        cached = self._rank_cache.get(key)
        if cached is not None:
            return cached
        values = {s.id: self.step_values(s) for s in group}
        tasks = [s.task_id for s in self.gold.steps[view]]

        def p_value(worse: int, better: int) -> float:
            if (worse, better) not in self._pair_p:  # a pair's test never changes: a new submission adds N tests
                self._pair_p[(worse, better)] = paired_test(values[worse], values[better], tasks,
                                                            interval=False)["p_value"]
            return self._pair_p[(worse, better)]

        rows = rank_table(group, contract, lambda sid: values[sid] is not None, p_value)
        self._rank_cache[key] = rows
        return rows

    def step_values(self, sub: Submission) -> list[float | None] | None:
        """Per-step values of a submission's ranking metric (mean over its seeds), in gold
        order: stored at submission, else re-scored once from the stored file and kept.
        ``None`` when the stored file no longer scores against this gold."""
        ids = self.gold.step_ids(View(sub.view))
        vals = self.store.step_values(sub.id)
        if vals is not None and len(vals) == len(ids):
            return vals
        try:
            report = self._rescore(sub, keep_steps=True)
        except (OSError, ValueError) as e:
            log.warning("cannot re-score submission #%s for its rank: %s", sub.id, e)
            return None
        vals = step_values(report, ids, sub.metric)
        self.store.set_step_values(sub.id, vals)
        return vals

    def _rescore(self, sub: Submission, *, keep_steps: bool = False, bootstrap: bool = True) -> Any:
        """Score a stored submission's file again against the current gold (a Report)."""
        v, c, gold = View(sub.view), Contract(sub.contract), self.gold
        if v not in gold.steps:
            raise ValueError(f"the gold has no {v.value} view")
        return score_report(self._stored_predictions(sub), gold.for_view(v), v, c, verdicts=self.verdicts,
                            keep_steps=keep_steps, bootstrap=bootstrap)

    def _stored_predictions(self, sub: Submission) -> list[Any]:
        """The predictions of a stored file, read against the current gold's step ids."""
        return read_upload(self.read_file(sub), f"x{sub.file_ext}", self.gold.step_ids(View(sub.view)),
                           max_bytes=max(self.config.max_bytes, sub.file_size) * 64, max_lines=10**9)

    def _backfill_content(self, con: Any) -> None:
        """Fill ``content_sha256`` of rows stored before it existed (decoded from their files)."""
        for sid in self.store.without_content(con):
            sub = self.get(sid)
            assert sub is not None
            try:
                content = content_sha256(self._stored_predictions(sub))
            except (OSError, ValueError, KeyError):  # a missing file, or gold without its ids
                content = f"unreadable:{sub.file_sha256}"
            self.store.set_content(con, sid, content)

    def public_report(self, sub: Submission) -> dict[str, Any]:
        """The report a visitor may download: the stored report with its breakdowns cut to
        the granularity rule (:func:`~mag_dataset.board.granularity.public_report`)."""
        return public_report(sub.report)

    def read_file(self, sub: Submission) -> bytes:
        """The stored bytes of a submission, checked against its SHA-256."""
        data = self.file_path(sub.file_sha256, sub.file_ext).read_bytes()
        if hashlib.sha256(data).hexdigest() != sub.file_sha256:
            raise ValueError(f"stored file of submission #{sub.id} does not match its SHA-256")
        return data

    def compare(self, id_a: int, id_b: int, *, resamples: int = 1000, seed: int = 0) -> Any:
        """Paired comparison of two stored submissions of the same view (B - A), with
        :func:`mag_dataset.compare.compare_reports`, the library call behind ``mag compare``.

        Raises:
            SubmissionRejected: an unknown id, or submissions of different views.
        """
        from mag_dataset.compare import compare_reports

        subs = [self.get(i) for i in (id_a, id_b)]
        if any(s is None for s in subs):
            raise SubmissionRejected("choose two stored submissions")
        a, b = subs  # type: ignore[misc]
        if a.view != b.view:
            raise SubmissionRejected(f"submissions #{a.id} ({a.view}) and #{b.id} ({b.view}) are of different views")
        steps = self._gold_steps(View(a.view))
        reports = [self._rescore(sub, keep_steps=True, bootstrap=False) for sub in (a, b)]
        return coarsen_comparison(compare_reports(reports[0], reports[1], steps, resamples=resamples, seed=seed))

    # ---- admin

    def rescore_all(self, update: bool = False) -> list[RescoreResult]:
        """Re-score every stored submission from its stored file and compare reports.

        Args:
            update: store the new report (and scorer version, fingerprint, summary) where
                it differs, e.g. after a deliberate scorer change.

        Returns:
            One result per submission; ``identical`` means byte-identical report JSON.
        """
        results = []
        for sub in self.submissions():
            try:
                columns = report_columns(self._rescore(sub).to_json())
            except (OSError, ValueError) as e:  # PredictionsError and SubmissionRejected are ValueErrors
                results.append(RescoreResult(sub.id, False, sub.scorer_version, scorer_version(),
                                             f"cannot re-score: {e}", failed=True))
                continue
            same = columns["report_json"] == sub.report_json
            detail = "" if same else self._rescore_detail(sub, columns)
            if not same and update:
                self.store.update_report(sub.id, columns)
                self._rank_cache.clear()
                self._pair_p.clear()
            results.append(RescoreResult(sub.id, same, sub.scorer_version, columns["scorer_version"], detail))
        return results

    @staticmethod
    def _rescore_detail(sub: Submission, columns: dict[str, str]) -> str:
        """What changed between a stored report and its re-scored one."""
        old, new = sub.report, json.loads(columns["report_json"])
        changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        detail = f"changed keys: {', '.join(changed) or '(formatting only)'}"
        if columns["gold_fingerprint"] != sub.gold_fingerprint:
            detail += "; the gold changed since it was scored"
        return detail

    def snapshot(self, dest: Path) -> Path:
        """A consistent copy of the database (SQLite online backup), for syncing."""
        return self.store.snapshot(dest)

    def sync_payload(self, dest: Path) -> list[tuple[str, Path]]:
        """What a sync uploads: a database snapshot and the files not yet synced.

        Args:
            dest: folder for the snapshot.

        Returns:
            ``(path in the repo, local file)`` pairs: ``board.sqlite`` and
            ``files/<sha[:2]>/<sha><ext>`` for every submission newer than the last
            successful sync (so a failed sync is caught up by the next one).
        """
        last = int(self.store.meta("last_synced_id") or 0)
        snap = self.snapshot(Path(dest) / "board.sqlite")
        payload = [("board.sqlite", snap)]
        seen = set()
        for s in self.submissions():
            p = self.file_path(s.file_sha256, s.file_ext)
            if s.id > last and p not in seen:
                seen.add(p)
                payload.append((p.relative_to(self.config.data_dir).as_posix(), p))
        return payload

    def mark_synced(self, up_to_id: int) -> None:
        """Record that every submission up to ``up_to_id`` has its file in the mirror."""
        self.store.set_meta("last_synced_id", str(int(up_to_id)))

    def sync_to_hub(self) -> None:
        """Upload a database snapshot and the not-yet-synced files to ``sync_repo`` (one commit)."""
        if not self.config.sync_repo:
            raise ValueError("MAG_BOARD_SYNC_REPO is not set")
        if self._sync_blocked:
            raise RuntimeError(f"Hub sync is off for this run: {self._sync_blocked}")
        with self._sync_lock, tempfile.TemporaryDirectory() as tmp:
            top = max((s.id for s in self.submissions()), default=0)
            push_to_hub(self.config, self.sync_payload(Path(tmp)), f"board: {top} submissions")
            self.mark_synced(top)

    def _sync_quietly(self, sub: Submission) -> None:
        try:
            self.sync_to_hub()
        except Exception as e:  # the submission is stored locally either way; the next sync catches up
            log.warning("Hub sync of submission #%s to %s failed: %s", sub.id, self.config.sync_repo, e)


__all__ = ["Board"]
