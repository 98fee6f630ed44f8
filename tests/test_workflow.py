"""The GitHub Actions matrix names every arch the registry builds for, offline and on GPUs."""
from pathlib import Path

import yaml

from zoo import registry

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "ci.yml"


def test_matrix_covers_every_registry_arch():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    archs = registry.offline_archs()
    assert sorted(jobs["offline"]["strategy"]["matrix"]["arch"]) == archs
    assert sorted(jobs["gpu"]["strategy"]["matrix"]["arch"]) == archs
    assert "self-hosted" in jobs["gpu"]["runs-on"]
    assert any("-m gpu" in step.get("run", "") for step in jobs["gpu"]["steps"])
