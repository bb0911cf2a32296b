"""The board's one refusal type. Holds nothing else: every module of :mod:`mag_dataset.board`
raises it, so it sits below all of them."""

from __future__ import annotations


class SubmissionRejected(ValueError):
    """A submission was refused; the message says exactly why and is safe to show.

    Messages never quote gold data: they name the file's line, the step id the file
    gave, or the limit that was hit.
    """


__all__ = ["SubmissionRejected"]
