"""Scorer benchmarks: the full scorer against its floor, and a streamed 1,000,000-line file.

1. A 1,220-step contract-J predictions file (the size of the WebMRE SoM test split, with a
   55-element candidate menu per step, WebMRE's median) is scored by the full pipeline —
   read and validate the JSONL, parse every output, all metrics, breakdowns, the task-level
   bootstrap, the JSON report — side by side with the *floor*: a bare loop that only calls
   sacrebleu sentence BLEU (orders 1 and 4) and rouge-score rougeL on the same guides.
   Prints both times and the ratio (goal: <= 1.5x; parsing, validation and aggregation
   should be nearly free next to the guide metrics). The scorer computes BLEU-1 from the
   n-gram statistics of its BLEU-4 pass (identical values, tested), so a second floor with
   that shortcut is printed too: the ratio against it is the scorer's own overhead.
2. A 1,000,000-line contract-A file (1,000 seeds x 1,000 steps) is scored streaming, in a
   fresh process, and the peak resident memory is printed next to that of a 100,000-line
   file over the same steps: the file is never held in memory, so the peak barely moves.

Run::

    python benchmarks/bench_scorer.py                 # both parts
    python benchmarks/bench_scorer.py --part floor    # only part 1
    python benchmarks/bench_scorer.py --part stream --stream-lines 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mag_dataset.template_guides import template_guide
from mag_dataset.predictions import Prediction, iter_predictions, write_predictions
from mag_dataset.prompts import render_output, render_target
from mag_dataset.schema import Action, Candidate, Step, box_center

SITES = ("shopping", "shopping_admin", "reddit", "gitlab", "map", "wikipedia")
WORDS = (
    "account orders search cart checkout profile settings issues merge request repository forum post comment "
    "reply upvote subscribe directions route museum library station article history revision product review "
    "price quantity customer invoice report project branch commit label milestone wiki page title submit save"
).split()
ROLES = ("button", "link", "textbox", "combobox", "checkbox", "tab", "menuitem")


def synthetic_steps(n_steps: int, seed: int = 0, menu: int = 55, keep_menu: bool = True) -> list[Step]:
    """Realistic-looking gold steps: six sites, ~5.6 steps per task, template guides.

    ``keep_menu=False`` gives coord-view rows (no candidate menu; the target box stays).
    """
    rng = random.Random(seed)
    steps: list[Step] = []
    task = 0
    while len(steps) < n_steps:
        length = min(rng.choice((2, 3, 4, 5, 6, 6, 7, 8, 9)), n_steps - len(steps))
        site = SITES[task % len(SITES)]
        intent = f"On {site}, " + " ".join(rng.choice(WORDS) for _ in range(12))
        guides: list[str] = []
        for i in range(length):
            cands = []
            for c in range(menu):
                x, y = 10.0 + (c % 5) * 250, 10.0 + (c // 5) * 60
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                cands.append(Candidate(str(c), rng.choice(ROLES), text, (x, y, x + 200, y + 40)))
            kind = rng.random()
            target = rng.choice(cands)
            if kind < 0.55:
                action = Action("click", element_id=target.id, coordinate=box_center(target.bbox))
            elif kind < 0.75:
                action = Action("type", element_id=target.id, coordinate=box_center(target.bbox),
                                text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))))
            elif kind < 0.82:
                action = Action("select", element_id=target.id, coordinate=box_center(target.bbox), value=rng.choice(WORDS))
            elif kind < 0.9:
                action, target = Action("scroll", direction=rng.choice(("up", "down"))), None
            elif i == length - 1:
                action, target = Action("finish", answer=rng.choice(WORDS)), None
            else:
                action, target = Action("press", key="Enter"), None
            guide = template_guide(action, target) + " " + " ".join(rng.choice(WORDS) for _ in range(6))
            audit = rng.random()
            status = "disputed" if audit < 0.04 else "unmappable" if audit < 0.1 else "unaudited"
            steps.append(Step(
                step_id=f"task-{task:04d}/{i}", task_id=f"task-{task:04d}", site=site, intent=intent,
                intent_template_id=f"tpl-{task % 40}", step_index=i, num_steps=length, image_width=1280,
                image_height=720, previous_guides=tuple(guides), guide=guide, guide_source="llm", action=action,
                target_bbox=target.bbox if target is not None else None, audit_status=status,
                disputed=status == "disputed", stale=rng.random() < 0.59, unseen_template=task % 40 >= 37,
                split="test", candidates=tuple(cands) if keep_menu else (),
            ))
            guides.append(guide)
        task += 1
    return steps


def model_like_output(step: Step, view: str, contract: str, rng: random.Random) -> str:
    """A plausible model output: mostly right, guides paraphrased, a few format failures."""
    r = rng.random()
    if r < 0.02:
        return "I will click the button. " + render_target(step, view, contract)
    words = step.guide.split()
    for _ in range(rng.randint(0, 5)):
        words[rng.randrange(len(words))] = rng.choice(WORDS)
    guide = " ".join(words)
    gold = json.loads(render_target(step, view, contract))
    action = gold.get("action")
    if action is not None and r > 0.6:
        action = {"type": "click", "element": str(rng.randrange(55))} if view == "som" else {
            "type": "click", "coordinate": [rng.randrange(1280), rng.randrange(720)]}
    text = render_output(action, guide, contract)
    return "```json\n" + text + "\n```" if r > 0.95 else text


def _time(fn, repeat: int) -> float:
    """Best CPU time of this process over ``repeat`` runs (both sides are single-threaded,
    so CPU time is their cost even on a machine shared with other jobs)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def bench_floor(n_steps: int = 1220, repeat: int = 5) -> dict:
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU

    from mag_dataset.parsing import parse_output
    from mag_dataset.scoring import score_predictions

    steps = synthetic_steps(n_steps)
    rng = random.Random(1)
    preds = [Prediction(s.step_id, model_like_output(s, "som", "J", rng)) for s in steps]
    tmp = Path(tempfile.mkdtemp(prefix="bench_scorer_"))
    path = write_predictions(tmp / "preds-J.jsonl", preds)
    ids = [s.step_id for s in steps]
    # the floor scores the same guide pairs; a failed output has no guide, the floor scores ""
    pairs = []
    for p, s in zip(preds, steps):
        parsed = parse_output(p.output, "som", "J")
        pairs.append((parsed.guide or "", s.guide))
    bleu1 = BLEU(lowercase=True, max_ngram_order=1, effective_order=True)
    bleu4 = BLEU(lowercase=True, max_ngram_order=4, effective_order=True)
    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

    def floor() -> None:
        for hyp, ref in pairs:
            bleu1.sentence_score(hyp, [ref])
            bleu4.sentence_score(hyp, [ref])
            rouge.score(ref, hyp)

    from mag_dataset.scoring import bleu_1_4

    def floor_shared() -> None:  # what the scorer does: BLEU-1 from the BLEU-4 n-gram statistics
        for hyp, ref in pairs:
            bleu_1_4(hyp, ref)
            rouge.score(ref, hyp)

    def full() -> None:
        report = score_predictions(iter_predictions(path, ids), steps, "som", "J")
        report.to_json()

    full()  # warm-up: lazy imports and metric objects
    floor()
    t_full, t_floor, t_shared = [], [], []
    for _ in range(repeat):  # interleaved, so machine load hits all alike
        t_floor.append(_time(floor, 1))
        t_shared.append(_time(floor_shared, 1))
        t_full.append(_time(full, 1))
    report = score_predictions(iter_predictions(path, ids), steps, "som", "J")
    result = {
        "steps": n_steps,
        "tasks": report.counts["tasks"],
        "file_bytes": path.stat().st_size,
        "full_s": min(t_full),
        "floor_s": min(t_floor),
        "ratio": min(t_full) / min(t_floor),
        "floor_shared_s": min(t_shared),
        "ratio_shared": min(t_full) / min(t_shared),
        "saa": report.value("saa"),
        "bleu1": report.value("bleu1"),
        "ofcr": report.value("ofcr"),
    }
    path.unlink()
    tmp.rmdir()
    return result


def _stream_child(path: str, n_steps: int) -> None:
    """Runs in a fresh process: score one file streaming, print JSON with peak RSS."""
    from mag_dataset.scoring import score_predictions

    steps = synthetic_steps(n_steps, menu=8, keep_menu=False)
    ids = [s.step_id for s in steps]
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    report = score_predictions(iter_predictions(path, ids), steps, "coord", "A")
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"lines": report.counts["scored"], "seeds": len(report.counts["seeds"]), "seconds": elapsed,
                      "peak_rss_mib": peak / 1024, "before_scoring_rss_mib": base / 1024,
                      "saa": report.value("saa")}))


def write_stream_file(path: Path, n_steps: int, n_lines: int) -> None:
    steps = synthetic_steps(n_steps, menu=8, keep_menu=False)
    rng = random.Random(2)
    variants = [[json.dumps(model_like_output(s, "coord", "A", rng)) for _ in range(4)] for s in steps]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_lines):
            seed, k = divmod(i, n_steps)
            s = steps[k]
            f.write(f'{{"step_id": "{s.step_id}", "output": {variants[k][(seed + k) % 4]}, "seed": {seed}}}\n')


def bench_stream(n_lines: int = 1_000_000, small_lines: int = 100_000, n_steps: int = 1000) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="bench_stream_"))
    out = []
    try:
        for lines in (small_lines, n_lines):
            path = tmp / f"preds-A-{lines}.jsonl"
            write_stream_file(path, n_steps, lines)
            size = path.stat().st_size
            r = subprocess.run(
                [sys.executable, __file__, "--child", str(path), "--steps", str(n_steps)],
                capture_output=True, text=True, check=True,
            )
            res = json.loads(r.stdout.strip().splitlines()[-1])
            res["file_mib"] = size / 2**20
            out.append(res)
            path.unlink()
    finally:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["all", "floor", "stream"], default="all")
    ap.add_argument("--floor-steps", type=int, default=1220)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stream-lines", type=int, default=1_000_000)
    ap.add_argument("--stream-small-lines", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=1000, help="gold steps of the streamed file")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _stream_child(args.child, args.steps)
        return 0
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
    if args.part in ("all", "floor"):
        r = bench_floor(args.floor_steps, args.repeat)
        print(f"\n[1] contract-J file: {r['steps']} steps, {r['tasks']} tasks, {r['file_bytes'] / 1024:.0f} KiB")
        print(f"    floor (bare sacrebleu BLEU-1 + BLEU-4 + rouge-score rougeL loop): {r['floor_s']:.3f} s CPU")
        print(f"    full scorer (read + validate + parse + all metrics + breakdowns + bootstrap + JSON): "
              f"{r['full_s']:.3f} s CPU")
        print(f"    ratio full / floor: {r['ratio']:.2f}x (goal <= 1.5x)   [saa {r['saa']}, bleu1 {r['bleu1']}, ofcr {r['ofcr']}]")
        print(f"    floor with BLEU-1 taken from the BLEU-4 n-gram statistics (as the scorer does, same values): "
              f"{r['floor_shared_s']:.3f} s CPU -> ratio {r['ratio_shared']:.2f}x")
    if args.part in ("all", "stream"):
        rows = bench_stream(args.stream_lines, args.stream_small_lines, args.steps)
        print(f"\n[2] streamed contract-A files over {args.steps} gold steps (fresh process each):")
        for r in rows:
            print(f"    {r['lines']:>9,} lines ({r['seeds']} seeds, {r['file_mib']:.0f} MiB file): {r['seconds']:.1f} s, "
                  f"peak RSS {r['peak_rss_mib']:.0f} MiB (before scoring {r['before_scoring_rss_mib']:.0f} MiB)")
        if len(rows) == 2:
            a, b = rows
            print(f"    {b['lines'] / a['lines']:.0f}x the lines -> peak RSS x{b['peak_rss_mib'] / a['peak_rss_mib']:.2f} "
                  f"(+{b['peak_rss_mib'] - a['peak_rss_mib']:.0f} MiB for {b['file_mib'] - a['file_mib']:.0f} MiB more file)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
