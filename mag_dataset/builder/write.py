"""The Hub-ready folder: :func:`build_dataset` writes both views, ``build_info.json``, the card,
``eval.yaml`` and the checksum manifest into a temp folder and swaps it into place.

Holds the output side of the builder: the target folder checks, the Parquet shards of each
view moved out of the ``datasets`` cache, the provenance record, the README statistics
block refresh (``--readme``) and the atomic swap. It does not validate raw data
(:mod:`mag_dataset.builder.corpus`) or render the card's text (:mod:`mag_dataset.card`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import datasets

from mag_dataset.actions import View
from mag_dataset.builder.corpus import Corpus, prepare_corpus
from mag_dataset.builder.hf_builder import WebMREBuilder
from mag_dataset.builder.layout import (
    BUILD_FORMAT,
    BUILD_INFO_FILE,
    BUILD_VERSION,
    CARD_FILE,
    MAX_SHARD_SIZE,
    BuildError,
    is_build,
    write_checksums,
)
from mag_dataset.raw import VERDICTS_FILE, RawDataError
from mag_dataset.schema import AuditStatus


def _check_target(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BuildError(f"output {out_dir} exists and is not a folder")
        if any(out_dir.iterdir()) and not is_build(out_dir):
            raise BuildError(f"output folder {out_dir} is not empty and holds no earlier build; choose another --out")


def _check_inputs(raw_dir: str | os.PathLike, out_dir: Path, readme: str | os.PathLike | None) -> None:
    """Refuse an output folder inside the raw corpus, an unusable one, or a README without its block."""
    from mag_dataset.card import replace_readme_block

    raw_abs = Path(raw_dir).resolve()
    if out_dir.resolve() == raw_abs or raw_abs in out_dir.resolve().parents:
        # the built folder would be read as an episode folder by the next build
        raise BuildError(f"output {out_dir} is inside the raw corpus {raw_abs}; choose a folder outside it")
    _check_target(out_dir)
    if readme is not None:
        try:
            replace_readme_block(Path(readme).read_text("utf-8"), "")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise BuildError(f"--readme {readme}: {e}") from None


def _write_view(builder: WebMREBuilder, work: Path, out: Path, view: View) -> dict[str, dict[str, Any]]:
    """Run the HF builder for one view into ``work`` and move its Parquet shards to ``out/<view>/``."""
    prep = work / view.value
    try:
        builder.download_and_prepare(
            output_dir=str(prep), file_format="parquet", max_shard_size=MAX_SHARD_SIZE, download_mode="force_redownload"
        )
    except datasets.exceptions.DatasetGenerationError as e:
        # datasets wraps errors raised while generating rows; surface ours unwrapped.
        if isinstance(e.__cause__, (RawDataError, BuildError)):
            raise e.__cause__ from None
        raise
    target = out / view.value
    target.mkdir(parents=True)
    result: dict[str, dict[str, Any]] = {}
    for split, info in builder.info.splits.items():
        pattern = re.compile(rf"-{re.escape(split)}(-\d{{5}}-of-\d{{5}})?\.parquet$")
        shards = sorted(p for p in prep.iterdir() if pattern.search(p.name))
        if not shards:
            raise BuildError(f"the builder wrote no Parquet shard for {view.value}/{split}")
        files = []
        for i, shard in enumerate(shards):
            name = f"{split}-{i:05d}-of-{len(shards):05d}.parquet"
            os.replace(shard, target / name)
            files.append(f"{view.value}/{name}")
        result[split] = {"num_examples": info.num_examples, "num_bytes": info.num_bytes, "files": files}
    return result


def _swap_into_place(tmp: Path, out_dir: Path, overwrite: bool) -> Path:
    def keep_existing() -> bool:
        # a finished build there (e.g. one a concurrent process renamed first) is kept
        return not overwrite and out_dir.is_dir() and is_build(out_dir)

    if keep_existing():
        shutil.rmtree(tmp)
        return out_dir
    if out_dir.is_dir() and not any(out_dir.iterdir()):
        out_dir.rmdir()
    if not out_dir.exists():
        try:
            tmp.rename(out_dir)
        except OSError:
            if not keep_existing():
                raise
            shutil.rmtree(tmp)
        return out_dir
    old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
    out_dir.rename(old)
    tmp.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
    return out_dir


def copy_build(built: Path, out_dir: Path) -> Path:
    """Copy a finished build to a new or empty ``out_dir``, whole or not at all (as a build is placed)."""
    tmp = _temp_folder(out_dir)
    try:
        shutil.copytree(built, tmp, dirs_exist_ok=True)
        return _swap_into_place(tmp, out_dir, overwrite=False)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _temp_folder(out_dir: Path) -> Path:
    """A hidden temp folder next to ``out_dir`` with the permissions a normal folder gets."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the final folder gets normal permissions
    return tmp


@contextlib.contextmanager
def _progress_bars(progress: bool) -> Iterator[None]:
    """Hide ``datasets``' progress bars inside the block unless ``progress``; restore them after."""
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    if not progress:
        datasets.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled and not progress:
            datasets.utils.logging.enable_progress_bar()


def verdict_rows(audit_path: Path | None) -> list[dict[str, Any]]:
    """The rows of the verdict log next to the audit file, in logged order ([] without a log: an
    audit file may hold only `mag unify`'s flags, or adjudications alone)."""
    log = audit_path.with_name(VERDICTS_FILE) if audit_path is not None else None
    if log is None or not log.is_file():
        return []
    with log.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def audit_judges(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Who audited: ``[{"name", "model"}]`` of the judges in the verdict log's ``rows``, in panel order."""
    judges: dict[str, str] = {}
    for row in rows:
        judges.setdefault(str(row.get("judge")), str(row.get("model") or ""))
    return [{"name": n, "model": m} for n, m in judges.items()]


#: Outcomes the card shows an example of, in this order.
EXAMPLE_STATUSES = (AuditStatus.CONFIRMED, AuditStatus.REMAPPED, AuditStatus.UNMAPPABLE, AuditStatus.DISPUTED)


def _why(answer: str | None) -> str | None:
    """The ``why`` of a rule-based judge's evidence (its answer is that JSON), else None."""
    try:
        ev = json.loads(answer or "null")
    except (TypeError, ValueError):
        return None
    why = ev.get("evidence", {}).get("why") if isinstance(ev, dict) and isinstance(ev.get("evidence"), dict) else None
    return why if isinstance(why, str) else None


def audit_examples(corpus: Corpus, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One step of every audit outcome with the judges' votes on it (the card's examples).

    Per status: the first site step (the pages of real applications), else the first step, in
    step-id order, that the verdict log's ``rows`` have votes for; ``{status: {"step_id",
    "reason", "votes": [{"judge", "vote", "element_id", "why"}]}}``.
    """
    votes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        votes.setdefault(str(row["step_id"]), []).append(
            {"judge": str(row.get("judge")), "vote": row.get("vote") or row.get("error"),
             "element_id": row.get("element_id"), "why": _why(row.get("answer")) or row.get("reason")})
    steps = sorted((s for s in corpus.steps if s.step_id in votes),
                   key=lambda s: (not s.episode.task_id.startswith("sites."), s.step_id))
    out: dict[str, dict[str, Any]] = {}
    for status in EXAMPLE_STATUSES:
        st = next((s for s in steps if s.audit.status is status), None)
        if st is not None:
            out[status.value] = {"step_id": st.step_id, "reason": st.audit.reason, "votes": votes[st.step_id]}
    return out


def guide_lint(corpus: Corpus) -> dict[str, Any]:
    """The guide lint over the built steps' episodes (:mod:`mag_dataset.builder.guide_lint`)."""
    from mag_dataset.builder.guide_lint import lint_episodes

    episodes = {s.episode.episode_id: s.episode for s in corpus.steps}
    return lint_episodes(episodes[k] for k in sorted(episodes)).to_dict()


def _build_info(corpus: Corpus, views: dict[str, Any], unmappable_point_only: bool) -> dict[str, Any]:
    """The provenance record ``build_info.json`` (without its ``family_statistics``)."""
    from mag_dataset import __version__

    verdicts = verdict_rows(corpus.audit_path)  # read once: who audited, and the card's examples
    return {
        "format": BUILD_FORMAT,
        "build_version": BUILD_VERSION,
        "package_version": __version__,
        "raw_fingerprint": corpus.fingerprint,
        "split_seed": corpus.splits.seed,
        "split_source": corpus.splits.source,
        "held_out_templates": list(corpus.splits.held_out_templates),
        # audited when steps were, not when an audit file exists (`mag unify` writes one for its flags)
        "audited": any(s.audit.status is not AuditStatus.UNAUDITED for s in corpus.steps),
        "audit_judges": audit_judges(verdicts),
        "audit_examples": audit_examples(corpus, verdicts),
        "guide_lint": guide_lint(corpus),
        "test_echoes": {"echoes": corpus.echoes.get("echoes", 0), "dropped": len(corpus.echoes.get("dropped", [])),
                        "shared_screenshots": corpus.echoes.get("shared_screenshots", 0),
                        "examples": corpus.echoes.get("dropped", [])[:5]},
        "unmappable_point_only": unmappable_point_only,
        "views": views,
        "annotation": annotation_info(corpus),
        # how the raw corpus was made (corpus.json "stages"); no part of the rows or the raw fingerprint
        "corpus_stages": corpus.stages,
    }


def annotation_info(corpus: Corpus) -> dict[str, Any] | None:
    """Human verification of the built steps, from ``RAW/annotations.sqlite`` (read only): responses,
    decisions and agreement on the overlap (:func:`mag_dataset.annotation_rules.summary`);
    None when the corpus has no annotation database."""
    from mag_dataset.annotation_rules import DEFAULT_DB, read_responses, summary

    db = Path(corpus.raw_dir) / DEFAULT_DB
    if not db.is_file():
        return None
    try:
        responses = read_responses(db)
    except ValueError as e:
        raise BuildError(str(e)) from None
    sites = {s.step_id: s.episode.site for s in corpus.steps}
    return summary([r for r in responses if r.step_id in sites], sites.__getitem__)


def _write_build(tmp: Path, corpus: Corpus, unmappable_point_only: bool) -> dict[str, Any]:
    """Write both views, ``build_info.json``, the card, ``eval.yaml`` and the checksums into ``tmp``.

    Returns:
        The build info written (``family_statistics`` included).
    """
    from mag_dataset.builder.realism import format_realism, realism_statistics
    from mag_dataset.card import family_statistics, medians, render_card, split_statistics
    from mag_dataset.hub_eval import write_eval_yaml

    work = tmp / ".work"
    views: dict[str, dict[str, dict[str, Any]]] = {}
    for view in View:
        builder = WebMREBuilder(config_name=view.value, cache_dir=str(work / "cache"), corpus=corpus)
        views[view.value] = _write_view(builder, work, tmp, view)
    shutil.rmtree(work)
    stats = {
        view.value: {s.value: split_statistics(st.row(view) for st in corpus.steps_in(s)) for s in corpus.splits_present}
        for view in View
    }
    info = _build_info(corpus, views, unmappable_point_only)
    families = family_statistics(st.row(View.SOM) for st in corpus.steps)
    info["family_statistics"] = families
    info["realism"] = realism_statistics(corpus.steps)
    (tmp / BUILD_INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", "utf-8")
    med = {s.value: medians(st.row(View.SOM) for st in corpus.steps_in(s)) for s in corpus.splits_present}
    realism = format_realism(info["realism"]) if info["realism"] else None
    (tmp / CARD_FILE).write_text(render_card(info, stats, med, families, realism), "utf-8")
    write_eval_yaml(tmp)  # the Hub benchmark registration, tasks checked against the card's configs
    write_checksums(tmp)
    return info


def _refresh_readme(readme: str | os.PathLike, info: dict[str, Any]) -> None:
    """Replace the generated statistics block of ``readme`` with this build's, atomically."""
    from mag_dataset.builder.realism import format_realism
    from mag_dataset.card import readme_block, replace_readme_block
    from mag_dataset.fileio import atomic_write

    text = Path(readme).read_text("utf-8")
    realism = format_realism(info["realism"]) if info.get("realism") else None
    atomic_write(Path(readme), replace_readme_block(text, readme_block(info["family_statistics"], info, realism)))


def build_dataset(
    raw_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    audit_path: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    overwrite: bool = True,
    include_failed: bool = False,
    unmappable_point_only: bool = False,
    readme: str | os.PathLike | None = None,
) -> Path:
    """Build both views of a raw corpus into a Hub-ready dataset folder, atomically.

    Args:
        raw_dir: raw corpus folder (format v1).
        out_dir: the dataset folder to write. An earlier build there is replaced; a
            non-empty folder that is not a build is refused.
        audit_path: optional audit file; default ``raw_dir/audit.jsonl`` when present.
        progress: show progress bars (tqdm).
        overwrite: replace an existing build at ``out_dir``; if False, an existing build
            (e.g. one finished concurrently by another process) is kept.
        include_failed: also build episodes marked unsuccessful (see :func:`prepare_corpus`).
        unmappable_point_only: build unrestored point-only steps as ``unmappable`` instead
            of refusing them (see :func:`prepare_corpus`).
        readme: a README whose generated statistics block (between
            :data:`mag_dataset.card.README_BEGIN` and ``README_END``) is replaced with this
            build's per-family table, atomically, after the build succeeded. Checked first.

    Returns:
        ``out_dir`` as an absolute path.

    Raises:
        RawDataError: inconsistent raw data, naming the episode, step and field.
        BuildError: corpus-level inconsistencies or an unusable output folder.
    """
    out_dir = Path(out_dir).absolute()
    _check_inputs(raw_dir, out_dir, readme)
    corpus = prepare_corpus(raw_dir, audit_path, progress=progress, include_failed=include_failed,
                            unmappable_point_only=unmappable_point_only)
    tmp = _temp_folder(out_dir)
    with _progress_bars(progress):
        try:
            info = _write_build(tmp, corpus, unmappable_point_only)
            done = _swap_into_place(tmp, out_dir, overwrite)
            if readme is not None:
                _refresh_readme(readme, info)
            return done
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
