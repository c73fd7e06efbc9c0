#!/usr/bin/env bash
# Copies the header-only dependencies (CLI11, doctest) from this machine's Debian packages into
# .deps/include (git-ignored), so a GPU host without those packages can build the tree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$ROOT/.deps/include"
for header_dir in /usr/include/CLI /usr/include/doctest; do
  [[ -d $header_dir ]] || { echo "missing $header_dir: apt-get install libcli11-dev doctest-dev" >&2; exit 1; }
  cp -r "$header_dir" "$ROOT/.deps/include/"
done
echo "vendored CLI11 and doctest headers into .deps/include"
