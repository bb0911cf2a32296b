"""The local Ray instance the ``tests/test_ray_*.py`` modules run on (import the fixture)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray instance on 2 CPUs with a small object store, shut down after the module."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # pragma: no cover - another module's instance left running
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024, log_to_driver=False)
    yield ray
    ray.shutdown()
