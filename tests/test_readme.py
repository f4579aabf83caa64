"""README.md against the code, so the two cannot drift: the option tables (names, defaults, choices) against
:mod:`kafkaseg.options`, and every flag of the ``kafkaseg`` commands and of the jobs against the README's text."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

from kafkaseg.cli.main import build_parser
from kafkaseg.options import (_CHOICES, IGNORED_KAFKA_OPTION_PREFIXES, IGNORED_KAFKA_OPTIONS, IGNORED_OPTIONS,
                              OPTION_NAMES, REJECTED_KAFKA_OPTIONS, STREAM_OPTION_NAMES, ReadOptions)

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")

#: Not read options a user gives: what Spark's ``load()`` passes (README: "It is the first argument only").
LOAD_ARGUMENTS = {"path", "paths"}


def _table(heading_pattern: str) -> dict[str, tuple[str, str]]:
    """The first ``| option | default | meaning |`` table after the heading matching ``heading_pattern``: each
    option name (a row may name several, comma separated) -> (default cell, meaning cell), backticks stripped
    from the default."""
    heading = re.search(heading_pattern, README, re.MULTILINE)
    assert heading, f"README has no heading matching {heading_pattern!r}"
    rows: dict[str, tuple[str, str]] = {}
    in_table = False
    for line in README[heading.end():].splitlines():
        if line.startswith("| option | default | meaning"):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            break
        if line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|", 2)]
        names, default, meaning = cells
        for name in re.findall(r"`([^`]+)`", names):
            assert name not in rows, f"README's table lists {name!r} twice"
            rows[name] = (default.strip("`"), meaning)
    assert rows, f"no option table after {heading_pattern!r}"
    return rows


BATCH = _table(r"^## Options$")
STREAM = _table(r"^### Streaming")


def test_the_options_table_lists_every_option_and_no_other():
    options = (set(OPTION_NAMES) - LOAD_ARGUMENTS) | set(IGNORED_OPTIONS)
    assert not options - set(BATCH), f"options README's table lacks: {sorted(options - set(BATCH))}"
    assert not set(BATCH) - options, f"README's table lists options the code lacks: {sorted(set(BATCH) - options)}"


@pytest.mark.parametrize("name", IGNORED_OPTIONS)
def test_each_spark_option_accepted_and_ignored_has_a_row_saying_so(name):
    default, meaning = BATCH[name]
    assert not default and "accepted and ignored" in meaning, f"README's {name} row: {meaning!r}"
    # (a stream's option is ignored by a batch read only, and its row says where it takes effect)
    assert (name in STREAM_OPTION_NAMES) == ("in a batch read" in meaning), f"README's {name} row: {meaning!r}"


def _option_notes() -> str:
    """The prose between the option table and the next heading (the ``kafka.*`` settings)."""
    after = README[re.search(r"^## Options$", README, re.MULTILINE).end():]
    after = after[after.index("\n| option | default | meaning"):]
    after = after[after.index("\n\n"):]  # the table's end
    return after[:after.index("\n## ")]


def test_every_kafka_consumer_setting_accepted_or_rejected_is_named():
    notes = _option_notes()
    named = set(re.findall(r"`kafka\.([\w.*]+)`", notes)) - {"*"}  # (`kafka.*`: any of them)
    expected = set(IGNORED_KAFKA_OPTIONS) | {f"{p}*" for p in IGNORED_KAFKA_OPTION_PREFIXES} | set(REJECTED_KAFKA_OPTIONS)
    assert not expected - named, f"README does not name: {sorted(expected - named)}"
    assert not named - expected, f"README names kafka.* settings the code does not know: {sorted(named - expected)}"


def test_the_stream_table_names_options_a_stream_parses():
    assert set(STREAM) <= set(OPTION_NAMES) | set(STREAM_OPTION_NAMES)
    assert set(STREAM_OPTION_NAMES) <= set(STREAM)


@pytest.mark.parametrize("name", sorted(name for name, (default, _) in BATCH.items() if default))
def test_a_documented_default_given_explicitly_changes_nothing(name):
    default = BATCH[name][0]
    if default == "all":  # `columns`: the whole schema, which no value spells
        assert name == "columns" and ReadOptions.from_options({}).columns is None
        return
    assert ReadOptions.from_options({name: default}) == ReadOptions.from_options({}), (
        f"README says {name} defaults to {default!r}")


@pytest.mark.parametrize("name", sorted(name for name, (default, _) in STREAM.items() if default))
def test_a_documented_stream_default_given_explicitly_changes_nothing(name):
    default = STREAM[name][0]
    assert (ReadOptions.from_options({name: default}, stream=True)
            == ReadOptions.from_options({}, stream=True)), f"README says a stream's {name} defaults to {default!r}"


@pytest.mark.parametrize("name", sorted(_CHOICES))
def test_every_choice_of_an_option_is_in_its_row(name):
    default, meaning = BATCH[name]
    documented = {default} | set(re.findall(r"`([^`]+)`", meaning))
    assert set(_CHOICES[name]) <= documented, f"README's {name} row lacks {set(_CHOICES[name]) - documented}"


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """The long options ``--help`` lists (suppressed ones are a pasted Kafka command's, not kafkaseg's)."""
    return {option for action in parser._actions if action.help is not argparse.SUPPRESS
            for option in action.option_strings if option.startswith("--") and option != "--help"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _documented(flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", README) is not None


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_flag_of_a_command_is_in_the_readme(command):
    missing = sorted(flag for flag in _flags(_commands()[command]) if not _documented(flag))
    assert not missing, f"kafkaseg {command} takes {missing}, which README.md never mentions"


@pytest.mark.parametrize("job", ["export", "lookup", "retention_audit", "compact"])
def test_every_flag_of_a_job_is_in_the_readme(job):
    module = importlib.import_module(f"jobs.{job}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        module.parse_args(["--help"])
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out.getvalue())) - {"--help"}
    assert flags, out.getvalue()
    missing = sorted(flag for flag in flags if not _documented(flag))
    assert not missing, f"jobs/{job}.py takes {missing}, which README.md never mentions"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation (backticks, dots, slashes, parentheses...) dropped,
    spaces turned into hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """The anchors of ``text``'s headings (not of ``#`` lines in fenced code), with GitHub's ``-1``, ``-2``... for
    a repeated one."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.+)$", line)
        if fenced or not heading:
            continue
        slug = _slug(heading.group(1))
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


ROOT = Path(__file__).resolve().parent.parent

#: README and the docs it sends the details to, each of whose relative links must resolve.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _broken_links(path: Path) -> list[str]:
    """The relative links of the Markdown file ``path`` (``#anchor``, ``file``, ``file#anchor``) that name no file,
    or a heading the named Markdown file does not have (links in fenced code are not links)."""
    text, fenced, prose = path.read_text(encoding="utf-8"), False, []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            prose.append(line)
    broken = set()
    for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(prose)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.add(target)
        elif anchor and (linked.suffix != ".md" or anchor not in _anchors(linked.read_text(encoding="utf-8"))):
            broken.add(target)
    return sorted(broken)


def test_the_docs_are_found():
    assert {"README.md", "bad-input.md", "cli.md", "jobs.md", "storage.md"} <= {path.name for path in DOCS}


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_relative_link_names_a_file_and_heading(path):
    assert not _broken_links(path), f"{path.name} links to what is not there: {_broken_links(path)}"


#: Where README's intro ("No data dir at hand?") has the sample data dir written, to try the examples on.
SAMPLE = "/tmp/sample-kafka-logs"


def _sample_commands() -> list[str]:
    """The ``kafkaseg`` lines of README's bash blocks that run on the sample data dir."""
    commands, fenced = [], False
    for line in README.splitlines():
        if line.startswith("```"):
            fenced = line.startswith("```bash")
            continue
        if fenced and line.startswith("kafkaseg ") and SAMPLE in line:
            commands.append(line)
    return commands


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from kafkaseg.testing import sample_data_dir
    path = tmp_path_factory.mktemp("readme") / "sample-kafka-logs"
    sample_data_dir(path)
    return path


def test_the_readme_has_commands_to_try_on_the_sample():
    assert len(_sample_commands()) >= 5, _sample_commands()


@pytest.mark.parametrize("command", _sample_commands())
def test_a_command_shown_on_the_sample_runs_on_it(command, sample, monkeypatch, capsys):
    from kafkaseg.cli.main import main
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)  # (`--config conf/retention.toml`)
    argv = [arg.replace(SAMPLE, str(sample)) for arg in shlex.split(command, comments=True)[1:]]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, f"{command}\nexit status {code}\n{err[-2000:]}"
    assert out.strip(), f"{command} printed nothing"
