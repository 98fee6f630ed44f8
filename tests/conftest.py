import pytest
import torch

GPU = torch.cuda.is_available()
NO_GPU_REASON = "no CUDA GPU visible (torch.cuda.is_available() is False); run `bin/test -m gpu` on a GPU machine"


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason=NO_GPU_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private NVRTC cache, so tests see real compiles and leave the user's cache alone."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
