"""Leaderboard store: validate an uploaded predictions file, score it against hidden gold
with the library scorer, and keep it in SQLite with the file itself, content-addressed.

The leaderboard Space (``leaderboard/app.py``) and ``mag leaderboard`` are thin edges
over :class:`Board`; this module never re-implements a scoring rule: every figure comes
from :func:`mag_dataset.scoring.score_predictions`, the same call ``mag score`` makes.
The protocol is WebMRE's (arXiv 2609.27353): deterministic, rule-based scoring, so a
stored file re-scores to the same bytes (:meth:`Board.rescore_all`).

Configuration, read by :meth:`BoardConfig.from_env` (every variable optional):

=========================  ================================================================
``MAG_BOARD_GOLD``         gold source: a built dataset folder or a Hub dataset repo id
                           (default: the bundled sample corpus, built once into a cache)
``MAG_BOARD_GOLD_TOKEN``   token for a private Hub gold dataset (default: ``HF_TOKEN``)
``MAG_BOARD_SPLIT``        split scored (default ``test``)
``MAG_BOARD_DIR``          data folder holding ``board.sqlite`` and ``files/``
                           (default ``./leaderboard_data``)
``MAG_BOARD_DB``           database path (default ``$MAG_BOARD_DIR/board.sqlite``)
``MAG_BOARD_MAX_MB``       upload cap in MiB, enforced by the server and the handler
                           (default 20); also caps a ``.jsonl.gz`` file's decompressed size
``MAG_BOARD_MAX_LINES``    most lines a predictions file may have (default 200000)
``MAG_BOARD_MAX_SEEDS``    most seeds one predictions file may hold (default 10)
``MAG_BOARD_SCORE_SECONDS`` time limit for decoding and scoring one submission (default 60)
``MAG_BOARD_WORKER_MB``    memory limit of the process that decodes and scores one
                           submission, in MiB (default 1024)
``MAG_BOARD_WORKERS``      submissions decoded and scored at once; more wait in the
                           queue, which shows each its position (default 2)
``MAG_BOARD_DAILY_CAP``    accepted submissions per submitter per UTC day (default 5)
``MAG_BOARD_ADMINS``       comma-separated submitter names exempt from the daily cap
``MAG_BOARD_SUBMITTER``    who submits through the page off a Space (on a Space: the signed-in
                           login); the page has no submitter field (default ``local``)
``MAG_BOARD_COMPARE_PER_MIN``  comparisons per user per minute (default 6; 0: no limit);
                           ``MAG_BOARD_COMPARE_ALL_PER_MIN`` for everyone (default 30)
``MAG_BOARD_DETAILS_PER_MIN``  Details views per user per minute (default 30);
                           ``MAG_BOARD_DETAILS_ALL_PER_MIN`` for everyone (default 300)
``MAG_BOARD_SYNC_REPO``    Hub dataset repo id the database and files are mirrored to
                           after each accepted submission and restored from at start-up
                           when the local database is missing (default: no sync)
``MAG_BOARD_SYNC_TOKEN``   token for that repo (default: ``HF_TOKEN``)
``MAG_BOARD_VERDICTS``     a cached judge-verdict file (:mod:`mag_dataset.verdicts`) for the
                           usefulness column; guides without verdicts stay unjudged
                           (default: none, usefulness not applicable)
``MAG_BOARD_MAX_FORMAT_FAILURES`` most format failures a file may have, in percent of its
                           predictions (default 50); over it the file is rejected
=========================  ================================================================

Integrity rules (every one names its reason when it rejects a file):

* **Duplicates** are found on the normalised content, not the bytes: the sorted
  ``(seed, step_id, output stripped of surrounding whitespace, coord_space)`` records of
  the parsed file (:func:`~mag_dataset.board.integrity.content_sha256`). The same predictions as ``.jsonl`` with a
  trailing blank line, ``.jsonl.gz`` or ``.parquet`` are the same submission.
* **Format failures**: a file whose outputs fail the format gate of the declared view and
  contract on more than ``MAG_BOARD_MAX_FORMAT_FAILURES`` percent of its predictions is
  rejected (a file of empty outputs around one real answer would otherwise be scored).
* **Another contract**: a file whose outputs pass the format gate of another view or
  contract more often than the declared one's is rejected, naming the better one (a
  contract-J file declared as A would otherwise rank with all zeros).
* **Breakdown granularity** (:func:`~mag_dataset.board.granularity.public_report`): a per-site, per-action-type, stale or
  unseen-template group is shown only when it holds at least :data:`~mag_dataset.board.granularity.MIN_GROUP_STEPS` distinct gold
  steps, whatever the seeds (a report's ``gold_steps`` and ``gold_n``); smaller groups are pooled into ``other`` (and, while ``other`` is still smaller,
  the next smallest group joins it); a breakdown that cannot keep two groups of that size
  is withheld, and a metric scored on fewer than :data:`~mag_dataset.board.granularity.MIN_GROUP_STEPS` steps of a shown
  group is left out. So no figure the board shows rests on fewer than
  :data:`~mag_dataset.board.granularity.MIN_GROUP_STEPS` gold steps, and no withheld group can be recovered by
  subtracting the shown ones from the total. Probing one label by changing one prediction
  between two submissions is bounded by the daily cap, not by this rule.

Ranking (:meth:`Board.ranking`, shared by the Space and the API): within a view and a
contract, by :func:`~mag_dataset.board.ranking.ranking_metric` (SAA for contracts with an action, BLEU-1 for G), then
:func:`~mag_dataset.board.ranking.rank_key`'s tie-breakers. A submission's rank is one plus the number of submissions
of its table that beat it *significantly*: a higher ranking-metric micro mean and a
two-sided p < :data:`~mag_dataset.board.ranking.RANK_ALPHA` in the paired comparison of :mod:`mag_dataset.compare`
for that metric (the task-level sign-flip test on per-step means over each file's seeds,
1,000 draws, seed 0, for every metric and number of seeds; no multiplicity correction), so submissions whose
difference is not significant share a rank.

Untrusted decoding: an upload is decoded, validated and scored in a child process
(:func:`mag_dataset.isolation.run_isolated`) with ``MAG_BOARD_WORKER_MB`` of address space
and ``MAG_BOARD_SCORE_SECONDS`` of time, at most ``MAG_BOARD_WORKERS`` at once; a file that
exhausts either is rejected with the limit named, and the server never holds the decoded
data. Each upload has a fresh child; the next ones are started ahead and wait, the scorer
imported, their limits set once the upload has arrived (``run_isolated(..., warm=True)``). A Parquet file is checked from its footer first (exact columns and types, row count,
declared uncompressed sizes) and its strings' decoded size is added up, dictionary-encoded,
before any is expanded: the decoded text is capped at ``MAG_BOARD_MAX_MB`` like a gzip
file's.

Storage: one SQLite database in WAL mode, one row per accepted submission, each write a
short ``BEGIN IMMEDIATE`` transaction (scoring happens before it, outside any lock on the
database). A row keeps the report JSON exactly as the scorer wrote it, the scorer
version, the gold fingerprint, the SHA-256 of the uploaded bytes and its extension; the
bytes live in ``files/<sha[:2]>/<sha><ext>``. A rejected file stores nothing. The schema's
version is ``PRAGMA user_version``; a board opens an older database by running the missing
steps of :data:`mag_dataset.board.storage.MIGRATIONS` at start-up.

Layout (one module per concern; :class:`Board` wires them together):

=============================  ===================================================================
``board.config``               :class:`BoardConfig` and the ``MAG_BOARD_*`` variables
``board.gold``                 :class:`Gold`: the hidden gold, loaded from a folder, the Hub or the
                               bundled corpus
``board.upload``               upload decoding: envelope checks, bounded gzip, text checks
``board.parquet``              Parquet to JSON Lines within the caps (footer, sizes, batches)
``board.fields``               cleaning of names, links, tags, view and contract
``board.integrity``            duplicate content hash, format-gate rules, "validate only"
``board.grading``              the one scoring path: bytes -> predictions -> report -> columns,
                               and the isolated child's task (:func:`isolated_score`)
``board.columns``              the metric columns (from the scorer's metric declaration) and the
                               ranking columns of each contract
``board.ranking``              the ranking rule: :func:`rank_key`, the significance-shared rank
``board.granularity``          the breakdown granularity rule (:func:`public_report`)
``board.records``              :class:`Submission`, :class:`RescoreResult`
``board.storage``              SQLite: schema, migrations (``PRAGMA user_version``), statements
``board.mirror``               Hub mirror: push, restore
``board.core``                 :class:`Board`
=============================  ===================================================================

``mag_dataset.board`` itself exports what the leaderboard Space (``leaderboard/``), the
benchmarks and ``mag leaderboard`` use (:data:`__all__`); everything else is imported from
the module above that defines it.
"""

from __future__ import annotations

from mag_dataset.board.columns import METRIC_COLUMNS, metric_value
from mag_dataset.board.config import BoardConfig
from mag_dataset.board.core import Board
from mag_dataset.board.errors import SubmissionRejected
from mag_dataset.board.fields import PROVENANCE_TAGS
from mag_dataset.board.gold import Gold
from mag_dataset.board.granularity import MIN_GROUP_STEPS
from mag_dataset.board.ranking import Ranked
from mag_dataset.board.upload import EXTENSIONS

__all__ = [
    "Board",
    "BoardConfig",
    "EXTENSIONS",
    "Gold",
    "METRIC_COLUMNS",
    "MIN_GROUP_STEPS",
    "PROVENANCE_TAGS",
    "Ranked",
    "SubmissionRejected",
    "metric_value",
]
