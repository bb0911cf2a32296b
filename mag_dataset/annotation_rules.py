"""The rules of human verification, as data: responses, their resolution, agreement, the schema.

No corpus, no app: what :mod:`mag_dataset.harness.annotation_store` (the store, its
module docstring states the rules) and the builder (which records who decided what and
the agreement figures in the built dataset, reading the database without changing it)
both need. The builder sits below the harness, so these live here.

Agreement follows Cohen (1960), "A coefficient of agreement for nominal scales", and
Krippendorff (2004), "Content Analysis", ch. 11 (alpha for nominal data, computed with the
``krippendorff`` package).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mag_dataset.schema import AuditStatus
from mag_dataset.sqlite_migrations import Migration, apply_migrations, schema_version

DEFAULT_DB = "annotations.sqlite"
VERIFICATION_DECISIONS = ("accept", "edit", "reject")
ADJUDICATION_DECISIONS = ("confirmed", "remapped", "unmappable")
#: The decisions of each kind of response.
KINDS = {"verify": VERIFICATION_DECISIONS, "adjudicate": ADJUDICATION_DECISIONS}
#: Where a response was given.
SOURCES = ("app", "label-studio", "cli")
#: A step's resolution status (:meth:`AnnotationStore.resolution`).
RESOLUTION_STATUSES = ("undecided", "decided", "needs_adjudication", "adjudicated")
#: How a verification decision reads in the data (``guide_decision``).
DECISION_WORDS = {"accept": "accepted", "edit": "edited", "reject": "rejected"}


@dataclass(frozen=True)
class Response:
    """One annotator's answer on one step (a row of ``responses``)."""

    id: int
    step_id: str
    annotator: str
    round: int
    kind: str
    decision: str
    guide: str
    draft: str
    draft_source: str
    element_id: str | None
    note: str
    decided_at: str
    source: str
    based_on: int

    def describe(self) -> str:
        """``alice accepted`` / ``bob edited to "..."`` / ``carol remapped to [12]``: for messages."""
        if self.kind == "verify":
            what = DECISION_WORDS[self.decision] + (f' to "{self.guide}"' if self.decision == "edit" else "")
        else:
            what = self.decision + (f" to [{self.element_id}]" if self.element_id else "")
        return f"{self.annotator} {what} at {self.decided_at}"

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _RESPONSE_FIELDS}


_RESPONSE_FIELDS = ("id", "step_id", "annotator", "round", "kind", "decision", "guide", "draft", "draft_source",
                    "element_id", "note", "decided_at", "source", "based_on")
_RESPONSE_COLUMNS = ", ".join(_RESPONSE_FIELDS)


class StaleView(ValueError):
    """A response given on a view of a step that others have answered since; nothing was written.

    Attributes:
        step_id: the step.
        seen_version: the version the annotator saw.
        current_version: the step's version now.
        changes: the responses recorded since the version seen, oldest first.
    """

    def __init__(self, step_id: str, seen_version: int, current_version: int, changes: list[Response]):
        self.step_id = step_id
        self.seen_version = seen_version
        self.current_version = current_version
        self.changes = changes
        what = "; ".join(r.describe() for r in changes) or "the step changed"
        super().__init__(f"step {step_id} changed since you opened it: {what}; look at it again before deciding")


@dataclass(frozen=True)
class Resolution:
    """What a step's responses of one kind come to (the rule is in the module docstring).

    ``decision``, ``guide``, ``draft_source``, ``element_id``, ``verified_by``,
    ``decided_at`` and ``notes`` are those of the deciding round when ``status`` is
    ``decided`` or ``adjudicated``; empty otherwise. ``responses`` are every response of
    that kind, oldest first; ``round`` is the latest round.
    """

    step_id: str
    kind: str
    status: str
    round: int = 0
    decision: str | None = None
    guide: str = ""
    draft: str = ""
    draft_source: str = "llm"
    element_id: str | None = None
    verified_by: tuple[str, ...] = ()
    decided_at: str = ""
    notes: tuple[str, ...] = ()
    responses: tuple[Response, ...] = field(default=(), repr=False)

    @property
    def resolved(self) -> bool:
        return self.status in ("decided", "adjudicated")


@dataclass(frozen=True)
class Decision:
    """A step's resolved verification (``decision`` is one of :data:`VERIFICATION_DECISIONS`).

    ``annotator`` is the deciding annotators joined by ``", "`` (the built ``verified_by``).
    """

    step_id: str
    decision: str
    guide: str
    draft: str
    annotator: str
    decided_at: str
    draft_source: str = "llm"
    note: str = ""
    status: str = "decided"


@dataclass(frozen=True)
class Adjudication:
    """A step's resolved human adjudication of a disputed audit label."""

    step_id: str
    status: AuditStatus
    element_id: str | None
    annotator: str
    note: str
    decided_at: str


_TABLES = """
CREATE TABLE IF NOT EXISTS decisions (
    step_id TEXT PRIMARY KEY,
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'edit', 'reject')),
    guide TEXT NOT NULL,
    draft TEXT NOT NULL,
    annotator TEXT NOT NULL,
    decided_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS originals (
    step_id TEXT PRIMARY KEY,
    guide TEXT NOT NULL,
    guide_source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS adjudications (
    step_id TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'remapped', 'unmappable')),
    element_id TEXT,
    annotator TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    decided_at TEXT NOT NULL
);
"""

_TEAM_TABLES = """
CREATE TABLE responses (
    id INTEGER PRIMARY KEY,
    step_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    round INTEGER NOT NULL CHECK (round >= 1),
    kind TEXT NOT NULL CHECK (kind IN ('verify', 'adjudicate')),
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'edit', 'reject', 'confirmed', 'remapped', 'unmappable')),
    guide TEXT NOT NULL DEFAULT '',
    draft TEXT NOT NULL DEFAULT '',
    draft_source TEXT NOT NULL DEFAULT 'llm',
    element_id TEXT,
    note TEXT NOT NULL DEFAULT '',
    decided_at TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('app', 'label-studio', 'cli')),
    based_on INTEGER NOT NULL
);
CREATE INDEX responses_step ON responses (step_id);
CREATE TABLE assignments (
    step_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    assigned_at TEXT NOT NULL,
    PRIMARY KEY (step_id, annotator)
);
"""


def _statements(db: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _create_tables(db: sqlite3.Connection) -> None:
    _statements(db, _TABLES)


def _add_draft_source(db: sqlite3.Connection) -> None:
    # a database of the unversioned code may have the column already (it was added without a migration)
    if "draft_source" not in {row[1] for row in db.execute("PRAGMA table_info(decisions)")}:
        db.execute("ALTER TABLE decisions ADD COLUMN draft_source TEXT NOT NULL DEFAULT 'llm'")


def _to_responses(db: sqlite3.Connection) -> None:
    _statements(db, _TEAM_TABLES)
    old = [(at, sid, who, "verify", d, g, dr, src, None, "")
           for sid, d, g, dr, who, at, src in db.execute(
               "SELECT step_id, decision, guide, draft, annotator, decided_at, draft_source FROM decisions")]
    old += [(at, sid, who, "adjudicate", st, "", "", "llm", el, note)
            for sid, st, el, who, note, at in db.execute(
                "SELECT step_id, status, element_id, annotator, note, decided_at FROM adjudications")]
    old.sort(key=lambda r: (r[0], r[1], r[3]))
    db.executemany(
        "INSERT INTO responses (step_id, annotator, round, kind, decision, guide, draft, draft_source, element_id, "
        "note, decided_at, source, based_on) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, 'app', 0)",
        [(sid, who, kind, d, g, dr, src, el, note, at) for at, sid, who, kind, d, g, dr, src, el, note in old])
    db.execute("DROP TABLE decisions")
    db.execute("DROP TABLE adjudications")


#: The schema's history, oldest first (:mod:`mag_dataset.sqlite_migrations`).
MIGRATIONS: tuple[Migration, ...] = (
    Migration("the decisions, originals and adjudications tables", _create_tables),
    Migration("decisions.draft_source (rows decided before it were LLM drafts: 'llm')", _add_draft_source),
    Migration("responses (every decision and adjudication row becomes a round-1 response) and assignments",
              _to_responses),
)

#: The schema version this code reads and writes.
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, path: Path | str = "database") -> int:
    """Bring ``db`` to :data:`SCHEMA_VERSION`, in one transaction; returns the version it had.

    Raises:
        ValueError: the database was written by a newer version of this code (it is left as it is).
    """
    old = schema_version(db)
    if old == SCHEMA_VERSION:  # an up-to-date database is only read: no write lock on every open
        return old
    db.execute("BEGIN IMMEDIATE")  # DDL included (sqlite3 opens no transaction for it by itself)
    try:
        old = apply_migrations(db, MIGRATIONS, lambda v: ValueError(
            f"{path}: annotation database of schema version {v}, newer than this mag_dataset reads "
            f"({SCHEMA_VERSION}); upgrade mag_dataset"))
    except BaseException:
        db.rollback()
        raise
    db.commit()
    return old


def _annotator(name: str) -> str:
    """The annotator's name, stripped; a decision without one is refused."""
    if not name or not name.strip():
        raise ValueError("an annotator name is required")
    if "," in name:
        raise ValueError(f"an annotator name cannot hold a comma (names are listed with commas): {name.strip()!r}")
    return name.strip()


def _now() -> str:
    """The decision time, UTC, to the millisecond (ISO 8601)."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _norm(text: str) -> str:
    return " ".join(text.split())


def response_label(r: Response) -> str:
    """What the resolution rule and agreement compare: the decision; an edit with its guide
    (an "edit" that leaves the draft as it was is an accept, as in the app)."""
    if r.kind == "verify":
        if r.decision == "edit" and r.draft and _norm(r.guide) == _norm(r.draft):
            return "accept"
        return f"edit: {_norm(r.guide)}" if r.decision == "edit" else r.decision
    return r.decision + (f" [{r.element_id}]" if r.element_id else "")


def _counted(rows: Sequence[Response], rnd: int) -> list[Response]:
    """Each annotator's latest response in round ``rnd`` (in the order of those responses)."""
    last: dict[str, Response] = {}
    for r in rows:
        if r.round == rnd:
            last.pop(r.annotator, None)
            last[r.annotator] = r
    return list(last.values())


def resolve(step_id: str, kind: str, rows: Sequence[Response]) -> Resolution:
    """The resolution rule (module docstring) over one step's responses of one kind, oldest first."""
    rows = tuple(r for r in rows if r.kind == kind)
    if not rows:
        return Resolution(step_id, kind, "undecided")
    rnd = max(r.round for r in rows)
    counted = _counted(rows, rnd)
    if len({response_label(r) for r in counted}) > 1:
        return Resolution(step_id, kind, "needs_adjudication", rnd, responses=rows)
    last = counted[-1]
    decision = "accept" if kind == "verify" and response_label(last) == "accept" else last.decision
    return Resolution(
        step_id, kind, "decided" if rnd == 1 else "adjudicated", rnd, decision, last.guide, last.draft,
        last.draft_source, last.element_id, tuple(sorted(r.annotator for r in counted)),
        max(r.decided_at for r in counted), tuple(f"{r.annotator}: {r.note}" for r in counted if r.note), rows)


def _next_round(rows: Sequence[Response], kind: str, annotator: str) -> int:
    """The round a new response of ``annotator`` goes to (module docstring)."""
    rows = [r for r in rows if r.kind == kind]
    if not rows:
        return 1
    rnd = max(r.round for r in rows)
    counted = _counted(rows, rnd)
    disputed = len({response_label(r) for r in counted}) > 1
    if disputed and annotator not in {r.annotator for r in counted}:
        return rnd + 1
    return rnd


# -- agreement ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One agreement figure: its value (``None`` when undefined, with ``reason``), ``n`` items and counts."""

    value: float | None
    n: int
    counts: dict[str, int]
    reason: str = ""

    def text(self) -> str:
        return f"{self.value:.3f}" if self.value is not None else f"n/a ({self.reason})"

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "n": self.n, "counts": dict(self.counts), "reason": self.reason or None}


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> Figure:
    """Cohen's kappa of two annotators' labels on the same items: (p_o - p_e) / (1 - p_e).

    ``counts`` holds ``agree`` and each label's count per annotator (``a:accept``, ``b:edit``...).
    """
    n = len(a)
    counts: dict[str, int] = {"agree": sum(x == y for x, y in zip(a, b))}
    for who, labels in (("a", a), ("b", b)):
        for lab, c in sorted(Counter(_category(x) for x in labels).items()):
            counts[f"{who}:{lab}"] = c
    if n < 2:
        return Figure(None, n, counts, f"{n} item{'s' if n != 1 else ''} answered by both; 2 are needed")
    po = counts["agree"] / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe == 1.0:
        return Figure(None, n, counts, "both gave one and the same label to every item: chance agreement is 1")
    return Figure((po - pe) / (1 - pe), n, counts)


def krippendorff_alpha(table: Sequence[Sequence[str | None]]) -> Figure:
    """Krippendorff's alpha (nominal) of a table: one row per annotator, one column per item,
    ``None`` where the annotator gave no answer (the ``krippendorff`` package)."""
    items = [col for col in zip(*table) if sum(x is not None for x in col) >= 2] if table else []
    labels = sorted({x for col in items for x in col if x is not None})
    counts = {lab: c for lab, c in sorted(Counter(_category(x) for col in items for x in col if x is not None).items())}
    n = len(items)
    if n < 2:
        return Figure(None, n, counts, f"{n} item{'s' if n != 1 else ''} with two answers; 2 are needed")
    if len(labels) < 2:
        return Figure(None, n, counts, "every answer is the same label: alpha is undefined")
    try:
        import krippendorff
        import numpy as np
    except ImportError as e:
        return Figure(None, n, counts, f"the krippendorff package is not installed ({e}): "
                                       "pip install 'mag_dataset[leaderboard]'")
    code = {lab: i for i, lab in enumerate(labels)}
    data = np.array([[np.nan if x is None else code[x] for x in col] for col in items], dtype=float).T
    return Figure(float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")), n, counts)


def _category(label: str) -> str:
    return "edit" if label.startswith("edit: ") else label


@dataclass(frozen=True)
class Agreement:
    """Agreement on the overlap (:func:`agreement`)."""

    items: int
    annotators: tuple[str, ...]
    alpha: Figure
    pairs: dict[tuple[str, str], dict[str, Figure]]
    sites: dict[str, Figure]

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items, "annotators": list(self.annotators), "alpha": self.alpha.to_json(),
            "pairs": [{"a": a, "b": b, "kappa": f["kappa"].to_json(), "alpha": f["alpha"].to_json()}
                      for (a, b), f in self.pairs.items()],
            "sites": {s: f.to_json() for s, f in self.sites.items()},
        }

    def lines(self) -> list[str]:
        """The report as text lines (``mag annotate --report``, the app)."""
        out = [f"Agreement on the overlap: {self.items} steps verified by two or more of "
               f"{len(self.annotators)} annotators; label = the decision (an edit with its guide)",
               f"  Krippendorff's alpha (nominal), all: {self.alpha.text()}, n={self.alpha.n}"]
        for (a, b), f in self.pairs.items():
            k = f["kappa"]
            out.append(f"  {a} × {b}: Cohen's kappa {k.text()}, alpha {f['alpha'].text()}, n={k.n}, "
                       f"agree {k.counts.get('agree', 0)}; " + ", ".join(
                           f"{a if c.startswith('a:') else b} {c[2:]}={v}" for c, v in k.counts.items() if c != "agree"))
        for site, f in self.sites.items():
            out.append(f"  site {site}: alpha {f.text()}, n={f.n}")
        return out


def agreement(responses: Iterable[Response], site_of: Callable[[str], str] | None = None) -> Agreement:
    """Agreement of round-1 verifications on the steps answered by two or more annotators.

    Args:
        responses: the responses (of any kind and round; only round-1 verifications count,
            each annotator's latest).
        site_of: ``step_id -> site`` for the per-site figures (none without it).
    """
    by_step: dict[str, dict[str, str]] = {}
    for r in responses:
        if r.kind == "verify" and r.round == 1:
            by_step.setdefault(r.step_id, {})[r.annotator] = response_label(r)  # the latest wins
    overlap = {sid: v for sid, v in sorted(by_step.items()) if len(v) >= 2}
    people = tuple(sorted({a for v in overlap.values() for a in v}))
    table = [[overlap[s].get(p) for s in overlap] for p in people]
    pairs: dict[tuple[str, str], dict[str, Figure]] = {}
    for a, b in itertools.combinations(people, 2):
        both = [s for s, v in overlap.items() if a in v and b in v]
        if not both:
            continue
        la, lb = [overlap[s][a] for s in both], [overlap[s][b] for s in both]
        pairs[(a, b)] = {"kappa": cohen_kappa(la, lb), "alpha": krippendorff_alpha([la, lb])}
    sites: dict[str, Figure] = {}
    if site_of is not None:
        for site in sorted({site_of(s) for s in overlap}):
            ids = [s for s in overlap if site_of(s) == site]
            sites[site] = krippendorff_alpha([[overlap[s].get(p) for s in ids] for p in people])
    return Agreement(len(overlap), people, krippendorff_alpha(table), pairs, sites)


def read_responses(db: str | os.PathLike) -> list[Response]:
    """Every response of the database file ``db``, oldest first, without writing to it.

    An older database is migrated in a copy in memory (``mag build`` reads its input and
    never changes it).

    Raises:
        ValueError: not an annotation database, or one newer than this code.
    """
    try:
        src = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise ValueError(f"{db}: cannot open the annotation database ({e})") from None
    mem = sqlite3.connect(":memory:", isolation_level=None)
    try:
        src.backup(mem)
        migrate(mem, db)
        return [Response(*r) for r in mem.execute(f"SELECT {_RESPONSE_COLUMNS} FROM responses ORDER BY id")]
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{db}: not an annotation database ({e})") from None
    finally:
        src.close()
        mem.close()


def summary(responses: Sequence[Response], site_of: Callable[[str], str] | None = None) -> dict[str, Any]:
    """What the built dataset records of human verification: counts, decisions and agreement."""
    by_step: dict[str, list[Response]] = {}
    for r in responses:
        by_step.setdefault(r.step_id, []).append(r)
    decisions: Counter[str] = Counter()
    for sid, rows in by_step.items():
        res = resolve(sid, "verify", rows)
        if res.resolved:
            decisions[DECISION_WORDS[res.decision or ""]] += 1
        elif res.status == "needs_adjudication":
            decisions["disputed"] += 1
    return {
        "responses": len(responses),
        "annotators": sorted({r.annotator for r in responses}),
        "decisions": {d: decisions[d] for d in ("accepted", "edited", "rejected", "disputed")},
        "agreement": agreement(responses, site_of).to_json(),
    }


__all__ = [
    "ADJUDICATION_DECISIONS", "DECISION_WORDS", "DEFAULT_DB", "KINDS", "MIGRATIONS", "RESOLUTION_STATUSES",
    "SCHEMA_VERSION", "SOURCES", "VERIFICATION_DECISIONS", "Adjudication", "Agreement", "Decision", "Figure",
    "Resolution", "Response", "StaleView", "agreement", "cohen_kappa", "krippendorff_alpha", "migrate",
    "read_responses", "resolve", "response_label", "summary",
]
