"""library_noise: the known-harmless library messages go, everything else (ours above all) still shows."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import library_noise

REPO_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture
def silenced() -> None:
    library_noise.silence()


class Recorded(logging.Handler):
    """The messages that reach a handler of the logger itself (some libraries' loggers do not propagate)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def logged(name: str, message: str) -> list[str]:
    """What reaches a handler of the logger: only our filters decide (a library imported earlier in the test run
    may have disabled the logger or raised its level, which is not what these tests are about)."""
    logger, handler = logging.getLogger(name), Recorded()
    saved = logger.disabled, logger.level
    logger.disabled = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        logger.warning(message)
    finally:
        logger.removeHandler(handler)
        logger.disabled, logger.level = saved
    return handler.messages


@pytest.mark.parametrize(("logger", "start"), [(name, start) for name, start, _ in library_noise.LOGGED_NOISE])
def test_each_known_library_message_is_dropped(silenced: None, logger: str, start: str) -> None:
    assert logged(logger, start + " (and the rest of the message)") == []


@pytest.mark.parametrize("logger", sorted({name for name, _, _ in library_noise.LOGGED_NOISE} | {"train", "sft"}))
def test_other_messages_of_those_loggers_and_ours_still_show(silenced: None, logger: str) -> None:
    assert logged(logger, "something nobody has listed") == ["something nobody has listed"]


def test_silence_leaves_python_warnings_alone(silenced: None) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        library_noise.silence()
        warnings.warn("a warning of this project's own", UserWarning, stacklevel=1)
    assert [str(warning.message) for warning in caught] == ["a warning of this project's own"]


def test_a_quiet_import_passes_on_every_line_but_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with library_noise.quiet_import():
        print("Unsloth 2026.10.9: no GPU found, training on CPU (x86_64, 2 threads). CPU training is much slower")
        print("a line nobody has listed")
    assert capsys.readouterr().out == "a line nobody has listed\n"


def test_a_failing_import_keeps_its_output(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ImportError), library_noise.quiet_import():
        print("why the import failed")
        raise ImportError("no such module")
    assert capsys.readouterr().out == "why the import failed\n"


@pytest.mark.slow
def test_the_first_line_of_a_dry_run_is_the_projects_own(tmp_path: Path) -> None:
    """Unsloth, torchao, bitsandbytes and torch print their import-time notices before anything of ours; with
    them gone, the first line a user reads is train.py's (stdout and stderr in the order they were written)."""
    result = subprocess.run([sys.executable, "train.py", "--phase", "easy", "--dry-run", "--output_dir", str(tmp_path)],
                            cwd=REPO_DIR, env={**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout
    assert lines[0].startswith("[train] "), "\n".join(lines[:8])
