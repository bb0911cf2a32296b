"""The shop's Django settings and the package agree on the order-status pipeline.

``sites/shop/project/settings.py`` runs inside the shop's own virtual environment, which
cannot import ``mag_dataset``, so Oscar's ``OSCAR_ORDER_STATUS_PIPELINE`` is written there a
second time; the tasks draw status changes from ``seed_data.ORDER_PIPELINE``. A task asking
for a transition the shop refuses could not be solved: this test catches the drift.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mag_dataset.sites.shop as shop
from mag_dataset.sites.shop.seed_data import ORDER_PIPELINE

SETTINGS = Path(shop.__file__).parent / "project" / "settings.py"


def _setting(name: str):
    for node in ast.parse(SETTINGS.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not found in {SETTINGS}")


def test_order_status_pipeline_is_the_same_in_the_site_and_the_package():
    site = _setting("OSCAR_ORDER_STATUS_PIPELINE")
    assert len(site) == 6
    assert {k: tuple(v) for k, v in site.items()} == {k: tuple(v) for k, v in ORDER_PIPELINE.items()}
    assert _setting("OSCAR_INITIAL_ORDER_STATUS") in ORDER_PIPELINE
