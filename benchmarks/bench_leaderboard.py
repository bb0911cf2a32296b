"""Leaderboard benchmark: one 1,220-step submission round trip, and 40 concurrent submitters.

The real app (``leaderboard/app.py``) is started in-process on 127.0.0.1 with a free port
and driven with ``gradio_client``, exactly as a script user would. The gold is synthetic
but full-size: 1,220 som test steps (WebMRE's SoM test split size, arXiv 2609.27353) over
six sites, a 55-entry candidate menu and 13-word guides (the paper's medians). Each
submission is a contract-J file (the heaviest: action metrics plus BLEU-1/4 and ROUGE-L
per step) with the gold action on two steps in three and a paraphrased guide on every step.

Run::

    python benchmarks/bench_leaderboard.py            # goals: round trip <= 1 s, 40 submitters <= 30 s, 2 cores
    python benchmarks/bench_leaderboard.py --rounds 5 --concurrent 40
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mag_dataset.actions import Contract, View
from mag_dataset.board import Board, BoardConfig, Gold
from mag_dataset.prompts import render_target
from mag_dataset.schema import Action, Candidate, Step

ROOT = Path(__file__).resolve().parents[1]
SITES = ("shopping", "shopping_admin", "reddit", "gitlab", "map", "wikipedia")
WORDS = ("open the order page then type the customer name into the search field and press enter to see results "
         "select the first matching product click on the add to cart button scroll down the list").split()


def synthetic_gold(n_steps: int = 1220, seed: int = 0) -> Gold:
    """Full-size synthetic gold: ``n_steps`` steps in tasks of six steps, both views."""
    rng = random.Random(seed)
    menu = tuple(
        Candidate(str(i), rng.choice(("button", "link", "textbox", "combobox")), " ".join(rng.sample(WORDS, 3)),
                  (10.0 * (i % 10), 20.0 * (i // 10), 10.0 * (i % 10) + 9, 20.0 * (i // 10) + 15))
        for i in range(55)
    )
    steps = {View.SOM: [], View.COORD: []}
    for i in range(n_steps):
        task, idx = divmod(i, 6)
        kind = rng.choice(("click", "click", "type", "select", "scroll", "press"))
        c = menu[rng.randrange(55)]
        center = ((c.bbox[0] + c.bbox[2]) / 2, (c.bbox[1] + c.bbox[3]) / 2)
        if kind == "click":
            action, box = Action("click", element_id=c.id, coordinate=center), c.bbox
        elif kind == "type":
            action, box = Action("type", element_id=c.id, coordinate=center, text=" ".join(rng.sample(WORDS, 2))), c.bbox
        elif kind == "select":
            action, box = Action("select", element_id=c.id, coordinate=center, value=rng.choice(WORDS)), c.bbox
        elif kind == "scroll":
            action, box = Action("scroll", direction="down"), None
        else:
            action, box = Action("press", key="Enter"), None
        guide = " ".join(rng.choice(WORDS) for _ in range(13)).capitalize() + "."
        for view in View:
            steps[view].append(Step(
                step_id=f"t{task}:{idx}", task_id=f"t{task}", site=SITES[task % 6], intent="Do the task " + str(task),
                intent_template_id=f"tpl{task % 40}", step_index=idx, num_steps=6, image_width=1280, image_height=720,
                previous_guides=(), guide=guide, guide_source="template", action=action, target_bbox=box,
                stale=rng.random() < 0.5, unseen_template=task % 40 == 0, split="test",
                candidates=menu if view is View.SOM else (),
            ))
    return Gold("synthetic 1,220-step gold", "test", steps)


def predictions(gold: Gold, path: Path, tag: int) -> Path:
    """Gold actions on two steps in three (a wrong click elsewhere); every guide is a
    paraphrase (three of its words replaced), so BLEU and ROUGE do real work on every step."""
    rng = random.Random(tag)
    lines = []
    for i, s in enumerate(gold.steps[View.SOM]):
        words = s.guide.split()
        for j in rng.sample(range(len(words)), 3):
            words[j] = rng.choice(WORDS)
        target = json.loads(render_target(s, View.SOM, Contract.J))
        action = target["action"] if i % 3 else {"type": "click", "element": str(rng.randrange(55))}
        out = json.dumps({"action": action, "guide": " ".join(words)})
        lines.append(json.dumps({"step_id": s.step_id, "output": out}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load_app():
    spec = importlib.util.spec_from_file_location("mag_leaderboard_app", ROOT / "leaderboard" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="sequential round trips to time")
    parser.add_argument("--concurrent", type=int, default=40, help="concurrent submitters")
    parser.add_argument("--steps", type=int, default=1220)
    args = parser.parse_args(argv)

    from gradio_client import Client, handle_file

    app = _load_app()
    gold = synthetic_gold(args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        board = Board(BoardConfig(data_dir=tmp / "board", daily_cap=10_000), gold=gold)
        demo = app.build_app(board)
        demo.queue(default_concurrency_limit=2)
        port = _free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                    max_file_size=board.config.max_bytes)
        try:
            client = Client(f"http://127.0.0.1:{port}", verbose=False)
            files = [predictions(gold, tmp / f"p{i}.jsonl", i) for i in range(args.rounds + 1 + args.concurrent)]
            size = files[0].stat().st_size
            client.predict(model_name="warm-up", view="som", contract="J", predictions=handle_file(str(files[0])),
                           api_name="/submit")
            times = []
            for i in range(1, args.rounds + 1):
                t0 = time.perf_counter()
                msg, result = client.predict(model_name=f"round-{i}", view="som", contract="J",
                                             predictions=handle_file(str(files[i])), api_name="/submit")
                times.append(time.perf_counter() - t0)
                assert result["ok"], msg
            # what `mag score` does with the same kind of file, in this process (parse + score, no server)
            from mag_dataset.score_file import score_file

            t0 = time.perf_counter()
            score_file(files[1].read_bytes(), gold.steps[View.SOM], "som", "J")
            mag_score = time.perf_counter() - t0
            # the library part alone, for comparison: validate + score + store
            direct_file = predictions(gold, tmp / "direct.jsonl", 10**6)
            t0 = time.perf_counter()
            board.submit(data=direct_file.read_bytes(), filename="p.jsonl", model_name="direct", view="som",
                         contract="J")
            direct = time.perf_counter() - t0

            before = board.count()
            conc = files[args.rounds + 1:]
            t0 = time.perf_counter()
            jobs = [client.submit(model_name=f"c{i}", view="som", contract="J", predictions=handle_file(str(p)),
                                  api_name="/submit") for i, p in enumerate(conc)]
            results = [job.result(timeout=600) for job in jobs]
            wall = time.perf_counter() - t0
            ok = sum(1 for _, r in results if r["ok"])
            rows = board.count() - before
        finally:
            demo.close()

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          "(1 / 5 / 15 min; above the CPU count, other work competes for the cores)")
    print(f"gold: {args.steps} som test steps, {len({s.task_id for s in gold.steps[View.SOM]})} tasks, "
          f"6 sites; file: contract J, {size / 1024:.0f} KiB")
    print(f"round trip (gradio_client upload -> validate -> score -> store -> reply), {args.rounds} rounds: "
          f"median {statistics.median(times):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s  "
          f"(goal <= 1 s: {'met' if statistics.median(times) <= 1.0 else 'NOT met'})")
    print(f"  of which Board.submit alone (validate + score + store in the isolated child): {direct:.3f} s")
    print(f"  mag score on the same kind of file, in process (parse + score): {mag_score:.3f} s")
    print(f"{args.concurrent} concurrent submitters: {wall:.2f} s wall, {ok} accepted, {rows} rows stored, "
          f"{args.concurrent / wall:.2f} submissions/s, {wall / args.concurrent:.3f} s per submission  "
          f"(goal <= 30 s for 40: {'met' if wall <= 30 * args.concurrent / 40 else 'NOT met'})")
    return 0 if ok == rows == args.concurrent else 1


if __name__ == "__main__":
    sys.exit(main())
