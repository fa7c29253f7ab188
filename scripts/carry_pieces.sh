#!/usr/bin/env bash
# Cut FILE (or stdin, as -) into the largest pieces that one device call can carry beside the working tree:
#   bash scripts/carry_pieces.sh <the GGUF> .m          # .m/part.00, .m/part.01, ... (the 0.5B; .m15 for the 1.5B)
# A call carries at most 64 MiB: the tracked and untracked-not-ignored files travel with every piece, and they grow
# as a session commits results, so a piece leaves MARGIN_MIB (default 3) of room on top of today's tree.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FILE|- DIR   (pieces DIR/part.NN)" >&2; exit 2; }
source=$1 dir=$2
[ "$source" = - ] || [ -f "$source" ] || { echo "no file at $source" >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
tree_bytes=$(cd "$root" && git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null |
  tail -1 | cut -f1)
piece_mib=$(( (64 * 1048576 - tree_bytes) / 1048576 - ${MARGIN_MIB:-3} ))
[ "$piece_mib" -ge 8 ] || { echo "the working tree ($tree_bytes bytes) leaves no room for a piece" >&2; exit 1; }
mkdir -p "$dir" && rm -f "$dir"/part.*  # the pieces of an earlier cut, not the folder
split -b "${piece_mib}M" -d "$source" "$dir/part."
echo "$(ls "$dir"/part.* | wc -l) pieces of ${piece_mib} MiB in $dir (the working tree: $((tree_bytes / 1048576)) MiB)"
