"""The dataset fingerprint: one sha256 over the canonical gold records of a split.

Every report records it (provenance ``dataset_fingerprint``) so a score can be tied to the
exact gold it was computed on; ``mag compare`` and the leaderboard refuse reports of other
gold. Pure; a per-step digest memo keeps re-fingerprinting the same steps cheap. Not here:
any scoring.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import weakref
from collections.abc import Iterable
from typing import Any

from mag_dataset.schema import Action, Step

_STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Step))
_ACTION_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Action))


def _gold_line(step: Step) -> str:
    """Canonical JSON of one gold step: every Step field in declaration order, as a list.

    Lists instead of objects keep it fast (a 55-element menu per step); enums are str
    subclasses and serialise as their values; tuples serialise as lists.
    """
    row: list[Any] = []
    for name in _STEP_FIELDS:
        v = getattr(step, name)
        if name == "action":
            v = [getattr(v, f) for f in _ACTION_FIELDS]
        elif name == "candidates":
            v = [(c.id, c.role, c.text, c.bbox) for c in v]
        row.append(v)
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


# id(step) -> (weak reference, sha256 of the canonical line). A memo, not state: a Step is
# immutable, so the same object always has the same digest; entries vanish with their steps.
_LINES: dict[int, tuple[weakref.ref, bytes]] = {}


def _record_digest(step: Step) -> bytes:
    hit = _LINES.get(id(step))
    if hit is not None and hit[0]() is step:
        return hit[1]
    line = hashlib.sha256(_gold_line(step).encode("utf-8")).digest()
    key = id(step)

    def forget(ref: weakref.ref, key: int = key) -> None:
        if _LINES.get(key, (None,))[0] is ref:
            del _LINES[key]

    _LINES[key] = (weakref.ref(step, forget), line)
    return line


def dataset_fingerprint(steps: Iterable[Step]) -> str:
    """sha256 over the canonical gold records: the sha256 of each step's canonical JSON
    line (every Step field), concatenated in step-id order, hashed again.

    Any change to the gold (action, boxes, audit flags, guides, menus) changes the
    fingerprint; the order of ``steps`` does not.
    """
    h = hashlib.sha256()
    for _sid, digest in sorted((s.step_id, _record_digest(s)) for s in steps):
        h.update(digest)
    return "sha256:" + h.hexdigest()


__all__ = ["dataset_fingerprint"]
