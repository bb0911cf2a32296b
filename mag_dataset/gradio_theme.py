"""The Gradio theme of the package's two apps: the leaderboard Space and ``mag annotate``.

Gradio's default theme, drawn with Source Sans Pro's Regular and Bold faces only. Gradio 6.31
ships a 5 KB subset as the font's SemiBold (weight 600, which headings, buttons, table heads
and the board's score cells use): capitals missing from it fall back to another face and print
small ("MAG", "SAA", "All 16 columns"). With no 600 face loaded, weight 600 is drawn with the
Bold one, as a browser does for any weight a font lacks.
"""

from __future__ import annotations

from typing import Any


def theme() -> Any:
    """The apps' ``gr.themes.Default``, for ``launch(theme=...)`` (Gradio imported here, when called)."""
    import gradio as gr

    return gr.themes.Default(font=(gr.themes.LocalFont("Source Sans Pro", weights=(400, 700)),
                                   "ui-sans-serif", "system-ui", "sans-serif"))


__all__ = ["theme"]
