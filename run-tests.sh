#!/usr/bin/env bash
# Sets up everything on a fresh machine (Python 3.11+, Java 17 and gcc assumed) and runs the whole test suite.
# Extra arguments go to pytest, e.g. ./run-tests.sh -k planning
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$("$root/scripts/bootstrap.sh" | tail -n 1)"
cd "$root"
export PYSPARK_PYTHON="$python" PYSPARK_DRIVER_PYTHON="$python"
exec "$python" -m pytest "$@"
