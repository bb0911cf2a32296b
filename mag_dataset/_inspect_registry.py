"""Inspect AI's entry point into this package (``[project.entry-points.inspect_ai]``).

Importing it registers the WebMRE task, scorer and metric with Inspect, so an installed
package runs as ``inspect eval mag_dataset/webmre -T view=som -T contract=J --model ...``
from any folder (the file form ``mag_dataset/inspect_task.py@webmre`` needs the source tree).
"""

from mag_dataset.inspect_task import micro_means, webmre, webmre_scorer

__all__ = ["micro_means", "webmre", "webmre_scorer"]
