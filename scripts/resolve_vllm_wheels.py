"""Which wheels vLLM needs on the GPU machine's image, resolved here against that image's own package list.

    python scripts/resolve_vllm_wheels.py                      # writes configs/vllm/wheels-0.26.0.txt
    bash scripts/fetch_vllm_wheels.sh                           # then downloads them and cuts the carry pieces

The GPU machine has no network, so `pip install --no-index` there sees only the carried wheels and what the image
has installed. A list resolved as if every installed package were acceptable misses the packages whose installed
version vLLM's pins rule out (2026-12-06, the first install there: setuptools 81.0.0 where vllm 0.26.0 wants <81,
then numba 0.68.0 where it pins 0.65.0). So this resolves vLLM with uv, the image's versions given as preferences
(kept wherever vLLM's pins allow), and writes every package whose resolved version the image does not have,
naming the installed packages the carry replaces. Markers are read for the image's Python (3.12) and platform,
which pip's own --dry-run does not do (it reads them for the interpreter that runs it). Needs `uv` (pip install
uv) and the package registry.

torch, torchaudio and torchvision come from the image's CUDA build, not from the registry: they enter the resolution
as stand-in wheels of the image's versions without dependencies, so the CUDA libraries torch pins (some of which the
registry does not serve) are left to the image.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE_PACKAGES = ROOT / "configs" / "vllm" / "gpu_image_packages.txt"
IMAGE_TORCH_BUILD = ("torch", "torchaudio", "torchvision")
IMAGE_PYTHON, IMAGE_PLATFORM = "3.12", "x86_64-manylinux_2_39"  # the image's Python 3.12.3 and glibc 2.39


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """``name==version`` lines (a pip freeze) as {normalized name: version}; other lines are skipped."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].split("|")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[normalized(name)] = version.strip()
    return pins


def stand_in_wheel(folder: Path, name: str, version: str) -> None:
    """A wheel of NAME VERSION with no files and no dependencies, tagged for the image so that it outranks the
    registry's own wheel of that version."""
    dist, tag = name.replace("-", "_"), f"cp312-cp312-{IMAGE_PLATFORM.split('-', 1)[1]}_x86_64"
    info = f"{dist}-{version}.dist-info"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: stand-in\nRoot-Is-Purelib: false\nTag: {tag}\n"}
    digest = {path: base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
              for path, text in files.items()}
    files[f"{info}/RECORD"] = "".join(f"{path},sha256={digest[path]},{len(text)}\n" for path, text in files.items())
    files[f"{info}/RECORD"] += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{dist}-{version}-{tag}.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def resolve(requirement: str, image: dict[str, str], stand_ins: Path, work: Path) -> dict[str, str]:
    """uv's resolution of REQUIREMENT for the image, its installed versions preferred (uv keeps the pins of an
    existing output file where it can)."""
    (work / "in.txt").write_text(requirement + "\n", encoding="utf-8")
    resolved = work / "resolved.txt"
    resolved.write_text("".join(f"{name}=={version}\n" for name, version in sorted(image.items())), encoding="utf-8")
    result = subprocess.run(
        ["uv", "pip", "compile", str(work / "in.txt"), "--python-version", IMAGE_PYTHON, "--python-platform",
         IMAGE_PLATFORM, "--only-binary", ":all:", "--find-links", str(stand_ins), "--no-header", "--no-annotate",
         "--quiet", "-o", str(resolved)],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"uv could not resolve {requirement} for the image:\n{result.stderr}")
    return read_pins(resolved)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", default="0.26.0", help="the vLLM version (0.26.0 pins the image's torch 2.11.0)")
    parser.add_argument("--image-packages", type=Path, default=IMAGE_PACKAGES,
                        help="the image's `pip list --format=freeze` (gpu_session.sh setup returns it)")
    parser.add_argument("--out", type=Path, help="default: configs/vllm/wheels-VERSION.txt")
    args = parser.parse_args(argv)
    out = args.out or ROOT / "configs" / "vllm" / f"wheels-{args.vllm}.txt"
    if not args.image_packages.is_file():
        sys.exit(f"no image package list at {args.image_packages}: `pip list --format=freeze` on the GPU machine "
                 "(gpu_session.sh setup returns it as image_packages.txt)")
    if shutil.which("uv") is None:
        sys.exit("this needs uv: pip install uv")
    image = read_pins(args.image_packages)
    missing = [name for name in IMAGE_TORCH_BUILD if name not in image]
    if missing:
        sys.exit(f"{args.image_packages} lists no {', '.join(missing)}: give the image's full pip freeze")
    installed = {name: version.split("+")[0] for name, version in image.items() if name != "pip"}
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        stand_ins = work / "stand-ins"
        stand_ins.mkdir()
        for name in IMAGE_TORCH_BUILD:
            stand_in_wheel(stand_ins, name, installed[name])
        resolved = resolve(f"vllm=={args.vllm}", installed, stand_ins, work)
    if any(name.startswith("nvidia-nccl") for name in resolved):
        sys.exit("the registry's torch entered the resolution (its CUDA pins came with it), not the image's stand-in")
    needed = {name: version for name, version in resolved.items()
              if installed.get(name) != version and name not in IMAGE_TORCH_BUILD}
    replaced = sorted(name for name in needed if name in installed)
    for name in replaced:
        print(f"the image's {name}=={installed[name]} gives way to {name}=={needed[name]} (vLLM's pins), carried")
    lines = [f"# vllm=={args.vllm} for the GPU image: the {len(needed)} wheels `pip install --no-index` there needs",
             f"# (python scripts/resolve_vllm_wheels.py, against {args.image_packages.name}; replaces the image's "
             f"{', '.join(f'{n} {installed[n]}' for n in replaced) or 'nothing'})"]
    lines += [f"{name}=={version}" for name, version in sorted(needed.items(), key=lambda item: item[0] != "vllm")]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(needed)} wheels to carry ({len(replaced)} of them replace the image's own) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
