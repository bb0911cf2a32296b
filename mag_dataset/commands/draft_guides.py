"""``mag draft-guides``: draft guides with an LLM endpoint (answers cached).

Examples::

    mag draft-guides --raw RAW_DIR --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3.5-9B --api-key-env none
    mag draft-guides --raw RAW_DIR --base-url https://api.openai.com/v1 --model gpt-5.5 --sources template,llm
    mag annotate --raw RAW_DIR     # then verify the drafts

The prompt is :data:`mag_dataset.harness.annotate.DRAFT_SYSTEM_PROMPT` plus the step's
Set-of-Mark screenshot and :func:`mag_dataset.harness.annotate.draft_user_text`. Drafts written
into the corpus (its ``guide_drafts.jsonl``) append the run's entry to its stage record (``mag stages``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mag_dataset.commands import options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_raw(parser, "raw corpus folder")
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint root, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="model name")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the API key ('none' for an endpoint without one)")
    options.add_out(parser, "drafts file (default: RAW/guide_drafts.jsonl)", default=None, metavar="FILE")
    options.add_cache_dir(parser, options.LLM_CACHE_HELP, old="--cache", type=Path)
    parser.add_argument("--sources", default="template",
                        help="comma-separated guide sources to draft for (template, llm, human); default template")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request attempt")
    parser.add_argument("--max-tokens", type=int, default=64, help="longest answer, in tokens")
    options.add_no_progress(parser)


def run(args: argparse.Namespace) -> int:
    from mag_dataset.cache import llm_cache_dir
    from mag_dataset.errors import UserError
    from mag_dataset.harness.annotate import DRAFTS_FILE, draft_guides
    from mag_dataset.llm_client import ChatClient, LLMConfigError
    from mag_dataset.schema import GuideSource

    raw = options.raw_folder(args)
    sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
    bad = [s for s in sources if s not in {g.value for g in GuideSource}]
    if bad or not sources:
        raise UserError(f"--sources must list template, llm or human; got {args.sources!r}")
    try:
        client = ChatClient(
            args.base_url, args.model,
            api_key_env=None if args.api_key_env.lower() == "none" else args.api_key_env,
            timeout=args.timeout, cache_dir=args.cache_dir or llm_cache_dir(), concurrency=args.concurrency,
            default_params={"max_tokens": args.max_tokens},
        )
        # drafts written into the corpus (its own drafts file) make the run a stage
        in_corpus = args.out is None or args.out.resolve() == (raw / DRAFTS_FILE).resolve()
        stage = options.start_stage(raw, "draft-guides", {"model": args.model, "sources": list(sources),
                                                          "max_tokens": args.max_tokens}) if in_corpus else None
        report = draft_guides(raw, client, out_path=args.out, sources=sources,
                              progress=options.progress_printer(args))
        if stage is not None:
            stage.finish()
    except LLMConfigError as e:
        raise UserError(str(e)) from None
    except ValueError as e:
        raise UserError(str(e)) from None
    print(report.summary())
    return 0
