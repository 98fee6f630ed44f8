"""The GitHub Actions workflow: the matrix names every arch the registry builds for, offline
and on GPUs; and it is safe to run (issue 42): actions pinned by commit, a read-only token,
no persisted credentials, GPU runners never for pull requests; zizmor finds nothing."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from zoo import registry

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "ci.yml"


def jobs():
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]


def test_matrix_covers_every_registry_arch():
    archs = registry.offline_archs()
    assert sorted(jobs()["offline"]["strategy"]["matrix"]["arch"]) == archs
    assert sorted(jobs()["gpu"]["strategy"]["matrix"]["arch"]) == archs
    assert "self-hosted" in jobs()["gpu"]["runs-on"]
    assert any("-m gpu" in step.get("run", "") for step in jobs()["gpu"]["steps"])


def test_the_workflow_is_safe_to_run():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), (name, step["uses"])
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
            assert "${{" not in step.get("run", ""), (name, "expressions reach scripts through env:")
    gate = workflow["jobs"]["gpu"]["if"]
    assert "pull_request" not in gate and "github.event_name == 'push'" in gate and "refs/heads/main" in gate


# zizmor where requirements.txt put it (beside this Python, a virtualenv's bin/), or on PATH.
ZIZMOR = next((str(p) for p in (Path(sys.executable).parent / "zizmor",) if p.is_file()), None) or shutil.which("zizmor")


@pytest.mark.skipif(ZIZMOR is None, reason="zizmor is not installed (pip install zizmor; requirements.txt has it)")
def test_zizmor_finds_nothing():
    proc = subprocess.run([ZIZMOR, "--offline", "--min-severity", "low", str(WORKFLOW)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
