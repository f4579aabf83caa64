#!/usr/bin/env bash
# Creates (or refreshes) the project's virtualenv in .venv with kafkaseg installed editable, its compiled modules
# built, and the dev/test dependencies. Idempotent and quick when nothing changed: a stamp records the hash of
# the files that decide what gets installed or compiled. Prints the venv's python path on stdout's last line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KAFKASEG_VENV:-$root/.venv}"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      python="$candidate"; break
    fi
  done
fi
[ -n "$python" ] || { echo "kafkaseg needs Python 3.11 or newer on PATH" >&2; exit 1; }
pyspark_pin="${KAFKASEG_PYSPARK:-}"  # e.g. 4.1.4: that PySpark instead of the newest (CI tests the oldest supported)
stamp="$venv/.kafkaseg-stamp"
want="$( (echo "pyspark=$pyspark_pin"; cat "$root/pyproject.toml" "$root/setup.py" "$root/kafkaseg/decode/_kernel.pyx" "$root/kafkaseg/decode/_varint.h" "$root/kafkaseg/storage/_mapped.pyx" "$root/kafkaseg/storage/_sigbus_guard.h" "$root/kafkaseg/wire/_walk.pyx") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
  echo "kafkaseg: creating $venv" >&2
  "$python" -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "kafkaseg: installing into $venv (pip install -e .[dev]; builds the compiled decoder)" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  # compat mode puts the checkout itself on sys.path (a .pth line), which PySpark's discovery of top-level
  # pyspark_* modules (pyspark_kafkaseg.DefaultSource) can see; the default editable finder hook cannot.
  "$venv/bin/python" -m pip install -q -e "$root[dev]" --config-settings editable_mode=compat >&2
  if [ -n "$pyspark_pin" ]; then
    "$venv/bin/python" -m pip install -q "pyspark==$pyspark_pin" >&2
  else  # a pin dropped since: pip keeps a satisfying older PySpark unless asked to upgrade
    "$venv/bin/python" -m pip install -q --upgrade "pyspark>=4.1" >&2
  fi
  "$venv/bin/python" -c 'import kafkaseg.decode as d, kafkaseg.storage._mapped, kafkaseg.wire.walk as w
assert d.IMPLEMENTATION == "cython", d.IMPLEMENTATION
assert w.IMPLEMENTATION == "cython", w.IMPLEMENTATION' >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
