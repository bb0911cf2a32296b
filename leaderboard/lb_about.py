"""The leaderboard's About tab: protocol, output contracts, exact metric rules, file format.

:data:`ABOUT` is the page's text with placeholders; :func:`about_text` fills them from the
board's configuration, the action space (``mag_dataset.actions.ACTION_SPACE``) and one step
scored by the library (:func:`scoring_example`), so the page cannot drift from the rules it
describes. No Gradio and no event handling here (``app.py`` shows the text).
"""

from __future__ import annotations

from lb_tables import DECIMALS
from mag_dataset.board import METRIC_COLUMNS, MIN_GROUP_STEPS, RANK_ALPHA, BoardConfig

ABOUT = """
## About this leaderboard

This board ranks models on the **WebMRE / MAG** offline web guide-agent benchmark
(MAG, arXiv 2607.10079; WebMRE, arXiv 2609.27353). Each step gives a screenshot, the task
intent, the guides of the previous steps and (in the Set-of-Mark view) a candidate menu;
the model writes an **action** grounded by element id (`som` view) or pixel coordinate
(`coord` view) and/or a one-sentence **guide**, in one of four output contracts.

### Protocol
* You upload predictions for the hidden test split; the server scores them with the
  *same deterministic scorer* as `mag score` (`mag_dataset.scoring`), stores the file
  (content-addressed by SHA-256), the full report, the scorer version and the gold
  fingerprint, and ranks the submission. Re-scoring a stored file gives identical bytes.
* Gold labels and gold guides are never returned — not by the page, not by the API, not
  in an error message. Breakdowns are aggregates of at least {min_group} gold steps: a
  per-site, per-action-type, stale or unseen-template group with fewer steps is pooled into
  `other` (with the next smallest group while `other` is still smaller); a breakdown that
  cannot keep two such groups is withheld; a metric scored on fewer than {min_group} steps
  of a group is left out. No shown figure rests on fewer than {min_group} gold steps, and no
  withheld group can be recovered by subtracting the shown ones from the total. The
  downloadable report follows the same rule, and a comparison on *Details* shows a
  breakdown only when each of its groups holds at least {min_group} paired steps. Which gold is in use (public sample or hidden
  split, its size and fingerprint) is shown on the main page.
* Limits: a daily cap of accepted submissions per submitter (your Hugging Face login on
  the Space, the typed *submitter* name locally); the same predictions (the same step
  ids, seeds and outputs once parsed, whatever the file format, line order or blank lines)
  are not scored twice for a view and contract; an upload cap, which also caps the decoded text of a
  `.jsonl.gz` or `.parquet` file; at most {max_seeds} seeds per file; {score_seconds} s of
  decoding and scoring per submission; a rejected file stores nothing. Submissions are
  scored {workers} at a time, each in its own memory-limited process; the others wait in a
  queue that shows their position. Names and links may not hold bidirectional-control
  characters or lone surrogates.
* **Integrity.** A file whose outputs pass the format gate of another view or contract more
  often than the declared one's is rejected, naming the better one (a contract-J file sent
  as A would rank with all zeros). A file with more than {max_fail} of its outputs failing
  the format gate is rejected. *Validate only* on *Submit* checks a file (step counts,
  missing ids per seed, the format gate, these rules) without scoring or storing it.
* Ranking is within a view and contract: by **SAA** for A, J and JG (ties broken by target
  acc, then type acc, then BLEU-1), by **BLEU-1** for G (then ROUGE-L, then BLEU-4); a
  blank ranks last; the table names its ranking metric and shows its task-level bootstrap
  95% interval. **Shared ranks**: a submission's rank is one plus the number of
  submissions of its table that beat it *significantly* — a higher ranking-metric micro
  mean and a two-sided p < {alpha} in the paired comparison of `mag compare` for that
  metric (exact McNemar on the paired steps for SAA; the task-level sign-flip test, 1,000
  draws, seed 0, for BLEU-1; no multiplicity correction). Submissions whose difference is
  not significant share a rank; hover a rank to see which submissions beat it. Scores are
  shown to {decimals} decimals (a proportion over a few hundred steps has a standard error
  of a few points); the API and the report keep full precision.

### Output contracts
| contract | the model writes exactly |
|---|---|
| A | `{"action": {...}}` |
| G | `{"guide": "..."}` |
| J | `{"action": {...}, "guide": "..."}` (action first) |
| JG | `{"guide": "...", "action": {...}}` (guide first) |

An action is `{"type": ..., <arguments>}`; targeted actions ({targeted}) name
`"element": "12"` in `som` or `"coordinate": [x, y]` (screenshot pixels) in `coord`.
Surrounding whitespace and one enclosing ```` ``` ```` / ```` ```json ```` fence are tolerated;
anything else fails the format gate.

### Metrics (exact rules)
The rules of `mag_dataset.scoring` (its module docstring is the reference), per step:
* **OFCR** — every step: 1 when the output passes the format gate above. A failed output
  stays in every denominator and scores 0 on every applicable metric.
* **type acc** — contracts with an action (A, J, JG): predicted action type equals the gold type.
* **target acc** — contracts with an action, when the gold action has a target ({targeted}),
  the step's label is not *disputed* or *unmappable*, and the gold target is known in the view:
  `som` — predicted element id equals the gold id (an integer is compared as its string);
  `coord` — the point lies inside the gold target box, edges included.
* **text F1** — contracts with an action, gold type `type`: SQuAD-style token F1 (NFKC,
  lower-cased, punctuation split off as tokens, multiset overlap) between predicted and gold
  text; 0 if the predicted type differs.
* **SAA** (step action accuracy) — contracts with an action, steps not *disputed* or
  *unmappable* (and, for a targeted gold, with its target known in the view, as for target
  acc): the type matches, the target matches where the gold has one, and every scored
  argument equals the gold's after normalisation (NFKC, lower case, runs of whitespace
  collapsed; a URL also ignores a trailing `/`). Scored arguments: {scored_args}; a `finish`
  answer is not scored.
* **BLEU-1 / BLEU-4** — contracts with a guide (G, J, JG): sacrebleu sentence BLEU with the
  `sentence_bleu` defaults (exp smoothing, effective order), `max_ngram_order` 1 and 4,
  `lowercase=True`, divided by 100 and rounded to 10 decimals.
* **ROUGE-L** — contracts with a guide: rouge-score `rougeL` F-measure, no stemmer.
* **usefulness** — contracts with a guide, only when the board has cached judge verdicts:
  1 when the majority of three judges rated the guide useful; a guide without a verdict is
  unjudged and left out of the mean; never computed by calling a model.

A cell of the table is the **micro mean over steps** (with several seeds: the mean over
seeds). A blank cell means *not applicable* (e.g. guide metrics under contract A); 0 means
wrong. The full report (micro means, macro means over tasks, denominators, the standard
deviation over seeds, a task-level bootstrap 95% interval of the micro mean, per-site /
per-action-type / stale / unseen-template breakdowns under the granularity rule above,
the error taxonomy, provenance) is downloadable on *Details*.

### Predictions file
JSON Lines, one object per test step (and seed), UTF-8:

```json
{"step_id": "click-button.seed-3:0", "output": "{\\"action\\": {\\"type\\": \\"click\\", \\"element\\": \\"12\\"}, \\"guide\\": \\"Click the Submit button.\\"}", "seed": 0}
```

`output` is the raw model text, exactly as generated; `seed` is optional (several seeds →
mean and standard deviation). Every test step id must appear once per seed; unknown or
duplicate ids are rejected with the line named. Accepted: `.jsonl`, `.jsonl.gz`, and
`.parquet` (columns `step_id`, `output`, optional `seed`).

### Worked example
{scoring_example}

To produce and check a file for the whole split:

```bash
pip install -e ".[leaderboard]"                 # from a clone of the repository
python -m baselines.heuristic --dataset bundled --view som --contract J --output preds.jsonl  # no-model baseline
mag score --predictions preds.jsonl --dataset bundled --view som --contract J  # the same scores, locally
```
then upload `preds.jsonl` on *Submit*, or from a script:

```python
from gradio_client import Client, handle_file
client = Client("http://127.0.0.1:7860")          # on the Space: Client("<space id>", oauth_token="hf_...")
message, result = client.predict(
    model_name="heuristic", view="som", contract="J",
    predictions=handle_file("preds.jsonl"),
    organisation="me", link="https://example.org", provenance_tag="self-reported",
    api_name="/submit")
print(message)            # "Accepted: submission #1 ..." or "Rejected: <why>"
print(result["ok"], result.get("saa"))
```

The `submit` endpoint takes `model_name`, `view` (`som`/`coord`), `contract`
(`A`/`G`/`J`/`JG`) and `predictions` (the file); `organisation`, `link` (http/https only),
`provenance_tag` (self-reported / externally evaluated / reproduced) and `submitter` are
optional. On the Space the submitter is your Hugging Face login: signed in on the page, or,
from a script, the user of the token passed as `Client(..., oauth_token=...)`. It returns a
message and a JSON result with `ok` and, when accepted, the submission's id, rank and scores.
"""


def about_text(config: BoardConfig | None = None) -> str:
    """The About tab: :data:`ABOUT` with the action-space lists and the worked example filled in.

    The targeted types and the arguments SAA compares come from ``ACTION_SPACE`` (the one
    source of truth of the action space), so the page cannot drift from the scorer.
    """
    from mag_dataset.actions import ACTION_SPACE

    targeted = ", ".join(f"`{t.value}`" for t, spec in ACTION_SPACE.items() if spec.targeted)
    by_arg: dict[str, list[str]] = {}
    for t, spec in ACTION_SPACE.items():
        for arg in spec.args:
            if arg.scored:
                by_arg.setdefault(arg.name, []).append(t.value)
    scored = ", ".join(f"`{a}` ({', '.join(ts)})" for a, ts in by_arg.items())
    cfg = config or BoardConfig()
    return (ABOUT.replace("{max_seeds}", str(cfg.max_seeds)).replace("{score_seconds}", f"{cfg.score_seconds:g}")
            .replace("{workers}", str(cfg.workers)).replace("{targeted}", targeted).replace("{scored_args}", scored)
            .replace("{scoring_example}", scoring_example()).replace("{min_group}", str(MIN_GROUP_STEPS))
            .replace("{max_fail}", f"{cfg.max_format_failure_rate:.0%}").replace("{alpha}", f"{RANK_ALPHA:g}")
            .replace("{decimals}", str(DECIMALS)))


def scoring_example() -> str:
    """One step scored by the library, shown in About (the figures are computed, not typed)."""
    from mag_dataset.schema import Action, Candidate, Step
    from mag_dataset.scoring import score_step

    menu = (Candidate("3", "textbox", "Username", (10.0, 40.0, 150.0, 60.0)),
            Candidate("7", "button", "Log in", (20.0, 130.0, 80.0, 150.0)))
    step = Step(
        step_id="login-user.seed-1:0", task_id="login-user.seed-1", site="login-user",
        intent='Enter the username "Cheree" and log in.', intent_template_id="login-user", step_index=0,
        num_steps=2, image_width=160, image_height=210, previous_guides=(),
        guide="Type 'Cheree' into the Username field.", guide_source="template",
        action=Action("type", element_id="3", coordinate=(80.0, 50.0), text="Cheree"),
        target_bbox=menu[0].bbox, split="test", candidates=menu,
    )
    output = '{"action": {"type": "type", "element": 3, "text": "cheree"}, "guide": "Type Cheree in the username box."}'
    sc = score_step(output, step, "som", "J")

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}".rstrip("0").rstrip(".") if v not in (0.0, 1.0) else str(int(v))

    cells = " | ".join(fmt(getattr(sc, k)) for k in METRIC_COLUMNS)
    return (
        "One som step, contract J. Gold: type `Cheree` into element `3`, guide "
        "*Type 'Cheree' into the Username field.* The model wrote:\n\n"
        f"```json\n{output}\n```\n\n"
        f"| {' | '.join(METRIC_COLUMNS.values())} |\n|{'---|' * len(METRIC_COLUMNS)}\n| {cells} |\n\n"
        "The element `3` (an integer) is compared as the string `\"3\"`; the typed text matches after "
        "normalisation (case, spacing), so SAA is 1; the guide shares some words with the gold guide, so "
        "BLEU and ROUGE-L are partial; usefulness is n/a without judge verdicts."
    )
