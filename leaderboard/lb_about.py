"""The leaderboard's About tab: protocol, output contracts, exact metric rules, file format.

:data:`ABOUT` is the page's text with placeholders; :func:`about_text` fills them from the
board's configuration, the action space (``mag_dataset.actions.ACTION_SPACE``) and one step
scored by the library (:func:`scoring_example`), so the page cannot drift from the rules it
describes. No Gradio and no event handling here (``app.py`` shows the text).
"""

from __future__ import annotations

from lb_tables import DECIMALS
from mag_dataset.actions import Contract
from mag_dataset.board import METRIC_COLUMNS, MIN_GROUP_STEPS, BoardConfig
from mag_dataset.board.ranking import RANK_ALPHA, RANK_COLUMNS
from mag_dataset.scoring import METRIC_TABLE, metric_table_markdown

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
  in an error message. Breakdowns are aggregates of at least {min_group} distinct gold steps,
  however many seeds a file holds (ten seeds of one step are still one step): a
  per-site, per-action-type, stale or unseen-template group with fewer steps is pooled into
  `other` (with the next smallest group while `other` is still smaller); a breakdown that
  cannot keep two such groups is withheld; a metric scored on fewer than {min_group} steps
  of a group is left out. No shown figure rests on fewer than {min_group} gold steps, and no
  withheld group can be recovered by subtracting the shown ones from the total. The
  downloadable report follows the same rule, and a comparison on *Details* shows a
  breakdown only when each of its groups holds at least {min_group} paired steps. Which gold is in use (public sample or hidden
  split, its size and fingerprint) is shown on the main page.
* Limits: a daily cap of accepted submissions per submitter (your Hugging Face login on
  the Space; off a Space, the server's configured identity, `MAG_BOARD_SUBMITTER`: the form
  has no submitter field); the same predictions (the same step
  ids, seeds and outputs once parsed, whatever the file format, line order or blank lines)
  are not scored twice for a view and contract; an upload cap, which also caps the decoded text of a
  `.jsonl.gz` or `.parquet` file; at most {max_seeds} seeds per file; {score_seconds} s of
  decoding and scoring per submission; a rejected file stores nothing. Submissions are
  scored {workers} at a time, each in its own memory-limited process; the others wait in a
  queue that shows their position. Comparisons: at most {compare_rate} per minute from one
  user (login on the Space, address otherwise) and {compare_all} from everyone; Details views
  {details_rate} and {details_all}; an answer over the limit says when to try again. Names and links may not hold bidirectional-control
  characters or lone surrogates; names are stored in Unicode NFKC form and may not hold
  invisible characters (zero-width, BOM, soft hyphen, fillers), more than two combining marks
  on one letter, or a word mixing Latin letters with look-alike Cyrillic or Greek ones.
* **Integrity.** A file whose outputs pass the format gate of another view or contract more
  often than the declared one's is rejected, naming the better one (a contract-J file sent
  as A would rank with all zeros). A file with more than {max_fail} of its outputs failing
  the format gate is rejected. *Validate only* on *Submit* checks a file (step counts,
  missing ids per seed, the format gate, these rules) without scoring or storing it.
* Ranking is within a view and contract: {rank_order}; a
  blank ranks last; the table names its ranking metric and shows its task-level bootstrap
  95% interval. **Shared ranks**: a submission's rank is one plus the number of
  submissions of its table that beat it *significantly* — a higher ranking-metric micro
  mean and a two-sided p < {alpha} in the paired comparison of `mag compare` for that
  metric: the task-level sign-flip test (1,000 draws, seed 0; no multiplicity correction)
  on the per-step means over each file's seeds, the same unit as the interval, so a file of
  three seeds and a file of one are compared on what their means measure. Submissions whose
  difference is not significant share a rank, marked `=` (hover or tap a rank to see which
  submissions beat it). A table lists its rows by rank, then by the ranking columns, so the rank
  column never decreases down the table (a wide interval can leave a lower mean with fewer
  significant betters than a higher one: it is listed by its rank). Scores are
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
The rules of `mag_dataset.scoring` (its module docstring is the reference), per step. The
table is the scorer's own declaration of each metric (`METRIC_TABLE`), shown as declared:

{metric_table}

What the rules refer to:
* **The format gate** (OFCR) is the output contract above. A failed output stays in every
  denominator and scores 0 on every applicable metric.
* **Targets** — the targeted action types are {targeted}. In `som` an integer element id is
  compared as its string; in `coord` a point on the edge of the gold box is inside. A step
  whose label is *disputed* or *unmappable*, or whose gold target is not known in the view,
  has no target acc and no SAA.
* **Argument normalisation** (SAA, `normalize_arg`) — NFKC, lower case, runs of whitespace
  collapsed; a URL also ignores a trailing `/`. Scored arguments: {scored_args}; a `finish`
  answer is not scored. The tokens of text F1 are NFKC-normalised and lower-cased too.
* **usefulness** — only when the board has cached judge verdicts: a guide without a verdict
  is unjudged and left out of the mean; never computed by calling a model.
* **Extensions** ({extensions}) are not metrics of the papers: *Details* shows them, no
  table ranks by them.

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
and `provenance_tag` (self-reported / externally evaluated / reproduced) are optional.
There is no submitter parameter: on the Space the submitter is your Hugging Face login
(signed in on the page, or, from a script, the user of the token passed as
`Client(..., oauth_token=...)`); off a Space, the server's configured identity. It returns a
message and a JSON result with `ok` and, when accepted, the submission's id, rank and scores.
"""


def rank_order() -> str:
    """The ranking columns of each contract in words, read from the board's one ranking rule
    (:data:`mag_dataset.board.ranking.RANK_COLUMNS`): contracts ranked alike are named together."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for c in Contract:
        groups.setdefault(RANK_COLUMNS[c], []).append(c.value)
    parts = []
    for i, (columns, contracts) in enumerate(groups.items()):
        named = contracts[0] if len(contracts) == 1 else f"{', '.join(contracts[:-1])} and {contracts[-1]}"
        ties = ", then ".join(METRIC_COLUMNS[m] for m in columns[1:])
        parts.append(f"by **{METRIC_COLUMNS[columns[0]]}** for {named} ({'ties broken by ' if i == 0 else 'then '}{ties})")
    return ", ".join(parts)


def about_text(config: BoardConfig | None = None) -> str:
    """The About tab: :data:`ABOUT` with its placeholders filled in.

    The metric table and the extensions' titles come from the scorer's ``METRIC_TABLE`` (each
    metric declared once), the ranking order from the board's ``RANK_COLUMNS``, the targeted
    types and the arguments SAA compares from ``ACTION_SPACE`` (the one source of truth of the
    action space), the limits from the board's configuration, so the page cannot drift from
    the scorer or the board.
    """
    from mag_dataset.actions import ACTION_SPACE

    by_arg: dict[str, list[str]] = {}
    for t, spec in ACTION_SPACE.items():
        for arg in spec.args:
            if arg.scored:
                by_arg.setdefault(arg.name, []).append(t.value)
    cfg = config or BoardConfig()
    fills = {
        "max_seeds": str(cfg.max_seeds),
        "score_seconds": f"{cfg.score_seconds:g}",
        "workers": str(cfg.workers),
        "compare_rate": str(cfg.compare_per_min or "any number"),
        "compare_all": str(cfg.compare_all_per_min or "any number"),
        "details_rate": str(cfg.details_per_min or "any number"),
        "details_all": str(cfg.details_all_per_min or "any number"),
        "targeted": ", ".join(f"`{t.value}`" for t, spec in ACTION_SPACE.items() if spec.targeted),
        "scored_args": ", ".join(f"`{a}` ({', '.join(ts)})" for a, ts in by_arg.items()),
        "scoring_example": scoring_example(),
        "min_group": str(MIN_GROUP_STEPS),
        "max_fail": f"{cfg.max_format_failure_rate:.0%}",
        "alpha": f"{RANK_ALPHA:g}",
        "decimals": str(DECIMALS),
        "metric_table": metric_table_markdown(),
        "rank_order": rank_order(),
        "extensions": ", ".join(m.title for m in METRIC_TABLE if m.extension),
    }
    text = ABOUT
    for key, value in fills.items():
        text = text.replace("{" + key + "}", value)
    return text


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
