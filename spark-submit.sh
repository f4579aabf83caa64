#!/usr/bin/env bash
# Run a PySpark application with kafkaseg: ./spark-submit.sh jobs/export.py --sample
#
# Finds the project's Python ($KAFKASEG_PYTHON, an active virtualenv, or the checkout's .venv, set up on first use
# by scripts/bootstrap.sh), makes the
# driver and the Python workers use it (PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON), puts the project on PYTHONPATH
# (so workers import kafkaseg and PySpark auto-registers format("kafkaseg") from pyspark_kafkaseg), and runs that
# Python's bundled spark-submit with conf/spark-defaults.conf. Extra spark-submit flags go before the script:
#   ./spark-submit.sh --master 'local[4]' --conf spark.executor.memory=4g jobs/export.py --data-dir ... --output ...
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

find_python() {
    # An explicitly chosen interpreter wins; otherwise the checkout's .venv, created or refreshed on first use
    # (scripts/bootstrap.sh: quick when nothing changed), so this one command works on a fresh machine.
    if [[ -n "${KAFKASEG_PYTHON:-}" ]]; then echo "$KAFKASEG_PYTHON"; return; fi
    if [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then echo "$VIRTUAL_ENV/bin/python"; return; fi
    "$ROOT/scripts/bootstrap.sh" | tail -n 1
}

PYTHON="$(find_python)"
if ! "$PYTHON" -c "import pyspark" 2>/dev/null; then
    echo "spark-submit.sh: $PYTHON cannot import pyspark (pip install 'kafkaseg[spark]', or set KAFKASEG_PYTHON)" >&2
    exit 2
fi
PYTHON="$("$PYTHON" -c 'import sys; print(sys.executable)')"
SPARK_SUBMIT="$(dirname "$PYTHON")/spark-submit"
if [[ ! -x "$SPARK_SUBMIT" ]]; then
    SPARK_SUBMIT="$("$PYTHON" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))')"
fi

export PYSPARK_PYTHON="$PYTHON"
export PYSPARK_DRIVER_PYTHON="$PYTHON"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

# conf/ is Spark's conf dir unless the caller chose one: spark-defaults.conf and log4j2.properties (quiet logs).
export SPARK_CONF_DIR="${SPARK_CONF_DIR:-$ROOT/conf}"

exec "$SPARK_SUBMIT" --properties-file "$ROOT/conf/spark-defaults.conf" "$@"
