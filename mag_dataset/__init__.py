"""mag_dataset: the reference distribution of the WebMRE / MAG web guide-agent benchmark.

Importing this package is cheap: no torch, gradio, trl or playwright is loaded here.
"""

from mag_dataset.actions import ACTION_SPACE, ActionType, Contract, View
from mag_dataset.schema import Action, AuditRecord, AuditStatus, Candidate, GuideSource, SchemaError, Step

__version__ = "0.1.0"

__all__ = [
    "ACTION_SPACE",
    "Action",
    "ActionType",
    "AuditRecord",
    "AuditStatus",
    "Candidate",
    "Contract",
    "GuideSource",
    "SchemaError",
    "Step",
    "View",
    "__version__",
]
