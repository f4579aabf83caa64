"""Helpers for the Spark jobs' ``main()`` (``jobs/export.py``, ``jobs/lookup.py``): errors as one line.

A ``KafkaSegError`` raised in a Python worker (planning or an executor's read) reaches the driver wrapped in a
PySpark/Py4J exception whose text holds the worker's traceback; its ``kafkaseg.errors.<Name>: <message>`` line is
what the user needs. No Spark import here: the functions are tested without a JVM.
"""

from __future__ import annotations

import re
import sys

from kafkaseg import errors

__all__ = ["error_line", "report_error", "positive_int", "USAGE_ERRORS"]

# input problems: a bad option, a missing or unreadable data dir -> exit status 2 (as argparse's usage errors)
USAGE_ERRORS: tuple[type, ...] = (errors.InvalidOptionError, errors.LayoutError, errors.TableSchemaError,
                                  FileExistsError)
_WRAPPED = re.compile(r"kafkaseg\.errors\.(\w+): ([^\n]*)")
# the exception line that ends a worker's Python traceback ("ModuleNotFoundError: No module named 'pyarrow'")
_WORKER_ERROR = re.compile(r"Traceback \(most recent call last\):.*?\n(?![ \t])([\w.]+(?:Error|Exception|Exit|"
                           r"Interrupt|Warning)\b:?[^\n]*)", re.S)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).strip().splitlines() if part.strip())


def error_line(exc: BaseException, usage: tuple[type, ...] = ()) -> tuple[str, int] | None:
    """``(one line, exit status)`` for an error a job should report without a traceback, or None for anything
    else (a bug: keep its traceback). Exit status 2 for usage/input problems (:data:`USAGE_ERRORS` and ``usage``),
    1 otherwise."""
    usage = USAGE_ERRORS + tuple(usage)
    if isinstance(exc, errors.KafkaSegError) or isinstance(exc, usage):
        return f"{type(exc).__name__}: {_one_line(str(exc))}", 2 if isinstance(exc, usage) else 1
    module = type(exc).__module__ or ""
    if module.startswith(("pyspark", "py4j")):
        text = str(exc)
        found = _WRAPPED.findall(text)
        if found:
            name, message = found[-1]
            cls = getattr(errors, name, errors.KafkaSegError)
            code = 2 if isinstance(cls, type) and issubclass(cls, usage) else 1
            return f"{name}: {message.strip()}", code
        worker = _WORKER_ERROR.search(text)
        if worker:  # another error in a Python worker: its line, not the wrapper's "An exception was thrown..."
            return f"{type(exc).__name__}: {worker.group(1).strip()}", 1
        return f"{type(exc).__name__}: {errors.first_line(exc)}", 1
    return None


def report_error(exc: BaseException, prog: str, usage: tuple[type, ...] = (), out=None) -> int:
    """Print ``<prog>: error: <one line>`` to stderr and return the exit status, or re-raise ``exc``."""
    found = error_line(exc, usage)
    if found is None:
        raise exc
    line, code = found
    print(f"{prog}: error: {line}", file=out or sys.stderr)
    return code


def positive_int(text: str) -> int:
    """An argparse ``type`` for a count of tasks or partitions: an integer of 1 or more (a usage error otherwise,
    before Spark starts, instead of Spark's own error from inside the job or a 0 silently ignored)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not 1 or more")
    return value


def abandoned_line(output: str, committed: dict) -> str | None:
    """The line a job prints for the run folders its commit cleaned (``write_delta``'s ``abandoned_removed``)."""
    names = committed.get("abandoned_removed") or []
    if not names:
        return None
    return (f"removed what {len(names)} killed run(s) left in {output} (Spark's _temporary files, which VACUUM "
            f"skips, older than the table's deletedFileRetentionDuration): {', '.join(names)}")
