#!/usr/bin/env bash
# Regenerates the rows of loader/runtimes/python/layouts.cc (CPython object layouts per
# version) from the DWARF of CPython builds that have it (pyenv's builds do; Debian's keep
# theirs in a -dbgsym package), one build per minor version:
#   scripts/python_layouts.sh $(pyenv root)/versions/3.{8,9,10,11,12,13}.*
# Prints C++ initializers; paste them into kLayouts. Needs gdb.
set -euo pipefail
script=$(dirname "$0")/python_layouts.py
for prefix in "$@"; do
  lib=$(ls "$prefix"/lib/libpython3.*.so.1.0 2>/dev/null | head -1)
  asyncio=$(ls "$prefix"/lib/python3.*/lib-dynload/_asyncio*.so 2>/dev/null | head -1)
  version=$("$prefix"/bin/python3 -c 'import sys; print("%d %d" % sys.version_info[:2])')
  [[ -n $lib && -n $asyncio ]] || { echo "python_layouts: $prefix has no shared libpython or _asyncio module" >&2; exit 1; }
  row=$( (gdb -batch -x "$script" "$lib"; LAYOUT_PART=asyncio gdb -batch -x "$script" "$asyncio") 2>/dev/null |
    sed -n 's/^LAYOUT //p' | tr '\n' ' ')
  read -r major minor <<<"$version"
  # 3.11's frames have an owner but no entry shims (FRAME_OWNED_BY_CSTACK is 3.12's): is_entry marks them.
  if [[ $row == *"frame_is_entry="[0-9]* ]]; then row=$(sed 's/frame_owner=[0-9]*/frame_owner=kNone/' <<<"$row"); fi
  printf '    {.major = %s, .minor = %s, ' "$major" "$minor"
  sed -E 's/([a-z_]+)=([A-Za-z0-9]+)/.\1 = \2,/g; s/, *$//' <<<"$row" | tr -d '\n'
  printf '},  // %s\n' "$("$prefix"/bin/python3 -c 'import platform; print(platform.python_version())')"
done
