"""scripts/resolve_vllm_wheels.py and the list it wrote: the vLLM carry holds what the GPU image's offline install
failed on (2026-12-06), and the stand-in wheels that keep the registry's torch out of the resolution are wheels pip
takes, with no dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from resolve_vllm_wheels import IMAGE_PACKAGES, read_pins, stand_in_wheel  # noqa: E402

WHEEL_LIST = ROOT / "configs" / "vllm" / "wheels-0.26.0.txt"


def test_pins_are_read_from_a_freeze_and_from_the_sized_list_alike(tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text("# comment\nTyping_Extensions==4.16.0\nvllm==0.26.0 | 303.7 MB\ntorch==2.11.0+cu130\n\n")
    assert read_pins(listing) == {"typing-extensions": "4.16.0", "vllm": "0.26.0", "torch": "2.11.0+cu130"}


def test_the_carry_replaces_what_the_image_had_in_versions_vllm_rules_out() -> None:
    carried, image = read_pins(WHEEL_LIST), read_pins(IMAGE_PACKAGES)
    assert next(iter(carried)) == "vllm" and carried["vllm"] == "0.26.0"
    # What pip refused on the GPU machine: the image's setuptools 81.0.0 (vllm wants <81 on Python 3.12), then its
    # numba 0.68.0 (vllm pins 0.65.0).
    assert tuple(int(part) for part in carried["setuptools"].split(".")[:2]) < (81, 0)
    assert carried["numba"] == "0.65.0"
    assert not [name for name, version in carried.items() if image.get(name, "").split("+")[0] == version], \
        "the list carries a wheel the image already has in that version"
    assert not {"torch", "torchaudio", "torchvision"} & set(carried), "the image's CUDA build of torch must stay"


def test_a_stand_in_wheel_installs_for_the_image_with_no_dependencies(tmp_path: Path) -> None:
    stand_ins = tmp_path / "stand-ins"
    stand_ins.mkdir()
    stand_in_wheel(stand_ins, "torch", "2.11.0")
    platform_flags = ["--platform", "manylinux_2_39_x86_64", "--python-version", "3.12", "--implementation", "cp",
                      "--only-binary", ":all:"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(stand_ins),
         "--target", str(tmp_path / "target"), *platform_flags, "--quiet", "--report", str(tmp_path / "report.json"),
         "torch==2.11.0"], capture_output=True, text=True, check=False)
    if "no such option: --report" in done.stderr:
        pytest.skip("this pip has no --report")
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert '"name": "torch"' in report and report.count('"metadata"') == 1, "one wheel, no dependencies"
