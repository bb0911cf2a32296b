"""The error a user's mistake raises: :class:`UserError`.

Core layer, so that the library, the baselines and the model runners can raise it without
importing the command line: ``mag`` (:mod:`mag_dataset.cli`) prints it as one clear line
and exits with status 2, and a script that calls the library catches the same class.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: printed as one clear line, exit status 2, no traceback."""


__all__ = ["UserError"]
