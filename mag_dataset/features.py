"""The ``datasets.Features`` of the two views (som, coord) of a built WebMRE dataset.

Both views share one column set, so a row of either view converts to the same
:class:`mag_dataset.schema.Step`. They differ in content, not in columns:

* **som** — ``screenshot`` is the Set-of-Mark screenshot (labelled boxes drawn),
  ``candidates`` is the candidate menu, ``action.element_id`` is the gold element id.
* **coord** — ``screenshot`` is the raw screenshot, ``candidates`` is always empty,
  ``action.element_id`` and ``original_element_id`` are always null (no element id is
  given in this view, not even in the gold record); the gold action is grounded by
  ``action.coordinate`` and ``target_bbox`` stays for scoring.

Coordinates and boxes are in screenshot pixels: ``coordinate`` is ``[x, y]`` and a box is
``[x0, y0, x1, y1]``. ``image_width`` / ``image_height`` are the screenshot's size;
``viewport_width`` / ``viewport_height`` the CSS viewport of the browser at capture and
``device_pixel_ratio`` the screenshot pixels per CSS pixel (see
:func:`mag_dataset.raw.capture_geometry`), what a model author needs to map a point to
CSS pixels or to another resolution. Enumerations (action type, guide source, audit status, split) are
stored as their string values, so the Parquet files are readable without this package.

This module imports ``datasets``; import it only where a dataset is built or loaded.

References:
    WebMRE (arXiv 2609.27353) §3: the two views share tasks, splits, screenshots and
    guides; they differ in grounding and in whether element ids are available.
"""

from __future__ import annotations

from datasets import Features, Image, List, Value

from mag_dataset.actions import ARG_FIELDS, View

#: Columns of the gold action struct, in order. ``type`` is an ActionType value.
ACTION_COLUMNS: tuple[str, ...] = ("type", "element_id", "coordinate", *ARG_FIELDS)


def _action_features() -> dict:
    out: dict = {"type": Value("string"), "element_id": Value("string"), "coordinate": List(Value("float64"), length=2)}
    for name in ARG_FIELDS:
        out[name] = Value("string")
    return out


def step_features() -> Features:
    """Features of every column except ``screenshot``, in column order."""
    return Features(
        {
            "step_id": Value("string"),
            "task_id": Value("string"),
            "site": Value("string"),
            "site_family": Value("string"),
            "intent": Value("string"),
            "intent_template_id": Value("string"),
            "step_index": Value("int32"),
            "num_steps": Value("int32"),
            "image_width": Value("int32"),
            "image_height": Value("int32"),
            "viewport_width": Value("int32"),
            "viewport_height": Value("int32"),
            "device_pixel_ratio": Value("float64"),
            "url": Value("string"),
            "previous_guides": List(Value("string")),
            "guide": Value("string"),
            "guide_source": Value("string"),
            "verified_by": Value("string"),
            "guide_decision": Value("string"),
            "decided_at": Value("string"),
            "verification_notes": Value("string"),
            "action": _action_features(),
            "target_bbox": List(Value("float64"), length=4),
            "candidates": List(
                {
                    "id": Value("string"),
                    "role": Value("string"),
                    "text": Value("string"),
                    "bbox": List(Value("float64"), length=4),
                }
            ),
            "audit_status": Value("string"),
            "disputed": Value("bool"),
            "stale": Value("bool"),
            "coordinate_restored": Value("bool"),
            "original_element_id": Value("string"),
            "unseen_template": Value("bool"),
            "split": Value("string"),
            "split_seed": Value("int64"),
        }
    )


def view_features(view: View | str) -> Features:
    """Features of one view: the step columns plus the ``screenshot`` image first.

    Args:
        view: ``som`` or ``coord`` (the columns are the same; see the module docstring).

    Returns:
        The ``datasets.Features`` declared by the builder and written to the card.
    """
    View(view)  # validates the name
    feats = {"screenshot": Image()}
    feats.update(step_features())
    return Features(feats)
