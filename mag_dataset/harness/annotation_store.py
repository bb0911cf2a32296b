"""The SQLite store of human decisions: every response of every annotator, kept.

Holds the database (``RAW/annotations.sqlite`` by default) and its writes: responses with
the stale-view check, originals, the assignment of steps to annotators, queues and
progress; and which database a command reads (:func:`stored_adjudications`) or should be
told about (:func:`other_decision_dbs`). The rules below (the resolution, agreement, the
schema and its migrations) are pure code in :mod:`mag_dataset.annotation_rules`, because
the builder, which sits below the harness, applies them too. Nothing here reads or writes a raw corpus:
:mod:`mag_dataset.harness.annotate` writes resolved decisions back into episodes and into
the audit file.

MAG (arXiv 2607.10079) verifies its LLM-drafted guides by hand, and a team does it: so a
person's answer never replaces another's. Each answer is one appended row, and what a step
ends up with is derived from all of them by the rule below (as Label Studio, Argilla and
Prodigy keep one response per annotator).

Responses (table ``responses``, append-only)
    One row per answer: ``id``, ``step_id``, ``annotator``, ``round``, ``kind`` (``verify``:
    a guide verification, decision ``accept`` / ``edit`` / ``reject``; ``adjudicate``: the
    resolution of a disputed audit label, decision ``confirmed`` / ``remapped`` /
    ``unmappable``), ``guide`` (the resulting guide of a verification, whitespace collapsed),
    ``draft`` (the draft shown), ``draft_source`` (``llm``, or the step's own source when it
    had no draft), ``element_id`` (of a remap), ``note``, ``decided_at`` (ISO 8601 UTC with
    milliseconds), ``source`` (``app``, ``label-studio`` or ``cli``) and ``based_on`` (the
    step version the annotator saw). Rows are never updated or deleted.

Step version and stale views (optimistic concurrency)
    :meth:`AnnotationStore.step_version` is the number of responses on a step (all kinds):
    it only grows. A client shows a step with its version and passes it back as
    ``seen_version`` to :meth:`AnnotationStore.record_response`, which compares it with
    the current version inside one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock, so
    this holds across threads, processes and servers sharing the file) and, when someone
    answered in between, raises :class:`StaleView` naming who decided what, writing
    nothing. The annotator sees the change and answers again (or not) on a fresh view.

Rounds and the resolution rule (:meth:`AnnotationStore.resolution`)
    Verifications and adjudications are resolved separately (``kind``). Within a round only
    each annotator's latest response counts (someone who changes their mind replaces their
    own answer, never another's; the earlier row stays). Then:

    * no response: ``undecided``;
    * every counted response of the latest round agrees: ``decided`` (round 1) or
      ``adjudicated`` (a later round): the agreed decision, its guide, ``verified_by`` =
      the annotators of that round, ``decided_at`` = the time of its last response;
      verifications agree when the decision is the same and, for edits, the guide is the
      same after whitespace is collapsed (an edit that leaves the draft as it was counts as
      an accept); adjudications when status and element are;
    * they disagree: ``needs_adjudication`` (the step is listed for adjudication; until it
      is resolved the episode keeps its guide from before annotation, marked
      ``guide_decision = disputed``, and an adjudicated audit label goes back to
      ``disputed``).

    A response from someone who has no response in a round that disagrees starts the next
    round: that person is the adjudicator, and the round's outcome is theirs. A participant
    of the disputed round who answers again revises their own answer in that round (which
    may make it agree). ``round=`` can be passed explicitly.

Assignments (table ``assignments``)
    :meth:`AnnotationStore.assign` splits steps among annotators: a seeded shuffle
    (``random.Random(seed)``), then round-robin, and the first ``overlap`` share of the
    shuffled steps also goes to a second annotator (cycling through the pairs), so
    agreement can be measured on it. :meth:`AnnotationStore.queue` is what an annotator has
    left; :meth:`AnnotationStore.progress` counts "M of N verified".

Agreement (:func:`agreement`)
    On the steps that two or more annotators verified in round 1 (the independent
    answers, before any adjudication): Cohen's kappa per annotator pair and Krippendorff's
    alpha (nominal, the ``krippendorff`` package) overall, per pair and per site. The label
    compared is what the resolution rule compares (the decision; for an edit, the edited
    guide), so disagreement on the overlap is exactly what goes to adjudication. Every
    figure comes with ``n`` and its counts; it is ``None`` with the reason when too few
    items or only one label make it undefined.

Schema versions (``PRAGMA user_version``)
    A database is brought to :data:`SCHEMA_VERSION` when it is opened, by the steps of
    :data:`MIGRATIONS` it lacks, all in one transaction (a failed step changes nothing;
    the rule is :mod:`mag_dataset.sqlite_migrations`'):

    1. the ``decisions``, ``originals`` and ``adjudications`` tables (a database made
       before versioning is at version 0 and already has them);
    2. ``decisions.draft_source`` (where an accepted draft came from; rows decided before
       it were LLM drafts, so they read ``llm``);
    3. ``responses`` and ``assignments``: every ``decisions`` and ``adjudications`` row
       becomes a round-1 response (``source = app``, ``based_on = 0``, in the order of its
       time), then those one-row-per-step tables are dropped. ``originals`` stays.

    A database of a newer version than this code knows is refused, never altered.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mag_dataset.annotation_rules import (
    _RESPONSE_COLUMNS,
    DEFAULT_DB,
    KINDS,
    SOURCES,
    Adjudication,
    Decision,
    Resolution,
    Response,
    StaleView,
    _annotator,
    _next_round,
    _norm,
    _now,
    migrate,
    resolve,
)
from mag_dataset.harness.audit_rules import Adjudications
from mag_dataset.schema import AuditStatus, GuideSource

class AnnotationStore:
    """The SQLite store of responses, originals and assignments (thread-safe, shareable by processes).

    Args:
        path: the database file (created with its tables when missing).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            # timeout: a writer of another process holds the lock for milliseconds; wait for it
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{self.path}: not an annotation database ({e})") from None
        try:
            migrate(self._db, self.path)
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise ValueError(f"{self.path}: not an annotation database ({e})") from None
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "AnnotationStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return list(self._db.execute(sql, args))

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction (the database's write lock)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return out

    # -- responses ---------------------------------------------------------------------

    def step_version(self, step_id: str) -> int:
        """The step's version: how many responses it has (of any kind); it only grows."""
        return int(self._rows("SELECT COUNT(*) FROM responses WHERE step_id = ?", (step_id,))[0][0])

    def record_response(self, step_id: str, annotator: str, kind: str, decision: str, *, guide: str = "",
                        draft: str = "", draft_source: str = "llm", element_id: str | None = None, note: str = "",
                        seen_version: int, source: str = "app", round: int | None = None) -> Response:
        """Append one annotator's response, unless the step changed since they looked at it.

        Args:
            step_id: the step.
            annotator: who answers (required; no comma).
            kind: ``verify`` or ``adjudicate``.
            decision: one of ``KINDS[kind]``.
            guide: the resulting guide of a verification (the draft, the edit or the original).
            draft: the draft shown.
            draft_source: ``llm``, or the step's own source when it had no draft.
            element_id: the element of a ``remapped`` adjudication.
            note: the annotator's note.
            seen_version: :meth:`step_version` of the view the annotator decided on.
            source: ``app``, ``label-studio`` or ``cli``.
            round: the round (default: by the rule of the module docstring).

        Returns:
            The stored :class:`Response`.

        Raises:
            StaleView: ``seen_version`` is not the step's version (nothing is written).
            ValueError: an unknown kind, decision or source, an empty edit, a remap without
                an element, no annotator name.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {tuple(KINDS)}, got {kind!r}")
        if decision not in KINDS[kind]:
            raise ValueError(f"a {kind} decision must be one of {KINDS[kind]}, got {decision!r}")
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        annotator = _annotator(annotator)
        guide = _norm(guide)
        note = " ".join(str(note or "").split())
        if kind == "verify":
            draft_source = GuideSource(draft_source).value
            element_id = None
            if decision == "edit" and not guide:
                raise ValueError("an edited guide cannot be empty")
        else:
            if decision == "remapped" and not element_id:
                raise ValueError("a remap needs the element id")
            element_id = element_id if decision == "remapped" else None
        if isinstance(seen_version, bool) or not isinstance(seen_version, int) or seen_version < 0:
            raise ValueError(f"seen_version must be a step version (an int >= 0), got {seen_version!r}")

        def write(db: sqlite3.Connection) -> Response:
            rows = [Response(*r) for r in db.execute(
                f"SELECT {_RESPONSE_COLUMNS} FROM responses WHERE step_id = ? ORDER BY id", (step_id,))]
            if len(rows) != seen_version:
                raise StaleView(step_id, seen_version, len(rows), rows[seen_version:] if seen_version < len(rows) else [])
            rnd = round if round is not None else _next_round(rows, kind, annotator)
            at = _now()
            cur = db.execute(
                f"INSERT INTO responses ({_RESPONSE_COLUMNS}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (step_id, annotator, rnd, kind, decision, guide, draft, draft_source, element_id, note, at, source,
                 seen_version))
            return Response(int(cur.lastrowid), step_id, annotator, rnd, kind, decision, guide, draft, draft_source,
                            element_id, note, at, source, seen_version)

        return self._write(write)

    def responses(self, step_id: str | None = None, annotator: str | None = None,
                  kind: str | None = None) -> list[Response]:
        """Stored responses, oldest first, of one step / annotator / kind when given."""
        where, args = [], []
        for col, val in (("step_id", step_id), ("annotator", annotator), ("kind", kind)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = f"SELECT {_RESPONSE_COLUMNS} FROM responses" + (" WHERE " + " AND ".join(where) if where else "")
        return [Response(*r) for r in self._rows(sql + " ORDER BY id", tuple(args))]

    def resolution(self, step_id: str, kind: str = "verify") -> Resolution:
        """The step's resolution of ``kind`` by the rule of the module docstring."""
        return resolve(step_id, kind, self.responses(step_id, kind=kind))

    def resolutions(self, kind: str = "verify") -> dict[str, Resolution]:
        """:meth:`resolution` of every step that has a response of ``kind``."""
        by_step: dict[str, list[Response]] = {}
        for r in self.responses(kind=kind):
            by_step.setdefault(r.step_id, []).append(r)
        return {sid: resolve(sid, kind, rows) for sid, rows in sorted(by_step.items())}

    def needs_adjudication(self, kind: str | None = None) -> list[str]:
        """Steps whose latest round disagrees (of ``kind``, or of either kind)."""
        kinds = [kind] if kind else list(KINDS)
        return sorted({sid for k in kinds for sid, res in self.resolutions(k).items()
                       if res.status == "needs_adjudication"})

    # -- originals and the one-call API of the single-annotator app -----------------------

    def keep_original(self, step_id: str, guide: str, guide_source: str) -> None:
        """Store the step's guide before any decision (once; what Reject restores)."""
        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR IGNORE INTO originals (step_id, guide, guide_source) VALUES (?, ?, ?)",
                       (step_id, guide, GuideSource(guide_source).value))
        self._write(write)

    def originals(self) -> dict[str, tuple[str, str]]:
        return {r[0]: (r[1], r[2]) for r in self._rows("SELECT step_id, guide, guide_source FROM originals")}

    def decide(self, sid: str, decision: str, guide: str, draft: str, annotator: str, original: tuple[str, str],
               draft_source: str = "llm", *, seen_version: int | None = None, note: str = "",
               source: str = "app", round: int | None = None) -> Decision:
        """Record a verification and the step's original guide; returns the step's resolved decision.

        ``seen_version=None`` answers on the current version (no stale-view check: for
        scripts and single-annotator use); the app passes the version it showed. ``round``
        as in :meth:`record_response`.

        Raises:
            StaleView: see :meth:`record_response`.
            ValueError: see :meth:`record_response`.
        """
        self.keep_original(sid, original[0], original[1])
        version = self.step_version(sid) if seen_version is None else seen_version
        r = self.record_response(sid, annotator, "verify", decision, guide=guide, draft=draft, draft_source=draft_source,
                                 note=note, seen_version=version, source=source, round=round)
        res = self.resolution(sid)
        if not res.resolved:
            return Decision(sid, r.decision, r.guide, r.draft, r.annotator, r.decided_at, r.draft_source, r.note,
                            res.status)
        return _decision(res)

    def decisions(self) -> dict[str, Decision]:
        """The resolved verification of every decided or adjudicated step (the rule, not the last writer)."""
        return {sid: _decision(res) for sid, res in self.resolutions("verify").items() if res.resolved}

    def adjudicate(self, sid: str, status: AuditStatus | str, element_id: str | None, annotator: str, note: str = "",
                   *, seen_version: int | None = None, source: str = "app") -> Adjudication:
        """Record an adjudication of a disputed audit label (``seen_version`` as in :meth:`decide`).

        Returns the response as an :class:`Adjudication` (the step's resolution may still be disputed).
        """
        status = AuditStatus(status)
        if status not in (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE):
            raise ValueError(f"an adjudication resolves to confirmed, remapped or unmappable, got {status.value}")
        version = self.step_version(sid) if seen_version is None else seen_version
        r = self.record_response(sid, annotator, "adjudicate", status.value, element_id=element_id, note=note,
                                 seen_version=version, source=source)
        return Adjudication(sid, status, r.element_id, r.annotator, r.note, r.decided_at)

    def adjudications(self) -> dict[str, Adjudication]:
        """The resolved adjudication of every step whose adjudicators agree (or were adjudicated)."""
        return {sid: Adjudication(sid, AuditStatus(res.decision), res.element_id, ", ".join(res.verified_by),
                                  "; ".join(res.notes), res.decided_at)
                for sid, res in self.resolutions("adjudicate").items() if res.resolved}

    # -- assignments -------------------------------------------------------------------

    def assign(self, step_ids: Sequence[str], annotators: Sequence[str], overlap: float, seed: int,
               *, force: bool = False) -> dict[str, tuple[str, ...]]:
        """Split ``step_ids`` among ``annotators``; an ``overlap`` share goes to two of them.

        A seeded shuffle, then round-robin; the first ``round(overlap * len(step_ids))``
        shuffled steps get a second annotator, cycling through the pairs (every pair gets
        overlap items once there are enough). Deterministic for a seed.

        Returns:
            ``step_id -> annotators``, in the order of ``step_ids``.

        Raises:
            ValueError: no annotator, a repeated or empty name, ``overlap`` outside [0, 1]
                (or above 0 with one annotator), or steps already assigned (unless ``force``,
                which replaces their assignment).
        """
        names = [_annotator(a) for a in annotators]
        if not names:
            raise ValueError("name at least one annotator")
        if len(set(names)) != len(names):
            raise ValueError(f"an annotator is named twice: {', '.join(names)}")
        if not 0.0 <= float(overlap) <= 1.0:
            raise ValueError(f"the overlap is a share of the steps, between 0 and 1; got {overlap}")
        if overlap > 0 and len(names) < 2:
            raise ValueError("an overlap needs at least two annotators")
        ids = list(dict.fromkeys(step_ids))
        order = sorted(ids)
        random.Random(seed).shuffle(order)
        n_overlap = round(float(overlap) * len(order))
        k_count = len(names)
        plan: dict[str, tuple[str, ...]] = {}
        for k, sid in enumerate(order):
            first = names[k % k_count]
            if k < n_overlap:
                offset = 1 + (k // k_count) % (k_count - 1)
                plan[sid] = (first, names[(k + offset) % k_count])
            else:
                plan[sid] = (first,)
        at = _now()

        def write(db: sqlite3.Connection) -> None:
            taken = sorted({r[0] for r in db.execute("SELECT step_id FROM assignments")} & set(ids))
            if taken and not force:
                raise ValueError(f"{len(taken)} of these steps are assigned already (first: {taken[0]}); "
                                 "assign them again with force (mag annotate --assign ... --force)")
            db.executemany("DELETE FROM assignments WHERE step_id = ?", [(s,) for s in taken])
            db.executemany("INSERT INTO assignments (step_id, annotator, assigned_at) VALUES (?, ?, ?)",
                           [(sid, who, at) for sid in ids for who in plan[sid]])

        self._write(write)
        return {sid: plan[sid] for sid in ids}

    def assignments(self) -> dict[str, tuple[str, ...]]:
        """``step_id -> annotators`` of every assigned step (in the order they were assigned)."""
        out: dict[str, list[str]] = {}
        for sid, who in self._rows("SELECT step_id, annotator FROM assignments ORDER BY rowid"):
            out.setdefault(sid, []).append(who)
        return {sid: tuple(v) for sid, v in out.items()}

    def queue(self, annotator: str) -> list[str]:
        """The steps assigned to ``annotator`` that have no verification of theirs yet (assignment order)."""
        done = {r.step_id for r in self.responses(annotator=annotator.strip(), kind="verify")}
        return [sid for sid, who in self.assignments().items() if annotator.strip() in who and sid not in done]

    def progress(self, to_verify: Iterable[str]) -> dict[str, tuple[int, int]]:
        """"M of N verified": ``{"": (resolved, N), annotator: (answered, assigned)}``.

        ``to_verify`` are the steps to verify (the drafted ones). Overall, M counts those
        whose verification is decided or adjudicated. Per annotator, N is their assigned
        steps (or all of ``to_verify`` when nothing is assigned to anyone) and M those they
        answered.
        """
        steps = list(dict.fromkeys(to_verify))
        wanted = set(steps)
        res = self.resolutions("verify")
        out = {"": (sum(res[s].resolved for s in steps if s in res), len(steps))}
        assigned = self.assignments()
        answered: dict[str, set[str]] = {}
        for r in self.responses(kind="verify"):
            answered.setdefault(r.annotator, set()).add(r.step_id)
        people = sorted(set(answered) | {w for who in assigned.values() for w in who})
        for who in people:
            mine = [s for s, names in assigned.items() if who in names] if assigned else steps
            mine = [s for s in mine if s in wanted]
            out[who] = (sum(s in answered.get(who, set()) for s in mine), len(mine))
        return out


def _decision(res: Resolution) -> Decision:
    return Decision(res.step_id, res.decision or "", res.guide, res.draft, ", ".join(res.verified_by), res.decided_at,
                    res.draft_source, "; ".join(res.notes), res.status)


def decision_counts(db: str | os.PathLike, step_ids: set[str]) -> int:
    """How many verification decisions and adjudications ``db`` holds for ``step_ids``.

    Opens the file read-only and creates nothing; a file that is not an annotation
    database counts 0.
    """
    try:
        con = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        n = 0
        try:  # schema 3 and later: every response counts
            return sum(r[0] in step_ids for r in con.execute("SELECT step_id FROM responses"))
        except sqlite3.Error:
            pass
        for table in ("decisions", "adjudications"):  # an older database, read as it is
            try:
                n += sum(r[0] in step_ids for r in con.execute(f"SELECT step_id FROM {table}"))  # noqa: S608 (fixed names)
            except sqlite3.Error:
                pass
        return n
    finally:
        con.close()


# -- the databases next to a corpus --------------------------------------------------------


def stored_adjudications(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None = None) -> Adjudications:
    """Adjudications of the annotation database ``db_path`` (default ``raw_dir/annotations.sqlite``).

    Raises:
        ValueError: an explicit ``db_path`` that does not exist.
    """
    db = Path(db_path) if db_path is not None else Path(raw_dir) / DEFAULT_DB
    if not db.is_file():
        if db_path is not None:
            raise ValueError(f"annotation database not found: {db}")
        return {}
    with AnnotationStore(db) as store:
        return {sid: (a.status, a.element_id, a.annotator) for sid, a in store.adjudications().items()}


def other_decision_dbs(raw_dir: str | os.PathLike, db_path: str | os.PathLike | None, step_ids: set[str],
                       *folders: Path) -> list[str]:
    """Warnings for SQLite files beside the corpus (or in ``folders``), other than the database
    in use, that hold decisions for ``step_ids``: decisions a command would otherwise ignore."""
    raw_dir = Path(raw_dir)
    used = (Path(db_path) if db_path is not None else raw_dir / DEFAULT_DB).resolve()
    out = []
    seen = set()
    for folder in (raw_dir, *folders):
        for db in sorted(Path(folder).glob("*.sqlite")):
            if db.resolve() in seen or db.resolve() == used:
                continue
            seen.add(db.resolve())
            n = decision_counts(db, step_ids)
            if n:
                out.append(f"{db} holds {n} decisions for these steps but is not the database in use "
                           f"({used}); pass --db {db} to use it")
    return out


__all__ = [
    "ADJUDICATION_DECISIONS", "DECISION_WORDS", "DEFAULT_DB", "KINDS", "MIGRATIONS", "RESOLUTION_STATUSES",
    "SCHEMA_VERSION", "SOURCES", "VERIFICATION_DECISIONS", "Adjudication", "Agreement", "AnnotationStore",
    "Decision", "Figure", "Resolution", "Response", "StaleView", "agreement", "cohen_kappa", "decision_counts",
    "krippendorff_alpha", "migrate", "other_decision_dbs", "read_responses", "resolve", "response_label",
    "stored_adjudications", "summary",
]
