#!/usr/bin/env bash
# Install one port, pinned, in a venv of its own, with sinpe (this checkout, non-editable) beside it.
#   tools/ports/setup.sh NAME [DIR]     (DIR defaults to /work/ports/NAME; the venv is DIR/venv)
# Pins: tools/ports/requirements-NAME.txt; packages whose own pins would pull a GPU stack or
# an older torch go in requirements-NAME-nodeps.txt and are installed with --no-deps.
# Rerun with SINPE_ONLY=1 to reinstall sinpe alone (to pick up new commits).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name="${1:?usage: setup.sh NAME [DIR]}"
dir="${2:-/work/ports/$name}"
req="$here/requirements-$name.txt"
[ -f "$req" ] || { echo "setup.sh: no pins for '$name' ($req)" >&2; exit 2; }
# maxtext 0.2.5 requires Python >= 3.12; every other port runs on 3.11 (the CPU torch on disk is cp311)
case "$name" in
  maxtext) want=3.12 ;;
  *) want=3.11 ;;
esac
python="${PORTS_PYTHON:-}"
if [ -z "$python" ]; then
  # pyenv's shims answer for a version that is installed but not selected: try each candidate
  for candidate in "python$want" /root/.pyenv/versions/"$want".*/bin/python; do
    if "$candidate" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$want'.split('.')))" 2>/dev/null; then
      python="$candidate"; break
    fi
  done
fi
[ -n "$python" ] || { echo "setup.sh: no Python $want here (set PORTS_PYTHON)" >&2; exit 2; }
mkdir -p "$dir"
[ -x "$dir/venv/bin/python" ] || "$python" -m venv "$dir/venv"
pip=("$dir/venv/bin/python" -m pip install --quiet)
if [ -z "${SINPE_ONLY:-}" ]; then
  "${pip[@]}" --upgrade pip
  "${pip[@]}" -r "$req"
  if [ -f "$here/requirements-$name-nodeps.txt" ]; then
    "${pip[@]}" --no-deps -r "$here/requirements-$name-nodeps.txt"
  fi
fi
# sinpe as a user gets it: a wheel built from this checkout (not editable), built once per
# state of its sources and Python version, and shared by the ports' venvs
tag="$("$dir/venv/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
state="$(cd "$repo" && find src pyproject.toml setup.py MANIFEST.in -type f -not -name '*.so' \
  -not -path '*/__pycache__/*' 2>/dev/null | sort | xargs sha1sum | sha1sum | cut -c1-12)"
wheels="${PORTS_WHEELS:-/work/ports/wheels}/$tag-$state"
if ! ls "$wheels"/sinpe-*.whl >/dev/null 2>&1; then
  "$dir/venv/bin/python" -m pip wheel --quiet --no-deps -w "$wheels.partial" "$repo"
  mv "$wheels.partial" "$wheels"
fi
"${pip[@]}" --force-reinstall --no-deps "$wheels"/sinpe-*.whl
"${pip[@]}" "numpy>=1.23"
"$dir/venv/bin/python" -c "import sinpe, sys; print('$name:', sys.version.split()[0], 'sinpe', sinpe.__version__, sinpe.BACKEND)"
