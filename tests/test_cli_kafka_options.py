"""Options of Kafka's tools that a ``kafkaseg`` command does not take: each gets a message saying so and what to
give instead (``kafkaseg.cli.main._KAFKA_OPTIONS_NOT_TAKEN``), never argparse's "unrecognized arguments"."""

from __future__ import annotations

import pytest

from kafkaseg.cli.main import _KAFKA_OPTIONS_NOT_TAKEN, main

ROWS = [(command, option) for command, options in _KAFKA_OPTIONS_NOT_TAKEN.items() for option in options]


def test_every_option_of_kafkas_tools_is_taken_or_refused_with_a_reason():
    """The survey of DumpLogSegments, ConsoleConsumerOptions, GetOffsetShell and LogDirsCommand (Kafka 3.x to
    4.2): each option is one the kafkaseg command takes, or a row of the table."""
    kafka_options = {
        "dump": ["--files", "--print-data-log", "--verify-index-only", "--index-sanity-check", "--max-message-size",
                 "--max-bytes", "--deep-iteration", "--value-decoder-class", "--key-decoder-class",
                 "--offsets-decoder", "--transaction-log-decoder", "--cluster-metadata-decoder",
                 "--remote-log-metadata-decoder", "--share-group-state-decoder", "--skip-record-metadata"],
        "consume": ["--topic", "--include", "--whitelist", "--partition", "--offset", "--consumer-property",
                    "--command-property", "--consumer.config", "--command-config", "--formatter", "--property",
                    "--formatter-property", "--formatter-config", "--from-beginning", "--max-messages",
                    "--timeout-ms", "--skip-message-on-error", "--bootstrap-server", "--key-deserializer",
                    "--value-deserializer", "--enable-systest-events", "--isolation-level", "--group"],
        "offsets": ["--bootstrap-server", "--broker-list", "--topic-partitions", "--topic", "--partitions", "--time",
                    "--command-config", "--exclude-internal-topics"],
        "log-dirs": ["--bootstrap-server", "--command-config", "--describe", "--topic-list", "--broker-list"],
    }
    from kafkaseg.cli.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    for command, options in kafka_options.items():
        for option in options + ["--help", "--version"]:
            assert option in commands[command]._option_string_actions, (command, option)


@pytest.mark.parametrize("command, option", ROWS)
def test_an_option_not_taken_says_why_and_what_instead(command, option, capsys):
    """Before argparse's own errors (a missing --files or --data-dir), in both spellings, with or without a
    value; the table has no row for an option the command takes (say, once another branch adds a decoder)."""
    for argv in ([command, option], [command, option, "x"], [command, f"{option}=x"]):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(f"kafkaseg {command}: "), captured.err
        assert "unrecognized" not in captured.err and "usage:" not in captured.err
        assert captured.err.count("\n") == 1 and option in captured.err


def test_the_decoder_classes_name_what_prints_values_instead(capsys):
    assert main(["dump", "--files", "00000000000000000000.log", "--value-decoder-class",
                 "kafka.serializer.StringDecoder"]) == 2
    err = capsys.readouterr().err
    assert "--value-decoder-class is not offered" in err and "--print-data-log" in err
    assert "value.deserializer" in err and "kafkaseg consume" in err
    assert main(["dump", "--key-decoder-class", "--files", "x.log"]) == 2
    assert "key.deserializer" in capsys.readouterr().err


def test_version_on_each_command_prints_kafkasegs(capsys):
    for command in ("dump", "consume", "offsets", "log-dirs"):
        with pytest.raises(SystemExit) as done:
            main([command, "--version"])
        assert done.value.code == 0 and capsys.readouterr().out.startswith("kafkaseg ")
