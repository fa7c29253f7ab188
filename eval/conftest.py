"""Fixtures of the eval suite: which checkpoint to gate, the tiny offline model, real Spider once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the model hub

import pytest

from spider_data import SpiderSplit, load_split

# What each checkpoint gate measured, in the order they ran: printed at the end of the run, passed or not.
GATE_RESULTS = pytest.StashKey[list[str]]()

# Every 20th question of Spider's train split: all databases, all hardness classes, and every kind of
# skipped question, for a few seconds of play (loading the split runs all 7,000 gold queries, ~8 s).
SPIDER_SAMPLE_STRIDE = 20


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--eval-checkpoint",
        default=None,
        help="checkpoint folder for the accuracy gates in eval/test_gates.py (or set EVAL_CHECKPOINT)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[GATE_RESULTS] = []


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The gated numbers of the checkpoint, every gate's, where a passing test would otherwise show none."""
    results = config.stash.get(GATE_RESULTS, [])
    if results:
        terminalreporter.section("checkpoint gates")
        for line in results:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def spider_sample(spider_path: Path) -> SpiderSplit:
    full = load_split(spider_path, "train", progress=False)
    return SpiderSplit(
        data_dir=full.data_dir,
        split=full.split,
        examples=full.examples[::SPIDER_SAMPLE_STRIDE],
        missing_databases=full.missing_databases,
    )


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir: Path) -> Any:
    """The tiny model's tokenizer: the real Qwen3 tokenizer and chat template."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def builtin_sample(builtin_data_dir: Path) -> SpiderSplit:
    """Every sixth built-in dev question: a few episodes of every kind the model policies play."""
    split = load_split(builtin_data_dir, "dev", progress=False)
    return SpiderSplit(data_dir=split.data_dir, split=split.split, examples=split.examples[::6])
