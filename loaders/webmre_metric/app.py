"""Gradio widget of the metric (the standard ``evaluate`` Space): one call, no logic here."""

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("webmre_metric.py" if __name__ == "__main__" else "loaders/webmre_metric")
launch_gradio_widget(module)
