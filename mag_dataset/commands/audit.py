"""``mag audit``: the three-judge label audit of a raw corpus.

Examples::

    mag audit --raw RAW_DIR --judges dom,name,pixel --steps all   # rule-based, offline, no model
    mag audit --raw RAW_DIR --judges judges.yaml                   # flagged steps (restored, recaptured)
    mag audit --raw RAW_DIR --judges judges.yaml --steps all --split test
    mag audit --raw RAW_DIR --replay       # recompute the audit file from the verdict log

The judges file lists three OpenAI-compatible endpoints::

    judges:
      - {name: gpt, base_url: https://api.openai.com/v1, model: gpt-5.5, api_key_env: OPENAI_API_KEY}
      - {name: qwen, base_url: http://127.0.0.1:8000/v1, model: Qwen/Qwen3.5-9B, api_key_env: null}
      - {name: claude, base_url: https://example.invalid/v1, model: some-model, timeout: 120}

A judge of the file may be rule-based (``- {name: pixel, kind: pixel}``): the ``dom``,
``name`` and ``pixel`` judges of :mod:`mag_dataset.harness.page_judges` locate the gold
target on the screenshot the step shows from the DOM fingerprints the recorder stored.
``--replay`` recomputes the audit file from the verdict log without any endpoint. The
prompt, the answer format, the merge rule and the failure guard (a judge failing more than
20% of its calls stops the audit and writes nothing; ``--allow-partial`` writes
``audit.partial.jsonl`` beside the audit file instead) are documented in
:mod:`mag_dataset.harness.audit`. Verify guides (``mag annotate``) before the audit: the
judges see the guides, so a guide changed later makes verdicts stale. An audit that writes the
corpus's own audit file appends its entry to the corpus's stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mag_dataset.commands import options
from mag_dataset.raw import AUDIT_FILE
from mag_dataset.schema import Split


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_raw(parser, "raw corpus folder")
    parser.add_argument("--judges", type=Path, metavar="FILE|dom,name,pixel",
                        help="the panel: a YAML/JSON file listing three judges (endpoints, or rule-based ones with "
                             "'kind: dom'), or the rule-based judges by name, e.g. dom,name,pixel (offline, no model)")
    options.add_out(parser, "audit file to write (default: RAW/audit.jsonl)", default=None, metavar="FILE")
    parser.add_argument("--verdicts", type=Path, default=None, metavar="FILE",
                        help="verdict log (default: audit_verdicts.jsonl next to the audit file)")
    options.add_cache_dir(parser, options.LLM_CACHE_HELP, old="--cache", type=Path)
    parser.add_argument("--steps", dest="select", choices=("all", "flagged"), default="flagged",
                        help="audit the flagged targeted steps (restored and recaptured ones, as WebMRE: the default) "
                             "or all of them")
    options.deprecated_alias(parser, "--select", "--steps", "select", choices=("all", "flagged"))
    parser.add_argument("--split", choices=("all", *(s.value for s in Split)), default="all",
                        help="only tasks of this split (corpus.json)")
    parser.add_argument("--replay", action="store_true", help="recompute the audit file from the verdict log, no endpoint")
    parser.add_argument("--db", type=Path, default=None,
                        help="annotation database holding the adjudications (default: RAW/annotations.sqlite), "
                             "the same --db as 'mag annotate'")
    parser.add_argument("--allow-partial", action="store_true",
                        help="when a judge failed too many calls, write audit.partial.jsonl beside the audit file "
                             "instead of stopping (the audit file is left as it is)")
    options.add_no_progress(parser)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.errors import UserError
    from mag_dataset.harness import audit
    from mag_dataset.harness.judges import load_judges
    from mag_dataset.llm_client import LLMConfigError

    raw = options.raw_folder(args)
    # the corpus is rewritten when the audit file is its own (RAW/audit.jsonl): then the run is a stage
    in_corpus = args.out is None or args.out.resolve() == (raw / AUDIT_FILE).resolve()
    try:
        if args.replay:
            out = args.out or raw / "audit.jsonl"
            vpath = args.verdicts or out.with_name(audit.VERDICTS_FILE)
            if not vpath.is_file():
                raise UserError(f"verdict log not found: {vpath} (run the audit with --judges first)")
            stage = options.start_stage(raw, "audit", {"replay": True}) if in_corpus else None
            report = audit.replay_audit(raw, vpath, out_path=args.out, db_path=args.db)
        else:
            if args.judges is None:
                raise UserError("--judges FILE is required (or --replay to recompute from the verdict log)")
            judges = load_judges(args.judges)
            panel = [j.name if j.rule_based else f"{j.name}={j.model}" for j in judges]
            settings = {"judges": panel, "steps": args.select, "split": args.split}
            stage = options.start_stage(raw, "audit", settings) if in_corpus else None
            report = audit.run_audit(
                raw, judges, out_path=args.out, verdicts_path=args.verdicts, cache_dir=args.cache_dir,
                select=args.select, split=args.split, db_path=args.db, allow_partial=args.allow_partial,
                progress=options.progress_printer(args),
            )
        if stage is not None and not report.partial:  # a partial audit left the audit file as it was
            stage.finish()
    except LLMConfigError as e:
        raise UserError(str(e)) from None
    except ValueError as e:  # RawDataError is a ValueError too
        raise UserError(str(e)) from None
    for line in report.warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(report.summary())
    print(f"wrote {report.audit_path}" + (f" and {report.verdicts_path}" if not args.replay else ""))
    if report.partial:
        print(f"the audit file {args.out or raw / 'audit.jsonl'} was not changed; review {report.audit_path} "
              "and move it into place, or rerun when the judges are back", file=sys.stderr)
    return 0
