"""Shared pytest fixtures: where the real Spider data is, and skipping cleanly when it is not."""

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
