"""Fixtures of the eval suite: which checkpoint to gate, the tiny offline model, real Spider once."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the model hub

import pytest

from spider_data import SpiderSplit, load_split

# Every 20th question of Spider's train split: all databases, all hardness classes, and every kind of
# skipped question, for a few seconds of play (loading the split runs all 7,000 gold queries, ~8 s).
SPIDER_SAMPLE_STRIDE = 20


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--eval-checkpoint",
        default=None,
        help="checkpoint folder for the accuracy gates in eval/test_gates.py (or set EVAL_CHECKPOINT)",
    )


@pytest.fixture(scope="session")
def spider_sample(spider_path: Path) -> SpiderSplit:
    full = load_split(spider_path, "train", progress=False)
    return SpiderSplit(
        data_dir=full.data_dir,
        split=full.split,
        examples=full.examples[::SPIDER_SAMPLE_STRIDE],
        missing_databases=full.missing_databases,
    )
