"""The breakdown granularity rule (see :mod:`mag_dataset.board`): what of a report or a
paired comparison a visitor may see, so that no shown figure rests on fewer than
:data:`MIN_GROUP_STEPS` gold steps and no withheld group can be recovered by subtraction.
Pure functions over report dicts and :class:`mag_dataset.compare.Comparison` objects.

Sizes are **distinct gold steps** (a report's ``gold_steps`` and ``gold_n``), whatever the
seeds: counted as scores, a file of ten identical seeds made a site of 2 gold steps a group
of "20 steps", and one such file that varied one step's guess per site across its seeds
recovered every gold element it probed. Reports written before those keys existed fall back
to their score counts (``steps``, ``n``), exact for single-seed files.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

#: Smallest number of gold steps behind any figure of a shown breakdown.
MIN_GROUP_STEPS = 10


def group_gold_steps(group: dict[str, Any]) -> int:
    """Distinct gold steps of a breakdown group (its score count in a report without them)."""
    return int(group.get("gold_steps", group.get("steps")) or 0)


def _gold_n(cell: dict[str, Any]) -> int:
    """Distinct gold steps a metric of a group was scored on (its score count without them)."""
    return int(cell.get("gold_n", cell.get("n")) or 0)


def _pool(groups: dict[str, dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Pool breakdown groups (disjoint sets of gold steps): counts add up, each metric is the
    n-weighted mean."""
    out: dict[str, Any] = {"steps": sum(int(groups[g].get("steps") or 0) for g in names)}
    if all("gold_steps" in groups[g] for g in names):
        out["gold_steps"] = sum(group_gold_steps(groups[g]) for g in names)
    metrics = {k for g in names for k, v in groups[g].items() if isinstance(v, dict)}
    for m in sorted(metrics):
        cells = [groups[g][m] for g in names if isinstance(groups[g].get(m), dict)]
        n = sum(int(c.get("n") or 0) for c in cells)
        total = sum(float(c["value"]) * int(c.get("n") or 0) for c in cells if c.get("value") is not None)
        out[m] = {"value": round(total / n, 6) if n else None, "n": n}
        if all("gold_n" in c for c in cells):
            out[m]["gold_n"] = sum(_gold_n(c) for c in cells)
    return out


def coarsen_breakdown(groups: dict[str, dict[str, Any]], min_steps: int = MIN_GROUP_STEPS) -> dict[str, dict[str, Any]]:
    """One breakdown cut to the granularity rule of the module docstring.

    Groups with fewer than ``min_steps`` gold steps are pooled into ``other``; while
    ``other`` is still smaller, the next smallest group joins it. With fewer than two
    groups left the breakdown is withheld (``{}``: it would equal the total). A metric
    scored on fewer than ``min_steps`` gold steps of a kept group is dropped from that group.
    """
    sizes = {g: group_gold_steps(v or {}) for g, v in groups.items() if isinstance(v, dict)}
    keep = sorted(sizes, key=lambda g: (sizes[g], g))
    small = [g for g in keep if sizes[g] < min_steps]
    keep = [g for g in keep if sizes[g] >= min_steps]
    while small and sum(sizes[g] for g in small) < min_steps and keep:
        small.append(keep.pop(0))
    out = {g: dict(groups[g]) for g in sorted(keep)}
    if small:
        out["other" if "other" not in out else "other (pooled)"] = {**_pool(groups, small), "pooled": sorted(small)}
    if len(out) < 2:
        return {}
    for g, block in out.items():
        for m in [k for k, v in block.items() if isinstance(v, dict)]:
            if _gold_n(block[m]) < min_steps:
                del block[m]
    return out


def coarsen_comparison(comp: Any, min_steps: int = MIN_GROUP_STEPS) -> Any:
    """A comparison safe to show: a breakdown dimension is kept only when every compared
    cell of it rests on at least ``min_steps`` paired steps (a withheld group could be
    recovered from the headline and the others); the rest is withheld and named."""
    kept, withheld = {}, []
    for dim, groups in comp.breakdowns.items():
        if all(cell["n_steps"] >= min_steps for ms in groups.values() for cell in ms.values()):
            kept[dim] = groups
        else:
            kept[dim] = {}
            withheld.append(dim)
    prov = dict(comp.provenance)
    if withheld:
        prov["breakdowns_withheld"] = (
            f"{', '.join(withheld)}: a group under {min_steps} steps (the leaderboard's granularity rule); "
            "p_holm of the shown breakdowns still counts the withheld tests")
    return replace(comp, breakdowns=kept, provenance=prov)


def public_report(report: dict[str, Any], min_steps: int = MIN_GROUP_STEPS) -> dict[str, Any]:
    """A report safe to show: every breakdown cut by :func:`coarsen_breakdown`, with the
    rule recorded under ``provenance.breakdown_rule``; the headline figures unchanged."""
    out = json.loads(json.dumps(report))
    blocks = out.get("breakdowns")
    if isinstance(blocks, dict):
        out["breakdowns"] = {k: coarsen_breakdown(v, min_steps) if isinstance(v, dict) else v for k, v in blocks.items()}
    out.setdefault("provenance", {})["breakdown_rule"] = (
        f"groups of fewer than {min_steps} distinct gold steps (whatever the seeds) pooled into 'other' (with the "
        f"next smallest group while 'other' is smaller); breakdowns that cannot keep two groups withheld; metrics "
        f"scored on fewer than {min_steps} gold steps of a group left out"
    )
    return out


__all__ = ["MIN_GROUP_STEPS", "coarsen_breakdown", "coarsen_comparison", "group_gold_steps", "public_report"]
