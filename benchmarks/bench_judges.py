"""The rule-based judges as instruments: their confusion table against known truth, since a
judge is an instrument and unit tests alone do not say how often it is wrong.

    python benchmarks/bench_judges.py                      # the bundled sample
    python benchmarks/bench_judges.py --raw RAW --seed 0   # any raw corpus with page evidence

Two kinds of step with a known answer, from every targeted step that has the judges' evidence
(``metadata["dom"]``, :mod:`mag_dataset.harness.page_audit`):

* **unchanged**: the step on its action-time screenshot with its recorded label, whose
  target is the element the expert acted on: the right outcome is ``confirmed``;
* **moved**: the same, with the label deliberately moved to another candidate of the menu
  (drawn by ``random.Random(f"{seed}:{step}")``): the right outcome is ``remapped`` back to
  the acted element, and ``disputed`` also catches it; ``confirmed`` is a miss.

Prints the panel's confusion table (truth x outcome), each judge's votes, the two rates the
audit is held to (confirm >= 99% of unchanged steps, catch >= 95% of moved labels), and
the time per step.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mag_dataset.actions import ACTION_SPACE  # noqa: E402
from mag_dataset.dataset import bundled_raw_dir  # noqa: E402
from mag_dataset.harness.audit_rules import merge_verdicts  # noqa: E402
from mag_dataset.harness.page_audit import as_verdict, has_page_evidence, step_evidence  # noqa: E402
from mag_dataset.harness.page_judges import PAGE_JUDGES, run_page_judges  # noqa: E402
from mag_dataset.raw import iter_episode_dirs, read_episode  # noqa: E402

OUTCOMES = ("confirmed", "remapped", "unmappable", "disputed")


def action_time(ev):
    """The step on its action-time screenshot (a recaptured step's evidence, turned back)."""
    return dataclasses.replace(ev, shown=ev.action_elements, shown_image=ev.action_image, same_page=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=None, help="raw corpus (default: the bundled sample)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    raw = args.raw or bundled_raw_dir()
    table = {"unchanged": Counter(), "moved": Counter()}
    votes = {"unchanged": {j: Counter() for j in PAGE_JUDGES}, "moved": {j: Counter() for j in PAGE_JUDGES}}
    back = n = skipped = 0
    seconds = 0.0
    for folder in iter_episode_dirs(raw):
        ep = read_episode(folder)
        for st in ep.steps:
            if not ACTION_SPACE[st.action.type].targeted or not st.action.element_id or len(st.candidates) < 2:
                continue
            if not has_page_evidence(st):
                skipped += 1
                continue
            ev = action_time(step_evidence(folder, st))
            truth = st.action.element_id
            others = [c.id for c in st.candidates if c.id != truth]
            wrong = random.Random(f"{args.seed}:{ep.episode_id}:{st.step_index}").choice(others)
            t0 = time.perf_counter()
            for kind, label in (("unchanged", truth), ("moved", wrong)):
                case = dataclasses.replace(ev, recorded_id=label)
                out = run_page_judges(case)
                status, element = merge_verdicts([as_verdict(v, label) for v in out])
                table[kind][status.value] += 1
                for v in out:
                    votes[kind][v.judge][v.verdict if v.verdict != "remap" or v.element != truth else "remap to truth"] += 1
                back += kind == "moved" and status.value == "remapped" and element == truth
            seconds += time.perf_counter() - t0
            n += 1
    if n == 0:
        print(f"no targeted step of {raw} has page evidence ({skipped} without): run `mag recapture --raw RAW --evidence`")
        return 2
    print(f"{n} targeted steps with page evidence in {raw} ({skipped} without); seed {args.seed}\n")
    print(f"{'truth':10} " + " ".join(f"{o:>11}" for o in OUTCOMES))
    for kind in table:
        print(f"{kind:10} " + " ".join(f"{table[kind][o]:>11}" for o in OUTCOMES))
    print()
    for kind in votes:
        for judge in PAGE_JUDGES:
            row = ", ".join(f"{k} {v}" for k, v in sorted(votes[kind][judge].items()))
            print(f"{kind:10} {judge:6} {row}")
    confirm = table["unchanged"]["confirmed"] / n
    caught = (table["moved"]["remapped"] + table["moved"]["disputed"]) / n
    print(f"\nconfirmed unchanged: {confirm:.2%} (target >= 99%)")
    print(f"caught moved labels: {caught:.2%} (target >= 95%; remapped back to the acted element: {back / n:.2%})")
    print(f"time: {seconds / (2 * n) * 1000:.1f} ms per judged step (three judges)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
