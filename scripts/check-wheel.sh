#!/usr/bin/env bash
# Builds kafkaseg's wheel as a cluster deployment would (pip wheel, with the build requirements pyproject.toml
# names), installs it with its runtime dependencies only into a fresh virtualenv, and reads the built-in sample
# data dir from outside the checkout: the compiled kernels (decoder, mappings, header walk) must be in the wheel and
# load, the Spark data source's registration module must be packaged, and the CLI must run. Used by .ci/run; needs PyPI (or a pip index).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$root" >&2
wheel="$(ls "$work"/dist/kafkaseg-*.whl)"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" >&2
cd "$work"  # not the checkout: the installed wheel alone is imported
"$work/venv/bin/python" - "$wheel" <<'EOF'
import sys
import zipfile

import kafkaseg
import kafkaseg.decode as decode
import kafkaseg.storage._mapped  # noqa: F401  (the compiled guarded mappings)
import kafkaseg.wire._walk  # noqa: F401  (the compiled header walk)
import kafkaseg.wire.walk as walk
from kafkaseg.testing.datadir import sample_data_dir

names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "pyspark_kafkaseg/__init__.py" in names, "the Spark data source's registration module is not in the wheel"
assert "kafkaseg/py.typed" in names
assert decode.IMPLEMENTATION == "cython", decode.IMPLEMENTATION
assert walk.IMPLEMENTATION == "cython", walk.IMPLEMENTATION
assert kafkaseg.__file__.startswith(sys.prefix), kafkaseg.__file__
manifest = sample_data_dir("sample")
table = kafkaseg.read_arrow("sample")
assert table.num_rows == manifest.record_count > 0, (table.num_rows, manifest.record_count)
print(f"wheel {sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files, compiled kernel, {table.num_rows} sample records")
EOF
"$work/venv/bin/kafkaseg" describe sample >/dev/null
