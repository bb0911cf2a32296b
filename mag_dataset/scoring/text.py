"""Text metrics of the scorer: argument normalisation, token F1, sentence BLEU, ROUGE-L.

Pure string functions (WebMRE, arXiv 2609.27353, "Protocol"). sacrebleu is imported on
first use and its scorer objects built once; ROUGE-L is rouge-score's, computed here (see
:func:`rouge_l`). Not here: which step a
metric applies to (:mod:`mag_dataset.scoring.metrics`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

#: Decimal places of the per-step BLEU and ROUGE-L values (removes float noise only).
STEP_DECIMALS = 10

_PUNCT_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def normalize_arg(s: str) -> str:
    """Normalise an action argument for exact comparison: NFKC, lower case, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", s).lower().split())


def normalize_url(s: str) -> str:
    """:func:`normalize_arg`, and a trailing ``/`` ignored."""
    return normalize_arg(s).rstrip("/")


def tokens(s: str) -> list[str]:
    """Lower-cased word tokens with punctuation split off as separate tokens."""
    return _PUNCT_TOKEN.findall(unicodedata.normalize("NFKC", s).lower())


def token_f1(pred: str, gold: str) -> float:
    """SQuAD-style token F1 with multiset overlap (1.0 when both are empty)."""
    p, g = tokens(pred), tokens(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


_BLEU: dict[int, Any] = {}


def _bleu_metric(order: int) -> Any:
    m = _BLEU.get(order)
    if m is None:
        from sacrebleu.metrics import BLEU

        # Same settings as sacrebleu.sentence_bleu (exp smoothing, effective order), plus
        # lowercase and the n-gram order; built once because construction is costly.
        m = _BLEU[order] = BLEU(lowercase=True, max_ngram_order=order, effective_order=True)
    return m


def bleu(pred: str, gold: str, order: int) -> float:
    """Sentence BLEU in [0, 1] (sacrebleu, lowercase, max_ngram_order=order).

    Rounded to :data:`STEP_DECIMALS` places: sacrebleu's log-space arithmetic returns
    100.00000000000004 for identical strings, and a perfect guide must score exactly 1.
    """
    return round(_bleu_metric(order).sentence_score(pred, [gold]).score / 100.0, STEP_DECIMALS)


# one-entry memo holding ONE tuple (pred, gold, (bleu1, bleu4)): reading and replacing a
# single reference is atomic, so threads scoring at once never mix pairs up
_LAST_PAIR: list[Any] = [None]


def bleu_1_4(pred: str, gold: str) -> tuple[float, float]:
    """BLEU-1 and BLEU-4 of one pair from ONE pass of sacrebleu's n-gram statistics.

    sacrebleu's segment statistics for order 4 are ``[hyp_len, ref_len, c1..c4, t1..t4]``;
    the order-1 statistics are ``[hyp_len, ref_len, c1, t1]``, the same numbers. Both
    scores are computed by sacrebleu's own ``BLEU`` objects from them, so the values equal
    :func:`bleu` with order 1 and 4 (a test checks it) while tokenising the pair once.
    """
    last = _LAST_PAIR[0]
    if last is not None and last[0] == pred and last[1] == gold:
        return last[2]
    m1, m4 = _bleu_metric(1), _bleu_metric(4)
    stats = m4._extract_corpus_statistics([pred], [[gold]])[0]
    b4 = m4._compute_score_from_stats(stats).score
    b1 = m1._compute_score_from_stats([stats[0], stats[1], stats[2], stats[6]]).score
    out = (round(b1 / 100.0, STEP_DECIMALS), round(b4 / 100.0, STEP_DECIMALS))
    _LAST_PAIR[0] = (pred, gold, out)
    return out


#: rouge-score's default tokenizer: lower case, every run of characters outside ``[a-z0-9]``
#: is a separator (``rouge_score.tokenize``, no stemmer).
_ROUGE_SEPARATOR = re.compile(r"[^a-z0-9]+")


def rouge_tokens(s: str) -> list[str]:
    """The tokens rouge-score's ``RougeScorer(use_stemmer=False)`` scores."""
    return _ROUGE_SEPARATOR.sub(" ", s.lower()).split()


def _lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence (one row of the table at a time)."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag = 0
        for j, y in enumerate(b, 1):
            up = row[j]
            row[j] = prev_diag + 1 if x == y else max(up, row[j - 1])
            prev_diag = up
    return row[-1]


def rouge_l(pred: str, gold: str) -> float:
    """rouge-score ``rougeL`` F-measure, no stemmer.

    Computed here with rouge-score's tokenizer, LCS and F-measure arithmetic, operation for
    operation (a test compares it with ``rouge_score.RougeScorer`` on generated strings):
    importing rouge-score loads nltk, 0.6 s for every process that scores (the leaderboard
    scores each submission in a fresh, sandboxed one).
    """
    target, prediction = rouge_tokens(gold), rouge_tokens(pred)
    if not target or not prediction:
        return 0.0
    lcs = _lcs_length(target, prediction)
    precision, recall = lcs / len(prediction), lcs / len(target)
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return round(f, STEP_DECIMALS)


def sacrebleu_version() -> str:
    """The installed sacrebleu version (recorded in the report's provenance)."""
    import sacrebleu

    return str(sacrebleu.__version__)


__all__ = ["STEP_DECIMALS", "bleu", "bleu_1_4", "normalize_arg", "normalize_url", "rouge_l", "rouge_tokens", "sacrebleu_version",
           "token_f1", "tokens"]
