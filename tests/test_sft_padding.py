"""benchmarks/sft_padding.py: the warm-up's padding in arrival order and sorted, on the built-in data."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from spider_data import BUILTIN_DATA_DIR

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "sft_padding.py"


def test_sorting_by_length_never_pads_more_and_the_figures_add_up() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--data-dir", str(BUILTIN_DATA_DIR), "--questions", "12",
                           "--batch-size", "4", "--micro-batch", "2"], capture_output=True, text=True, check=True)
    shares = re.search(r"padding: ([\d.]+)% of positions in arrival order, ([\d.]+)% sorted by length; sorting saves "
                       r"([\d.]+)% of the positions", done.stdout)
    assert shares, done.stdout
    arrival, by_length, saved = (float(share) / 100 for share in shares.groups())
    assert by_length <= arrival
    # (1 - arrival) / (1 - by_length) is the positions kept: real tokens over each padded total
    assert saved == pytest.approx(1 - (1 - arrival) / (1 - by_length), abs=0.002)
    assert re.search(r"\d+ episodes, \d+-\d+ tokens .* 3 steps of 4 in micro-batches of 2", done.stdout), done.stdout


def test_a_folder_without_spider_data_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--data-dir", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "no train_spider.json in" in done.stderr
