"""The dataset card (README.md) of a built dataset folder, and the statistics it shows.

The card's YAML header is what lets ``datasets.load_dataset(DIR, "som")`` (or the same
folder uploaded as ``mag/webmre``) work without a loading script: ``configs:`` maps each
view to its Parquet shards per split, and ``dataset_info`` declares the features and split
sizes. The body documents fields, views, flags, splits, statistics and citations.

Holds the card's text (:data:`CARD_TEMPLATE`, filled by :func:`render_card`), its YAML
header, the statistics it shows (per view and split, per site family, medians) and the
generated statistics block of a README (``mag build --readme``). It computes nothing from
raw data and writes no file: :mod:`mag_dataset.builder.write` passes it the rows and writes
what it returns.

References:
    MAG (arXiv 2607.10079); WebMRE (arXiv 2609.27353).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from mag_dataset.actions import ACTION_SPACE, ActionType, View
from mag_dataset.schema import AuditStatus, GuideSource

DESCRIPTION = (
    "WebMRE / MAG web guide-agent benchmark: each step pairs a web-page screenshot, the task "
    "intent and the guides of previous steps with a gold guide sentence and a gold action, "
    "grounded by a Set-of-Mark element id (som view) or by pixel coordinates (coord view)."
)

CITATION = """\
@article{mag2026,
  title         = {{MAG}: A Web-Agent Benchmark and Harness for Multimodal Action and Guide Generation},
  journal       = {arXiv preprint arXiv:2607.10079},
  eprint        = {2607.10079},
  archivePrefix = {arXiv},
  year          = {2026}
}

@article{webmre2026,
  title         = {Guides That Cause Actions: An Offline Study of Guide-Action Mutual Reinforcement in Multimodal Web Agents},
  journal       = {arXiv preprint arXiv:2609.27353},
  eprint        = {2609.27353},
  archivePrefix = {arXiv},
  year          = {2026}
}
"""

#: Flag columns counted in statistics, in display order.
FLAGS: tuple[str, ...] = ("disputed", "stale", "unseen_template", "coordinate_restored")

#: Audit outcomes and guide sources counted in statistics, in display order.
AUDIT_STATUSES: tuple[str, ...] = tuple(s.value for s in AuditStatus)
GUIDE_SOURCES: tuple[str, ...] = tuple(g.value for g in GuideSource)

#: Columns a statistics computation needs (select these before reading a dataset).
STAT_COLUMNS: tuple[str, ...] = ("step_id", "task_id", "site", "action", *FLAGS, "audit_status", "guide_source", "verified_by",
                                  "guide_decision")
#: The human verification outcomes of the ``guide_decision`` column (null: nobody decided).
GUIDE_DECISIONS: tuple[str, ...] = ("accepted", "edited", "rejected", "disputed")


def split_statistics(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Counts for one view and split.

    Args:
        rows: dataset rows (dicts with at least :data:`STAT_COLUMNS`).

    Returns:
        ``{"steps", "tasks", "sites", "action_types": {type: n}, <flag>: n ...,
        "audit": {status: n}, "guide_sources": {source: n}, "verified": n}``; action types
        in ActionType order, only those present; every audit status and guide source, 0
        included; ``verified``: steps whose guide a person verified (``verified_by`` set);
        ``guide_decisions``: steps per :data:`GUIDE_DECISIONS` (rows without the column
        count nothing).
    """
    steps = 0
    tasks: set[str] = set()
    sites: set[str] = set()
    types: Counter[str] = Counter()
    flags: Counter[str] = Counter()
    audit: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    verified = 0
    decisions: Counter[str] = Counter()
    for r in rows:
        steps += 1
        tasks.add(r["task_id"])
        sites.add(r["site"])
        types[r["action"]["type"]] += 1
        for f in FLAGS:
            flags[f] += bool(r[f])
        audit[r["audit_status"]] += 1
        sources[r["guide_source"]] += 1
        verified += bool(r.get("verified_by"))
        if r.get("guide_decision"):
            decisions[r["guide_decision"]] += 1
    return {
        "steps": steps,
        "tasks": len(tasks),
        "sites": len(sites),
        "action_types": {t.value: types[t.value] for t in ActionType if types[t.value]},
        **{f: flags[f] for f in FLAGS},
        "audit": {s: audit[s] for s in AUDIT_STATUSES},
        "guide_sources": {s: sources[s] for s in GUIDE_SOURCES},
        "verified": verified,
        "guide_decisions": {d: decisions[d] for d in GUIDE_DECISIONS},
    }


def medians(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Medians the WebMRE paper reports (guide words, candidate menu size, steps per task).

    Args:
        rows: som-view rows of one split (the candidate menu is empty in the coord view).
    """
    import statistics

    words, menus, lengths = [], [], {}
    for r in rows:
        words.append(len(r["guide"].split()))
        menus.append(len(r["candidates"]))
        lengths[r["task_id"]] = r["num_steps"]
    if not words:
        return {"guide_words": 0.0, "candidates": 0.0, "task_steps": 0.0}
    return {
        "guide_words": float(statistics.median(words)),
        "candidates": float(statistics.median(menus)),
        "task_steps": float(statistics.median(lengths.values())),
    }


#: Columns :func:`family_statistics` reads (som rows: the candidate menu is empty in coord).
FAMILY_STAT_COLUMNS: tuple[str, ...] = (
    "task_id", "site_family", "guide", "candidates", "num_steps", "split", "audit_status",
    "disputed", "stale", "coordinate_restored", "unseen_template",
)
#: Flag counts of the per-family table, in display order (``unmappable`` is an audit status).
FAMILY_FLAGS: tuple[str, ...] = ("coordinate_restored", "stale", "disputed", "unmappable", "unseen_template")
#: Aggregate rows of the per-family table: every family but ``miniwob`` (the realistic
#: part, recorded on real applications), and everything.
SITES_ROW, ALL_ROW = "all sites", "all"


def _family_block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    audit = Counter(r["audit_status"] for r in rows)
    med = medians(rows)
    return {
        "steps": len(rows),
        "tasks": len({r["task_id"] for r in rows}),
        "median_guide_words": med["guide_words"],
        "median_candidates": med["candidates"],
        "median_task_steps": med["task_steps"],
        "coordinate_restored": sum(bool(r["coordinate_restored"]) for r in rows),
        "stale": sum(bool(r["stale"]) for r in rows),
        "disputed": sum(bool(r["disputed"]) for r in rows),
        "unmappable": audit[AuditStatus.UNMAPPABLE.value],
        "unseen_template": sum(bool(r["unseen_template"]) for r in rows),
        "audit": {a: audit[a] for a in AUDIT_STATUSES},
    }


def family_statistics(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Statistics per site family and split, as the WebMRE paper reports them for its corpus.

    Args:
        rows: som-view rows (dicts with at least :data:`FAMILY_STAT_COLUMNS`), any splits.

    Returns:
        ``{family: {split: block}}`` with families sorted, then :data:`SITES_ROW` (every
        family but ``miniwob``, when there is one besides it) and :data:`ALL_ROW`; splits
        ``train``, ``test`` (those present) and ``all``. A block holds ``steps``, ``tasks``,
        ``median_guide_words``, ``median_candidates``, ``median_task_steps`` (the length of
        each task, once per task), the flag counts of :data:`FAMILY_FLAGS` and ``audit``
        (steps per audit status, 0 included).
    """
    rows = list(rows)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["site_family"], []).append(r)
    order = sorted(groups)
    site_families = [f for f in order if f != "miniwob"]
    if site_families and (len(site_families) > 1 or "miniwob" in groups):
        groups[SITES_ROW] = [r for f in site_families for r in groups[f]]
        order.append(SITES_ROW)
    groups[ALL_ROW] = rows
    order.append(ALL_ROW)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for family in order:
        members = groups[family]
        per = {split: [r for r in members if r["split"] == split] for split in ("train", "test")}
        out[family] = {split: _family_block(rs) for split, rs in per.items() if rs}
        out[family]["all"] = _family_block(members)
    return out


def format_family_statistics(stats: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A Markdown table of :func:`family_statistics`: one row per family and split."""
    head = ["family", "split", "steps", "tasks", "guide words (median)", "menu (median)", "task steps (median)",
            *FAMILY_FLAGS, "audit status"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for family, per_split in stats.items():
        for split, b in per_split.items():
            audit = ", ".join(f"{a} {n}" for a, n in b["audit"].items() if n) or "—"
            cells = [family, split, b["steps"], b["tasks"], f"{b['median_guide_words']:g}", f"{b['median_candidates']:g}",
                     f"{b['median_task_steps']:g}", *(b[f] for f in FAMILY_FLAGS), audit]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


#: Markers of the generated statistics block in a README (``mag build --readme``).
README_BEGIN = "<!-- corpus-stats:begin -->"
README_END = "<!-- corpus-stats:end -->"


def readme_block(stats: dict[str, dict[str, dict[str, Any]]], build_info: dict[str, Any],
                 realism_table: str | None = None) -> str:
    """The generated README block (markers included) for a build's per-family statistics and,
    given, the realistic part's measures next to WebMRE's (:mod:`mag_dataset.builder.realism`)."""
    held = ", ".join(f"`{t}`" for t in build_info.get("held_out_templates", [])) or "none"
    realism = f"The realistic part next to WebMRE's corpus:\n\n{realism_table}\n\n" if realism_table else ""
    return (
        f"{README_BEGIN}\n"
        f"<!-- generated by `mag build --readme README.md` from the raw corpus with fingerprint "
        f"{build_info['raw_fingerprint'][:16]}; do not edit by hand -->\n\n"
        f"{format_family_statistics(stats)}\n\n"
        f"{realism}"
        f"Split seed {build_info['split_seed']}; templates held out of train: {held}.\n"
        f"{README_END}"
    )


def replace_readme_block(text: str, block: str) -> str:
    """Replace the text between :data:`README_BEGIN` and :data:`README_END` (markers included).

    Raises:
        ValueError: the markers are missing, repeated or out of order.
    """
    if text.count(README_BEGIN) != 1 or text.count(README_END) != 1 or text.index(README_BEGIN) > text.index(README_END):
        raise ValueError(f"the README needs exactly one {README_BEGIN} ... {README_END} block (in that order)")
    start, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    return text[:start] + block + text[end:]


def format_statistics(stats: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Markdown tables of ``{view: {split: split_statistics(...)}}``, one row per view and split:
    sizes and flags, then audit outcomes and guide sources (the same in both views, so once)."""
    head = ["view", "split", "steps", "tasks", "sites", "action types", *FLAGS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for view, per_split in stats.items():
        for split, s in per_split.items():
            types = ", ".join(f"{t} {n}" for t, n in s["action_types"].items())
            cells = [view, split, s["steps"], s["tasks"], s["sites"], types, *(s[f] for f in FLAGS)]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    per_split = next(iter(stats.values()), {})
    if per_split and all("audit" in s for s in per_split.values()):
        head = ["split", *(f"audit: {a}" for a in AUDIT_STATUSES), *(f"guide: {g}" for g in GUIDE_SOURCES),
                "verified by a person", *(f"guide {d}" for d in GUIDE_DECISIONS)]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for split, s in per_split.items():
            cells = [split, *(s["audit"][a] for a in AUDIT_STATUSES), *(s["guide_sources"][g] for g in GUIDE_SOURCES),
                     s["verified"], *(s.get("guide_decisions", {}).get(d, 0) for d in GUIDE_DECISIONS)]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def _yaml_header(build_info: dict[str, Any]) -> dict[str, Any]:
    import datasets

    from mag_dataset.features import view_features

    configs, infos = [], []
    for view in View:
        splits = build_info["views"][view.value]
        configs.append(
            {
                "config_name": view.value,
                "data_files": [{"split": s, "path": f"{view.value}/{s}-*.parquet"} for s in splits],
                **({"default": True} if view is View.SOM else {}),
            }
        )
        info = datasets.DatasetInfo(
            features=view_features(view),
            splits=datasets.SplitDict(
                {
                    s: datasets.SplitInfo(name=s, num_bytes=v["num_bytes"], num_examples=v["num_examples"])
                    for s, v in splits.items()
                }
            ),
            dataset_size=sum(v["num_bytes"] for v in splits.values()),
        )
        infos.append({"config_name": view.value, **info._to_yaml_dict()})
    total = sum(v["num_examples"] for v in build_info["views"][View.SOM.value].values())
    size = "n<1K" if total < 1000 else "1K<n<10K" if total < 10_000 else "10K<n<100K"
    return {
        "pretty_name": "WebMRE",
        "license": "apache-2.0",
        "language": ["en"],
        "task_categories": ["image-text-to-text"],
        "tags": ["web-agents", "gui-grounding", "set-of-mark", "benchmark"],
        "size_categories": [size],
        "configs": configs,
        "dataset_info": infos,
    }


_FIELDS = [
    ("step_id", "string", "unique id `task_id:step_index`"),
    ("screenshot", "image", "som: screenshot with Set-of-Mark labels; coord: the raw screenshot"),
    ("task_id", "string", "the task (one episode); splits are by task"),
    ("site", "string", "the web site / application (shop, tracker, wiki, forum; the task name for MiniWoB++)"),
    ("site_family", "string", "the site, or `miniwob` for every MiniWoB++ task: the unit of held-out templates and of the statistics"),
    ("intent", "string", "the task instruction"),
    ("intent_template_id", "string", "the intent template; `unseen_template` is derived from it"),
    ("step_index, num_steps", "int32", "position of the step in its task, and the task's length"),
    ("image_width, image_height", "int32", "screenshot size in pixels"),
    ("viewport_width, viewport_height", "int32", "the browser's CSS viewport at capture, in CSS px"),
    ("device_pixel_ratio", "float64", "screenshot pixels per CSS pixel at capture (a MiniWoB++ screenshot is a crop of viewport x ratio)"),
    ("url", "string", "page URL at the step"),
    ("previous_guides", "list of string", "gold guides of the earlier steps of the task (the history input)"),
    ("guide", "string", "the gold guide sentence"),
    ("guide_source", "string", "template, context_template (sites), llm or human"),
    ("verified_by", "string", "the annotators who decided the guide in `mag annotate` (accept, edit or reject; several joined by \", \" when they agreed, the adjudicator after a disagreement); null when nobody did"),
    ("guide_decision", "string", "accepted, edited, rejected (the LLM draft was rejected: the step keeps its earlier guide) or disputed (annotators disagree, not adjudicated); null when nobody decided"),
    ("decided_at", "string", "when the guide was decided (ISO 8601 UTC); null when nobody decided"),
    ("verification_notes", "string", "the annotators' notes on the decision (`name: note`, joined by \"; \"); null when none"),
    ("action", "struct", "gold action: `type`, `element_id`, `coordinate` [x, y], `text`, `value`, `direction`, `key`, `url`, `answer`; unused fields null"),
    ("target_bbox", "list of 4 float64", "[x0, y0, x1, y1] of the gold target in screenshot pixels; null for untargeted actions"),
    ("candidates", "list of struct", "som: the candidate menu {`id`, `role`, `text`, `bbox`}; coord: always empty"),
    ("audit_status", "string", "unaudited, confirmed, remapped, unmappable or disputed"),
    ("disputed", "bool", "the audit judges disagreed; excluded from element-level scoring"),
    ("stale", "bool", "the screenshot was recaptured and may not match the action-time page"),
    ("coordinate_restored", "bool", "the element id was restored from a coordinate-only action"),
    ("original_element_id", "string", "som: the recorded element id before an audit remap, else null; coord: null"),
    ("unseen_template", "bool", "the step's intent template never occurs in train"),
    ("split, split_seed", "string, int64", "the task-level split, and the seed that drew it"),
]


#: The card's text; :func:`render_card` fills the ``{names}`` (``str.format``: a literal brace
#: in this text must be doubled).
CARD_TEMPLATE = """---
{header}---

# WebMRE

{description}

The benchmark is defined by two papers: **MAG** ("MAG: A Web-Agent Benchmark and Harness for
Multimodal Action and Guide Generation", arXiv 2607.10079) and **WebMRE** ("Guides That Cause
Actions: An Offline Study of Guide-Action Mutual Reinforcement in Multimodal Web Agents",
arXiv 2609.27353); cite both (see the end of this card).

This folder was written by `mag build` (package `mag_dataset` {package_version},
build format {build_version}) from raw episodes with fingerprint
`{fingerprint}`; {audited}. The full WebMRE corpus
(541 WebArena tasks, 5,293 steps) is built by its maintainers with the same builder.
{stages}

## Loading

```python
from datasets import load_dataset

som = load_dataset("mag/webmre", "som", split="test")      # or a local folder path
coord = load_dataset("mag/webmre", "coord", split="test")
```

No loading script is involved: the `configs:` entries above map each view to its Parquet
shards. `checksums.sha256` lists the sha256 of every file (`sha256sum -c checksums.sha256`).

## Rebuilding

`pip install mag_dataset`, then `mag build --raw RAW_DIR --out DIR [--audit FILE]` turns raw
episodes (the documented JSON + lossless WebP/PNG format v2 of `mag_dataset.raw`; v1 is
read too) into this layout; the
same raw input gives byte-identical Parquet files. `mag publish --repo-id OWNER/NAME
--folder DIR` uploads it.

## Views

Both views hold the same steps (same `step_id`s, guides, splits and flags); they differ in
grounding.

- **som** — the screenshot carries Set-of-Mark labels, `candidates` is the menu of labelled
  elements, and the gold `action.element_id` names one of them. When the raw corpus stores
  each screenshot once (raw format v2), the labelled image is rendered at build time from
  the raw screenshot and the candidate boxes and ids, deterministically (a pinned bitmap
  font; lossless WebP), so the same raw input gives the same bytes.
- **coord** — the raw screenshot, no candidate menu, and no element ids at all (the gold
  `action.element_id` and `original_element_id` are null): the gold action is grounded by
  `action.coordinate` in screenshot pixels. `target_bbox` stays for scoring: a predicted
  point is correct when it lies inside it. Join on `step_id` with the som view to recover
  the element (provenance). `image_width` / `image_height` give the screenshot's size in
  pixels, the unit of every point and box. A predictions file may declare that its points
  are in another space — `norm1000` (a 0-1000 grid on both axes), `norm1` (0-1 fractions)
  or `resized:WxH` (pixels of the screenshot resized to W x H) — with `mag score
  --coord-space`, a `coord_space` field in its provenance sidecar, or per line; the scorer
  converts each point to screenshot pixels before the point-in-box test
  (`x * image_width / 1000`, `x * image_width`, `x * image_width / W`, and the same for y).

## Fields

| field | type | meaning |
|---|---|---|
{fields}

Coordinates and boxes are in screenshot pixels; a point is inside a box when
`x0 <= x <= x1` and `y0 <= y <= y1`.

### Action space

{action_table}

## Flags

- `audit_status` / `disputed`: outcome of the three-judge label audit. A `remapped` step's
  gold element was replaced (the recorded id is kept in `original_element_id`) and its
  `target_bbox` is the new element's box. Disputed steps are excluded from element-level
  scoring; unmappable steps have no trustworthy element. A click recorded as a bare point
  (as human demonstrations are) that `mag unify` could not map to one element — the point
  lies in no candidate box (`point_outside_candidates`) or in competing ones
  (`point_ambiguous`) — is `unmappable`, with no element id and no `target_bbox`.
- `stale`: the observation was recaptured after the fact and differs from the action-time one.
- `coordinate_restored`: the element id was restored from a coordinate-only action (the
  smallest candidate box containing the point).
- `unseen_template`: the step's intent template never occurs in train.
{audit_examples}
{guide_lint}
{annotation}
## Splits

Splits are by task, taken from {split_source}, drawn with seed `{split_seed}`
(stored in every row as `split_seed`). Templates held out of train: {held}.
{echoes}

## Statistics

{statistics}

Medians (WebMRE's full corpus: guide 13 words, candidate menu 55 elements, task 6 steps):

| split | guide words | candidates (som) | steps per task |
|---|---|---|---|
{med_rows}

### Per site family

The site family is the site (shop, tracker, wiki, forum); every MiniWoB++ task is in the
family `miniwob`. `{sites_row}` is every family but `miniwob` (the pages of real
applications). Generated by the builder (WebMRE's corpus: 859 coordinate-restored steps,
59% stale, 465 audited steps of which 58 disputed).

{family_table}

### The realistic part next to WebMRE's corpus

How much the site families read like a corpus people made: varied guides, uneven
demonstrations, screenshots of a site that moved on (`mag_dataset.builder.realism`; "—": the
paper does not report it).

{realism_table}

## Citation

```bibtex
{citation}
```
"""


def _action_table() -> str:
    lines = ["| type | target | arguments | meaning |", "|---|---|---|---|"]
    for t, spec in ACTION_SPACE.items():
        args = ", ".join(a.name for a in spec.args) or "—"
        lines.append(f"| {t.value} | {'yes' if spec.targeted else 'no'} | {args} | {spec.description} |")
    return "\n".join(lines)


def _audit_sentence(stats: dict[str, dict[str, dict[str, Any]]], judges: list[dict[str, str]] | None = None) -> str:
    """What the card says of the labels: who audited and how many steps, or that no audit was run."""
    counts: dict[str, int] = {}
    for split in stats.get("som", {}).values():
        for a, n in split.get("audit", {}).items():
            if a != "unaudited":
                counts[a] = counts.get(a, 0) + n
    judged = sum(counts.values())
    if judged:
        outcomes = ", ".join(f"{a} {counts.get(a, 0)}" for a in AUDIT_STATUSES if a != "unaudited")
        who = "judges not recorded (no verdict log beside the audit file)"
        if judges:
            rule = [j for j in judges if j["model"].startswith("rule-based")]
            names = ", ".join(f"`{j['name']}`" for j in judges)
            who = (f"the {len(judges)} rule-based page judges {names} of `mag_dataset.harness.page_judges` "
                   f"({rule[0]['model'].rsplit(' ', 1)[-1]}; no language model)" if len(rule) == len(judges) else
                   "judges " + ", ".join(f"`{j['name']}` ({j['model']})" for j in judges))
        return (f"labels audited by {who}: {judged} steps with an audit outcome ({outcomes}; per site family in "
                "the table below)")
    # an audit file may exist only to carry `mag unify`'s flags
    return ("no label audit was run on these steps (it needs judge models, `mag audit`, or human "
            "decisions in `mag annotate`), so every step is `unaudited`; no audit label was written by hand")


def _stages(stages: list[dict[str, Any]] | None) -> str:
    """The card's one line on the stages that made the raw corpus (``build_info.json`` ``corpus_stages``)."""
    if not stages:
        return ("The raw corpus records no stages (`corpus.json` has no stage record; see `mag stages`).")
    from mag_dataset.raw import StageEntry, out_of_date

    names = " → ".join(f"`{e['stage']}`" + ("*" if e.get("backfilled") else "") for e in stages)
    backfilled = " (* backfilled from how it was made)" if any(e.get("backfilled") for e in stages) else ""
    stale = out_of_date([StageEntry.from_json(e, "corpus_stages") for e in stages])
    order = (f" Out of date: {', '.join(f'`{s}`' for s in stale)} (a stage that must come before ran after "
             "it; see `mag stages`)." if stale else "")
    return f"Stages that made the raw corpus, in order{backfilled}: {names} (`build_info.json` `corpus_stages`).{order}"


def _echoes(echoes: dict[str, Any] | None) -> str:
    """The card's sentence on test steps that repeat train (:func:`mag_dataset.builder.corpus.test_echoes`)."""
    if not echoes:
        return ""
    shared = (f" {echoes['shared_screenshots']} test steps show a screenshot that train shows too (a template's "
              "start page) with another gold action: kept.")
    if echoes["dropped"]:
        return (f"No test step repeats a train step's screenshot and gold action: the {echoes['dropped']} that did "
                f"(a shared start page with the same first click) were left out of test.{shared}\n")
    if echoes["echoes"]:
        return (f"{echoes['echoes']} test steps repeat a train step's screenshot and gold action (kept: the "
                f"corpus does not set `drop_test_echoes`).{shared}\n")
    return f"No test step repeats a train step's screenshot and gold action.{shared}\n"


def _guide_lint(lint: dict[str, Any] | None) -> str:
    """The card's line on the guide lint (:mod:`mag_dataset.builder.guide_lint`)."""
    if not lint:
        return ""
    rules = ", ".join(f"`{rule}` {n}" for rule, n in lint["by_rule"].items())
    verdict = "none of them misleads" if not lint["findings"] else f"{lint['findings']} findings"
    return (f"Guide lint (`mag lint-guides`): {lint['steps']} guides checked, {verdict} ({rules}).\n")


def _annotation(info: dict[str, Any] | None) -> str:
    """The card's lines on human verification: responses, decisions and agreement on the overlap."""
    if not info or not info.get("responses"):
        return ""
    agr = info.get("agreement") or {}

    def fig(f: dict[str, Any]) -> str:
        return f"{f['value']:.3f} (n = {f['n']})" if f.get("value") is not None else f"n/a ({f.get('reason')})"

    decisions = ", ".join(f"{k} {v}" for k, v in info.get("decisions", {}).items())
    text = (f"Human verification (`mag annotate`): {info['responses']} responses by {len(info.get('annotators', []))} "
            f"annotators on the built steps ({decisions}). Agreement on the {agr.get('items', 0)} steps two or more "
            f"annotators verified independently: Krippendorff's alpha (nominal) {fig(agr.get('alpha') or {})}")
    pairs = [f"{p['a']} × {p['b']} {fig(p['kappa'])}" for p in agr.get("pairs", [])]
    if pairs:
        text += "; Cohen's kappa " + ", ".join(pairs)
    sites = [f"{s} {fig(f)}" for s, f in (agr.get("sites") or {}).items()]
    if sites:
        text += "; alpha per site: " + ", ".join(sites)
    return text + ".\n"


def _audit_examples(examples: dict[str, dict[str, Any]]) -> str:
    """The card's example of each audit outcome: the step and what each judge said of it."""
    if not examples:
        return ""
    lines = ["", "One step of each audit outcome, with each judge's vote and evidence (all of them are in",
             "`audit_verdicts.jsonl` of the raw corpus):", ""]
    for status, ex in examples.items():
        said = []
        for v in ex["votes"]:
            vote = str(v.get("vote") or "no vote")
            if v.get("element_id"):
                vote += f" → `{v['element_id']}`"
            said.append(f"`{v['judge']}` {vote}" + (f" ({v['why']})" if v.get("why") else ""))
        reason = f"; {ex['reason']}" if ex.get("reason") else ""
        lines.append(f"- **{status}**: `{ex['step_id']}`{reason}: " + "; ".join(said) + ".")
    return "\n".join(lines) + "\n"


def render_card(
    build_info: dict[str, Any],
    stats: dict[str, dict[str, dict[str, Any]]],
    split_medians: dict[str, dict[str, float]] | None = None,
    families: dict[str, dict[str, dict[str, Any]]] | None = None,
    realism_table: str | None = None,
) -> str:
    """The full README.md of a built folder.

    Args:
        build_info: the content of ``build_info.json`` (views → splits → counts and files).
        stats: ``{view: {split: split_statistics(...)}}``.
        split_medians: ``{split: medians(som rows)}``, shown next to the paper's medians.
        families: :func:`family_statistics` of the som rows, the per-family table.
        realism_table: :func:`mag_dataset.builder.realism.format_realism` of the build, if any.

    Returns:
        Markdown with a YAML header; deterministic for the same inputs.
    """
    import yaml

    header = yaml.safe_dump(_yaml_header(build_info), sort_keys=False, allow_unicode=True, width=120)
    split_source = (
        "`corpus.json` of the raw corpus" if build_info["split_source"] != "default" else "the builder's default (no corpus.json)"
    )
    med_rows = "\n".join(
        f"| {split} | {m['guide_words']:g} | {m['candidates']:g} | {m['task_steps']:g} |"
        for split, m in (split_medians or {}).items()
    )
    return CARD_TEMPLATE.format(
        header=header,
        description=DESCRIPTION,
        package_version=build_info["package_version"],
        build_version=build_info["build_version"],
        fingerprint=build_info["raw_fingerprint"][:16],
        audited=_audit_sentence(stats, build_info.get("audit_judges")),
        audit_examples=_audit_examples(build_info.get("audit_examples") or {}),
        guide_lint=_guide_lint(build_info.get("guide_lint")),
        annotation=_annotation(build_info.get("annotation")),
        echoes=_echoes(build_info.get("test_echoes")),
        stages=_stages(build_info.get("corpus_stages")),
        fields="\n".join(f"| `{n}` | {t} | {d} |" for n, t, d in _FIELDS),
        action_table=_action_table(),
        split_source=split_source,
        split_seed=build_info["split_seed"],
        held=", ".join(f"`{t}`" for t in build_info["held_out_templates"]) or "none declared",
        statistics=format_statistics(stats),
        med_rows=med_rows,
        sites_row=SITES_ROW,
        family_table=format_family_statistics(families) if families else "(not computed)",
        realism_table=realism_table or "(no site family in this build)",
        citation=CITATION.rstrip(),
    )
