"""Regenerate the golden REPORTS of the scorer's hard cases (deliberately!).

    python tests/golden/make_golden_reports.py            # rebuild gold, predictions and reports
    python tests/golden/make_golden_reports.py --rescore  # keep gold and predictions, recompute reports

Writes ``tests/golden/reports_hard_cases.json``. Where ``heuristic_bundled_test.json`` pins
well-formed outputs on unaudited steps, this file pins what that one cannot:

- gold built by the real builder from the synthetic raw corpus (``tests/synthetic_raw.py``)
  with an audit file that marks steps ``disputed`` (excluded from element-level scoring),
  ``unmappable``, ``remapped``, ``confirmed`` and ``stale``;
- predictions in every view and contract that mix gold answers, the heuristic baseline's
  outputs, wrong steps, wrong targets, near misses, paraphrased guides and the format
  failures a model really writes (prose, truncated JSON, keys in the wrong order, a fenced
  object, an unknown action), with steps left out (scored as missing), over two seeds;
- cached judge verdicts (three judges, split majorities, unjudged guides), so usefulness
  is computed;
- the bootstrap interval (``ci95``), the breakdowns, the per-step scores and the plain-text
  rendering ``mag score`` prints, for both views, plus one coord run in ``norm1000``.

``tests/test_golden_reports.py`` re-scores the stored predictions against the stored gold
and checks each report's JSON and text byte for byte. Run this only for an intended scorer
change, and review the diff.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "reports_hard_cases.json"
JUDGES = ("judge-a", "judge-b", "judge-c")
SEEDS = (0, 1)


def _h(*parts: object) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _gold(root: Path) -> dict[str, list[dict]]:
    """Build the synthetic corpus with an audit file; the test split's gold records per view."""
    sys.path.insert(0, str(HERE.parent))
    from synthetic_raw import make_corpus

    from mag_dataset.builder import build_dataset
    from mag_dataset.dataset import gold_records, load_view, step_from_record
    from mag_dataset.raw import write_audit
    from mag_dataset.schema import AuditRecord, AuditStatus

    raw = root / "raw"
    make_corpus(raw, seeds_per_template=3)
    build_dataset(raw, root / "plain", progress=False)
    test = [step_from_record(r) for r in gold_records(load_view(root / "plain", "som", "test"))]
    targeted = [s for s in test if s.action.element_id is not None]
    audit: dict[str, AuditRecord] = {}
    for k, s in enumerate(targeted):
        other = next(c.id for c in s.candidates if c.id != s.action.element_id)
        rec = [
            AuditRecord(status=AuditStatus.DISPUTED, disputed=True),
            AuditRecord(status=AuditStatus.CONFIRMED, stale=True),
            AuditRecord(status=AuditStatus.UNMAPPABLE, reason="point_outside_candidates"),
            AuditRecord(status=AuditStatus.REMAPPED, element_id=other, original_element_id=s.action.element_id),
            AuditRecord(status=AuditStatus.CONFIRMED),
            None,
        ][k % 6]
        if rec is not None:
            audit[s.step_id] = rec
    write_audit(raw / "audit.jsonl", audit)
    build_dataset(raw, root / "built", progress=False)
    return {v: gold_records(load_view(root / "built", v, "test")) for v in ("som", "coord")}


def _outputs(steps: list, view: str, contract: str, seed: int) -> list[dict]:
    """A deterministic mix of right, wrong, malformed and missing outputs, one per step."""
    from mag_dataset.heuristic import heuristic_output
    from mag_dataset.prompts import render_output, render_target

    # each step's own menu: a coord row's is empty, so there the heuristic's outputs are blind
    # (mostly finish), as this file has always held them
    heur = {s.step_id: heuristic_output(s, view, contract, menu=s.candidates) for s in steps}
    keys = {"A": ("action",), "G": ("guide",), "J": ("action", "guide"), "JG": ("guide", "action")}[contract]
    out = []
    for i, s in enumerate(steps):
        kind = (i + 3 * seed) % 10
        gold = json.loads(render_target(s, view, contract))
        if kind == 0:
            text = render_target(s, view, contract)
        elif kind == 1:
            text = heur[s.step_id]
        elif kind == 2:  # the answer of the task's next (or previous) step: a wrong step
            j = i + 1 if i + 1 < len(steps) and steps[i + 1].task_id == s.task_id else max(i - 1, 0)
            text = render_target(steps[j], view, contract)
        elif kind == 3:
            text = "I would click the button that submits the form."
        elif kind == 4:  # the contract's keys in the wrong order (or one key missing)
            text = json.dumps({k: gold[k] for k in reversed(keys)} if len(keys) == 2 else {"answer": gold[keys[0]]})
        elif kind == 5:
            text = render_target(s, view, contract)[: 17 + i % 7]
        elif kind == 6:  # right action, paraphrased guide
            act = gold.get("action")
            guide = "Now " + s.guide[0].lower() + s.guide[1:] if s.guide else "Go on."
            text = render_output(act, guide if "guide" in keys else None, contract)
        elif kind == 7:
            continue  # no prediction: scored as missing
        elif kind == 8:  # a near miss: the wrong element, or a point just outside the box
            act = gold.get("action")
            if act is not None and "element" in act:
                act["element"] = next((c.id for c in s.candidates if c.id != act["element"]), act["element"])
            elif act is not None and "coordinate" in act and s.target_bbox is not None:
                act["coordinate"] = [s.target_bbox[2] + 3, s.target_bbox[3] + 3]
            text = render_output(act, gold.get("guide"), contract)
        else:  # a fenced object with an unknown action type, or fenced gold
            act = gold.get("action")
            if act is not None and i % 2:
                act = {**act, "type": "double_click"}
            text = "```json\n" + render_output(act, gold.get("guide"), contract) + "\n```"
        out.append({"step_id": s.step_id, "seed": seed, "output": text})
    return out


def _verdicts(runs: list[dict]) -> list[dict]:
    """Three judges' verdicts on most of the guides written: split majorities, some unjudged."""
    from mag_dataset.parsing import parse_output
    from mag_dataset.verdicts import verdict_key

    lines, seen = [], set()
    for run in runs:
        for p in run["predictions"]:
            parsed = parse_output(p["output"], run["view"], run["contract"])
            guide = parsed.guide if parsed.ok else None
            if not guide or (p["step_id"], guide.strip()) in seen or _h(p["step_id"], guide) % 5 == 0:
                continue
            seen.add((p["step_id"], guide.strip()))
            for judge in JUDGES:
                useful = _h(p["step_id"], guide, judge) % 3 != 0
                lines.append({"key": verdict_key(p["step_id"], guide, judge), "step_id": p["step_id"],
                              "judge": judge, "useful": useful})
    return sorted(lines, key=lambda d: d["key"])


def _reports(data: dict) -> None:
    """Score every run and store its report JSON (with per-step scores) and text."""
    from mag_dataset.dataset import step_from_record
    from mag_dataset.predictions import Prediction
    from mag_dataset.scoring import GoldSteps, format_report, score_predictions
    from mag_dataset.verdicts import read_usefulness_verdicts

    with tempfile.TemporaryDirectory() as tmp:
        vpath = Path(tmp) / "verdicts.jsonl"
        vpath.write_text("".join(json.dumps(v) + "\n" for v in data["verdicts"]), "utf-8")
        verdicts = read_usefulness_verdicts(vpath)
    steps = {v: [step_from_record(r) for r in recs] for v, recs in data["gold"].items()}
    for run in data["runs"]:
        view = run["view"]
        preds = [Prediction(p["step_id"], p["output"], p["seed"]) for p in run["predictions"]]
        report = score_predictions(
            preds, GoldSteps.from_views(view, steps), view, run["contract"], verdicts=verdicts, allow_missing=True,
            keep_steps=True, coord_space=run.get("coord_space"),
        )
        run["report_json"] = report.to_json(include_steps=True)
        run["report_text"] = format_report(report)


def build() -> dict:
    from mag_dataset.dataset import step_from_record
    from mag_dataset.scoring import SCORER_VERSION

    with tempfile.TemporaryDirectory() as tmp:
        gold = _gold(Path(tmp))
    steps = {v: [step_from_record(r) for r in recs] for v, recs in gold.items()}
    runs = []
    for view in ("som", "coord"):
        for contract in ("A", "G", "J", "JG"):
            preds = [p for seed in SEEDS for p in _outputs(steps[view], view, contract, seed)]
            runs.append({"view": view, "contract": contract, "predictions": preds})
    # the coord view once more with its points written in norm1000
    from mag_dataset.coords import parse_coord_space

    space = parse_coord_space("norm1000")
    by_id = {s.step_id: s for s in steps["coord"]}
    converted = []
    for p in next(r for r in runs if (r["view"], r["contract"]) == ("coord", "J"))["predictions"]:
        text = p["output"]
        try:
            obj = json.loads(text)
            pt = obj["action"]["coordinate"]
            s = by_id[p["step_id"]]
            obj["action"]["coordinate"] = [round(v, 3) for v in space.from_pixels(tuple(pt), s.image_width, s.image_height)]
            text = json.dumps(obj)
        except (ValueError, KeyError, TypeError):
            pass
        converted.append({**p, "output": text})
    runs.append({"view": "coord", "contract": "J", "coord_space": "norm1000", "predictions": converted})
    data = {
        "about": "the scorer's hard cases (format failures, missing, disputed, unmappable, remapped, stale, "
                 "cached verdicts, ci95, two seeds); regenerate with python tests/golden/make_golden_reports.py "
                 "(only for an intended scorer change)",
        "scorer_version": SCORER_VERSION,
        "gold": gold,
        "verdicts": [],
        "runs": runs,
    }
    data["verdicts"] = _verdicts(runs)
    _reports(data)
    return data


def main() -> int:
    from mag_dataset.fileio import atomic_write
    from mag_dataset.scoring import SCORER_VERSION

    if "--rescore" in sys.argv[1:]:
        data = json.loads(GOLDEN.read_text("utf-8"))
        data["scorer_version"] = SCORER_VERSION
        _reports(data)
    else:
        data = build()
    atomic_write(GOLDEN, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    n = sum(len(r["predictions"]) for r in data["runs"])
    print(f"wrote {GOLDEN} ({len(data['runs'])} reports, {n} predictions, {len(data['verdicts'])} verdicts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
