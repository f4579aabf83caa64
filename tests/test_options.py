"""ReadOptions.from_options: every option, its defaults, malformed values, unknown names, precedence, case."""

from __future__ import annotations

import json
import pickle

import pytest

from kafkaseg.errors import InvalidOptionError
from kafkaseg.options import (
    EARLIEST,
    IGNORED_KAFKA_OPTIONS,
    IGNORED_OPTIONS,
    LATEST,
    OPTION_NAMES,
    REJECTED_KAFKA_OPTIONS,
    OffsetLimit,
    ReadOptions,
    parse_byte_size,
)

MiB = 1 << 20


def parse(**options):
    return ReadOptions.from_options(options)


def rejects(options, *fragments):
    with pytest.raises(InvalidOptionError) as info:
        ReadOptions.from_options(options)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# Defaults ------------------------------------------------------------------------------------------------------------

def test_defaults():
    options = ReadOptions.from_options({})
    assert options == ReadOptions.from_options(None) == ReadOptions()
    assert (options.assign, options.subscribe, options.subscribe_pattern) == (None, None, None)
    assert options.starting.kind == "earliest" and options.ending.kind == "latest"
    assert options.starting_offsets_by_timestamp_strategy == "error"
    assert options.fail_on_data_loss is True
    assert options.min_partitions is None and options.max_records_per_partition is None
    assert options.include_headers is False
    assert options.isolation_level == "read_uncommitted" and not options.read_committed
    assert options.upper_bound == "highWatermark"
    assert options.verify_crc is True and options.include_control is False and options.include_metadata is False
    assert options.on_corruption == "fail"
    assert options.split_size == 128 * MiB
    assert options.max_records_per_batch == 65536
    assert options.max_bytes_per_batch == 64 * MiB
    assert options.pack_topic_partitions is True
    assert options.max_batch_bytes == 128 * MiB
    assert options.max_decompressed_batch_bytes == 256 * MiB
    assert options.replicas == "highestHighWatermark"
    assert options.filter_pushdown == "auto"
    assert options.paths == () and options.ignored == ()
    assert options.selects("anything", 7)


def test_none_values_mean_not_given():
    assert parse(startingOffsets=None, splitSize=None) == ReadOptions()


# Names: case-insensitivity, unknown, typos, duplicates ----------------------------------------------------------------

@pytest.mark.parametrize("name", OPTION_NAMES)
def test_every_canonical_name_is_accepted_in_any_case(name):
    values = {"assign": '{"t":[0]}', "subscribe": "t", "subscribePattern": "t.*", "startingOffsets": '{"t":{"0":1}}',
              "endingOffsets": '{"u":{"0":1}}', "startingTimestamp": "5", "endingTimestamp": "9",
              "startingOffsetsByTimestamp": '{"t":{"0":5}}', "endingOffsetsByTimestamp": '{"t":{"0":9}}',
              "startingOffsetsByTimestampStrategy": "latest", "failOnDataLoss": "false", "minPartitions": "3",
              "maxRecordsPerPartition": "10", "includeHeaders": "true", "kafka.isolation.level": "read_committed",
              "upperBound": "logEndOffset", "verifyCrc": "false", "includeControl": "true",
              "includeMetadata": "true", "onCorruption": "skip", "splitSize": "1m", "openCostInBytes": "0",
              "maxRecordsPerBatch": "10", "packTopicPartitions": "false",
              "maxBytesPerBatch": "1m", "maxBatchBytes": "1m", "maxDecompressedBatchBytes": "2m",
              "replicas": "all", "filterPushdown": "true", "readMode": "pread", "path": "/x",
              "paths": '["/x","/y"]', "columns": "offset", "timestampUnit": "ms", "tieredKeyRing": "k1=/k.pem",
              "remoteLogMetadata": "ignore"}
    assert set(values) == set(OPTION_NAMES)
    for spelling in (name, name.lower(), name.upper()):
        parsed = ReadOptions.from_options({spelling: values[name]})
        assert parsed != ReadOptions(), f"{spelling} had no effect"
        assert parsed == ReadOptions.from_options({name: values[name]})


@pytest.mark.parametrize("typo,suggestion", [
    ("statingOffsets", "startingOffsets"), ("endingoffset", "endingOffsets"), ("failOnDataLos", "failOnDataLoss"),
    ("subscribePatern", "subscribePattern"), ("splitsizes", "splitSize"), ("includeHeader", "includeHeaders"),
])
def test_unknown_option_suggests_the_closest_name(typo, suggestion):
    rejects({typo: "x"}, repr(typo), f"did you mean {suggestion!r}", "Accepted options")


def test_unknown_option_without_close_name_lists_accepted():
    message = rejects({"zzzqqq": "1"}, "unknown option 'zzzqqq'. Accepted options:", "startingOffsets")
    assert "did you mean" not in message


def test_non_string_key_rejected():
    rejects({1: "x"}, "strings")


def test_same_option_twice_in_different_case():
    rejects({"splitSize": "1m", "SPLITSIZE": "2m"}, "splitSize", "twice")
    assert parse(splitSize="1m", SPLITSIZE="1m").split_size == MiB


@pytest.mark.parametrize("name", IGNORED_OPTIONS)
def test_spark_stream_options_are_accepted_and_ignored(name):
    selection = {"subscribe": "t"} if name == "topic" else {}  # `topic` alone is an error (see below)
    options = ReadOptions.from_options({name.upper(): "123", **selection})
    assert options.ignored == (name,)
    assert options == ReadOptions.from_options(selection)  # ignored is not part of equality: no effect
    assert options.as_dict()["ignored"] == [name]


@pytest.mark.parametrize("key", [f"kafka.{k}" for k in IGNORED_KAFKA_OPTIONS]
                         + ["kafka.ssl.truststore.location", "kafka.sasl.jaas.config", "KAFKA.BOOTSTRAP.SERVERS"])
def test_connection_settings_are_ignored(key):
    options = ReadOptions.from_options({key: "host:9092"})
    assert options == ReadOptions()
    assert options.ignored == (key.lower(),)


@pytest.mark.parametrize("setting", sorted(REJECTED_KAFKA_OPTIONS))
def test_kafka_settings_spark_rejects_are_rejected(setting):
    rejects({f"kafka.{setting}": "x"}, f"kafka.{setting}", "not supported")


def test_consumer_tuning_is_ignored_and_a_misspelled_kafka_setting_is_unknown():
    """Spark passes every kafka.* setting to its consumer, so code tuned for a cluster carries them (found in
    audit: kafka.max.poll.records was refused); a name no consumer knows is likelier a typo."""
    for name in ("kafka.max.poll.records", "kafka.fetch.max.bytes", "kafka.check.crcs", "kafka.client.rack"):
        assert name in parse(**{name: "5"}).ignored
    assert "topic" in parse(topic="t", subscribe="t").ignored  # a sink option, which Spark's reader ignores too
    rejects({"kafka.max.pol.records": "5"}, "kafka.max.pol.records", "kafka.isolation.level")


def test_numbers_past_64_bits_are_refused_naming_the_option():
    for options in ({"maxRecordsPerBatch": str(2**63)}, {"splitSize": str(2**64)}, {"startingTimestamp": str(2**63)},
                    {"startingOffsets": '{"t":{"0":%d}}' % 2**63}):
        rejects(options, next(iter(options)), "64-bit")


# Topic selection ---------------------------------------------------------------------------------------------------

def test_assign_json_and_native():
    expected = (("a", 0), ("a", 1), ("b", 3))
    assert parse(assign='{"a":[1,0],"b":[3]}').assign == expected
    assert parse(assign={"a": [0, 1], "b": [3]}).assign == expected
    options = parse(assign={"a": [0]})
    assert options.selects("a", 0) and not options.selects("a", 1) and not options.selects("b", 0)
    assert options.selects_topic("a") and not options.selects_topic("b")


@pytest.mark.parametrize("value,fragment", [
    ("a", "no topic-partitions"), ("{", "expected JSON"), ('{"a":0}', "must be a list"),
    ('{"a":["0"]}', "must be a number"), ('{"a":[-1]}', "out of range"), ('{"a":[1.5]}', "not a non-negative"),
    ("{}", "no topic-partitions"), ('{"":[0]}', "non-empty"), ([["a", 0]], "JSON object"),
    ('{"a":[true]}', "not an int"),
    (5, "expected JSON"),
])
def test_assign_malformed(value, fragment):
    rejects({"assign": value}, "'assign'", fragment)


def test_subscribe():
    assert parse(subscribe=" a, b ,,a").subscribe == ("a", "b")
    assert parse(subscribe=["x", "y"]).subscribe == ("x", "y")
    options = parse(subscribe="a,b")
    assert options.selects("a", 5) and not options.selects("c", 0)
    rejects({"subscribe": " , "}, "'subscribe'", "no topics")
    rejects({"subscribe": 3}, "'subscribe'")
    rejects({"subscribe": ["a", 1]}, "'subscribe'")


def test_subscribe_pattern_is_searched_for_and_never_matches_internal_topics():
    """Spark's SubscribePatternStrategy (the admin-based reader, Spark's default since 3.4): ``findFirstIn`` over
    the names Admin.listTopics() returns, which leaves out internal topics."""
    options = parse(subscribePattern=" top.* ")
    assert options.subscribe_pattern == "top.*"
    assert options.selects_topic("topic") and options.selects_topic("my-topic")
    assert parse(subscribePattern="rder").selects_topic("orders")
    assert not parse(subscribePattern="^top.*$").selects_topic("my-topic")
    for internal in ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"):
        assert not parse(subscribePattern=".*").selects_topic(internal)
        assert parse(subscribe=internal).selects_topic(internal)  # named: read (Spark's reader drops them)
        assert parse().selects_topic(internal)  # no selection: every topic on disk
    assert parse(subscribePattern=".*").selects_topic("__my_own")  # only Kafka's internal topics are left out
    # Java-only syntax that Python would read differently is refused, not silently matched otherwise
    rejects({"subscribePattern": "[a-z&&[^b]]rders"}, "'subscribePattern'", "intersection")
    for union in ("^[[o]]rders$", "^[a-z[-]]+$", "[[:alpha:]]+"):  # Java: nested classes; Python: a literal '['
        rejects({"subscribePattern": union}, "'subscribePattern'", "nested class")
    assert parse(subscribePattern="x[\\[]y").selects_topic("x[y")  # an escaped bracket means the same in both
    rejects({"subscribePattern": "\\p{Alpha}+"}, "'subscribePattern'", "not a valid regular expression")
    rejects({"subscribePattern": "  "}, "'subscribePattern'", "non-empty")
    rejects({"subscribePattern": "(unclosed"}, "'subscribePattern'", "not a valid regular expression")


def test_topic_without_a_selection_is_an_error_not_a_read_of_everything():
    rejects({"topic": "orders"}, "'topic'", "sink", "subscribe=")
    rejects({"TOPIC": "orders"}, "'topic'")
    assert parse(topic="orders", subscribe="orders").subscribe == ("orders",)  # ignored, as by Spark's reader


def test_only_one_strategy():
    rejects({"assign": '{"a":[0]}', "subscribe": "a"}, "only one of", "'assign'", "'subscribe'")
    rejects({"subscribe": "a", "SubscribePattern": "a"}, "only one of")


# Offsets -------------------------------------------------------------------------------------------------------------

def test_starting_and_ending_offsets_json():
    options = parse(startingOffsets='{"t":{"0":23,"1":-2},"u":{"0":0}}',
                    endingOffsets={"t": {"0": 50, 1: -1}, "u": {"0": 0}})
    assert options.starting == OffsetLimit("offsets", (("t", 0, 23), ("t", 1, EARLIEST), ("u", 0, 0)),
                                           option="startingOffsets")
    assert options.ending.entries == (("t", 0, 50), ("t", 1, LATEST), ("u", 0, 0))
    assert options.starting.lookup("t", 1) == EARLIEST and options.starting.lookup("t", 9) is None
    assert options.as_dict()["startingOffsets"] == {"t": {"0": 23, "1": -2}, "u": {"0": 0}}


def test_keywords_case_insensitive_and_trimmed():
    options = parse(startingOffsets=" EARLIEST ", endingOffsets="Latest")
    assert (options.starting.kind, options.ending.kind) == ("earliest", "latest")


def test_batch_rules_mirror_spark():
    rejects({"startingOffsets": "latest"}, "'startingOffsets'", "latest", "batch")
    rejects({"startingOffsets": '{"t":{"0":-1}}', "endingOffsets": '{"t":{"0":-1}}'}, "t-0", "latest (-1)")
    rejects({"endingOffsets": "earliest"}, "'endingOffsets'", "earliest", "batch")
    rejects({"endingOffsets": '{"t":{"0":-2}}'}, "t-0", "earliest (-2)")


def test_batch_rules_apply_to_the_effective_limit_only():
    # As Spark: a higher-precedence startingTimestamp makes startingOffsets irrelevant.
    options = parse(startingTimestamp="10", startingOffsets="latest")
    assert options.starting == OffsetLimit("timestamp", timestamp=10, option="startingTimestamp")


@pytest.mark.parametrize("value,fragment", [
    ("nope", "must be 'earliest', 'latest' or a JSON"), ("{bad", "expected JSON"), ('{"t":[1]}', "must be an object"),
    ('{"t":{"x":1}}', "not a non-negative"), ('{"t":{"0":"5"}}', "integer"), ('{"t":{"0":1.5}}', "integer"),
    ('{"t":{"0":-3}}', "-2 (earliest)"), ('{"t":{"0":true}}', "integer"), ('[1]', "JSON like"), ([1], "JSON object"),
    ('{"t":{"0":1},"t ":{}}', None),
])
def test_offsets_malformed(value, fragment):
    if fragment is None:  # a topic name with a trailing space is a different (valid) topic
        parse(startingOffsets=value)
        return
    rejects({"startingOffsets": value}, "'startingOffsets'", fragment)


def test_json_offsets_must_name_same_partitions_and_not_cross():
    rejects({"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":5}}'},
            "same topic-partitions", "t-0", "t-1")
    rejects({"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'}, "greater than", "t-0")
    # -2 / -1 are not compared (Spark's checkStartOffsetNotGreaterThanEndOffset)
    parse(startingOffsets='{"t":{"0":-2}}', endingOffsets='{"t":{"0":-1}}')
    parse(startingOffsets='{"t":{"0":5}}', endingOffsets='{"t":{"0":5}}')
    # different kinds are not cross-checked
    parse(startingOffsets='{"t":{"0":9}}', endingOffsets="latest")


def test_timestamps_and_precedence():
    both = {"startingTimestamp": "1000", "startingOffsetsByTimestamp": '{"t":{"0":5}}',
            "startingOffsets": '{"t":{"0":7}}', "endingTimestamp": 2000,
            "endingOffsetsByTimestamp": {"t": {"0": 9}}, "endingOffsets": '{"t":{"0":8}}'}
    options = ReadOptions.from_options(both)
    assert options.starting == OffsetLimit("timestamp", timestamp=1000, option="startingTimestamp")
    assert options.ending == OffsetLimit("timestamp", timestamp=2000, option="endingTimestamp")
    del both["startingTimestamp"], both["endingTimestamp"]
    options = ReadOptions.from_options(both)
    assert options.starting == OffsetLimit("timestamps", (("t", 0, 5),), option="startingOffsetsByTimestamp")
    assert options.ending == OffsetLimit("timestamps", (("t", 0, 9),), option="endingOffsetsByTimestamp")
    del both["startingOffsetsByTimestamp"], both["endingOffsetsByTimestamp"]
    options = ReadOptions.from_options(both)
    assert options.starting.kind == options.ending.kind == "offsets"
    assert options.as_dict()["startingOffsets"] == {"t": {"0": 7}}


def test_an_offset_the_winning_per_partition_timestamps_would_drop_is_an_error():
    """Spark fails when per-partition timestamps do not list every partition; kafkaseg lets unlisted ones start at
    the default, so an offsets JSON's start for one of them would be dropped without a word."""
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":5}}', "startingOffsets": '{"t":{"1":7}}'},
            "'startingOffsets' gives t-1 a position", "'startingOffsetsByTimestamp'")
    rejects({"endingOffsetsByTimestamp": '{"t":{"0":5}}', "endingOffsets": '{"u":{"0":7}}'}, "u-0")
    # listed in both: the timestamps win, as in Spark; a global timestamp covers every partition
    assert parse(startingOffsetsByTimestamp='{"t":{"0":5,"1":6}}', startingOffsets='{"t":{"1":7}}').starting.kind \
        == "timestamps"
    assert parse(startingTimestamp="5", startingOffsets='{"t":{"1":7}}').starting.kind == "timestamp"


def test_lower_precedence_options_are_still_checked_for_form():
    rejects({"startingTimestamp": "5", "startingOffsetsByTimestamp": "{oops"}, "'startingOffsetsByTimestamp'")


@pytest.mark.parametrize("value,fragment", [
    ("abc", "single long"), ("1.5", "single long"), ("-3", "-1 (latest) or -2 (earliest)"), (True, "single long"), ([1], "single long"),
])
def test_global_timestamp_malformed(value, fragment):
    rejects({"endingTimestamp": value}, "'endingTimestamp'", fragment)


def test_per_partition_timestamps():
    options = parse(startingOffsetsByTimestamp='{"t":{"0":100,"1":200}}')
    assert options.starting.lookup("t", 1) == 200
    assert parse(startingOffsetsByTimestamp='{"t":{"0":-2,"1":-1}}').starting.lookup("t", 0) == -2  # as in Spark
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":-3}}'}, "t-0: -3 is not a timestamp")
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":10}}', "endingOffsetsByTimestamp": '{"t":{"0":5}}'},
            "timestamp 10 is greater than ending timestamp 5")
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":1}}', "endingOffsetsByTimestamp": '{"u":{"0":5}}'},
            "same topic-partitions")


def test_timestamp_strategy():
    assert parse(startingOffsetsByTimestampStrategy="LATEST").starting_offsets_by_timestamp_strategy == "latest"
    assert parse(startingOffsetsByTimestampStrategy="error").starting_offsets_by_timestamp_strategy == "error"
    rejects({"startingOffsetsByTimestampStrategy": "earliest"}, "error, latest")


# Scalars -------------------------------------------------------------------------------------------------------------

BOOLEANS = [("failOnDataLoss", "fail_on_data_loss"), ("includeHeaders", "include_headers"),
            ("verifyCrc", "verify_crc"), ("includeControl", "include_control"),
            ("includeMetadata", "include_metadata")]


@pytest.mark.parametrize("name,attr", BOOLEANS)
def test_booleans(name, attr):
    for text, expected in (("true", True), ("FALSE", False), (" True ", True), (True, True), (False, False)):
        assert getattr(ReadOptions.from_options({name: text}), attr) is expected
    for bad in ("yes", "1", 1, 0, "", "t"):
        rejects({name: bad}, repr(name), "'true' or 'false'")


@pytest.mark.parametrize("name,attr", [("minPartitions", "min_partitions"),
                                       ("maxRecordsPerPartition", "max_records_per_partition"),
                                       ("maxRecordsPerBatch", "max_records_per_batch")])
def test_positive_ints(name, attr):
    assert getattr(ReadOptions.from_options({name: "12"}), attr) == 12
    assert getattr(ReadOptions.from_options({name: 7}), attr) == 7
    for bad in ("0", "-3", 0, "1.5", "ten", True, 2.0, ""):
        rejects({name: bad}, repr(name))
    if name == "minPartitions":
        rejects({name: str(1 << 31)}, "32-bit")


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096), ("128m", 128 * MiB), ("1g", 1 << 30), ("64MiB", 64 * MiB), ("10k", 10240), ("2kb", 2048),
    ("1.5m", 3 * MiB // 2), (" 7 b ", 7), ("1T", 1 << 40),
])
def test_parse_byte_size(text, expected):
    assert parse_byte_size(text) == expected


@pytest.mark.parametrize("name,attr", [("splitSize", "split_size"), ("maxBytesPerBatch", "max_bytes_per_batch"),
                                       ("maxBatchBytes", "max_batch_bytes"),
                                       ("maxDecompressedBatchBytes", "max_decompressed_batch_bytes")])
def test_sizes(name, attr):
    assert getattr(ReadOptions.from_options({name: "3m"}), attr) == 3 * MiB
    assert getattr(ReadOptions.from_options({name: 5000}), attr) == 5000
    for bad in ("0", "-1m", "12x", "m", "", True, 1.5, "1.2.3"):
        rejects({name: bad}, repr(name))


def test_two_gib_limits():
    for name in ("maxBytesPerBatch", "maxBatchBytes"):
        rejects({name: "2g"}, repr(name), "below 2 GiB")
        assert ReadOptions.from_options({name: str((2 << 30) - 1)})
    assert parse(splitSize="4g").split_size == 4 << 30


@pytest.mark.parametrize("name,attr,choices", [
    ("kafka.isolation.level", "isolation_level", ("read_uncommitted", "read_committed")),
    ("upperBound", "upper_bound", ("highWatermark", "logEndOffset")),
    ("onCorruption", "on_corruption", ("fail", "skip")),
    ("replicas", "replicas", ("highestHighWatermark", "all")),
    ("filterPushdown", "filter_pushdown", ("auto", "true", "false")),
])
def test_choices(name, attr, choices):
    for choice in choices:
        assert getattr(ReadOptions.from_options({name: choice.upper()}), attr) == choice
    message = rejects({name: "bogus"}, repr(name), "bogus")
    for choice in choices:
        assert choice in message
    rejects({name: 1}, repr(name))
    assert parse(**{"KAFKA.ISOLATION.LEVEL": "read_committed"}).read_committed


def test_paths():
    assert parse(path="/a").paths == ("/a",)
    assert parse(paths='["/a","/b"]', path="/a").paths == ("/a", "/b")
    assert parse(paths=["/c"]).paths == ("/c",)
    rejects({"paths": "[oops"}, "'paths'")
    rejects({"path": 5}, "'path'")


def test_columns_project_the_schema_in_their_order_and_decide_headers_and_metadata():
    options = parse(columns="offset, timestamp,key")
    assert options.columns == ("offset", "timestamp", "key")
    assert options.schema.names == ["offset", "timestamp", "key"]
    assert not options.include_headers and not options.include_metadata
    assert options.outputs("key") and not options.outputs("value")
    assert parse().outputs("value") and parse().schema.names[:2] == ["key", "value"]
    both = parse(columns=["producerId", "headers"])
    assert both.include_headers and both.include_metadata and both.schema.names == ["producerId", "headers"]
    # agreeing flags are fine; contradicting ones are errors naming both options
    assert parse(columns="headers", includeHeaders="true") == parse(columns="headers")
    rejects({"columns": "offset", "includeHeaders": "true"}, "'includeHeaders'", "'columns'", "does not name")
    rejects({"columns": "segment", "includeMetadata": "false"}, "'includeMetadata'", "names a metadata column")
    rejects({"columns": "offset,ofset"}, "unknown column 'ofset'", "did you mean 'offset'")
    rejects({"columns": "Timestamp"}, "unknown column 'Timestamp'", "did you mean 'timestamp'")
    rejects({"columns": " , "}, "no column names")
    rejects({"columns": "offset,key,offset"}, "'offset' more than once")
    rejects({"columns": 7}, "comma-separated list of column names")
    assert parse(columns="offset").as_dict()["columns"] == ["offset"]
    assert ReadOptions.from_options(parse(columns="value,topic").as_dict()) == parse(columns="value,topic")


# Whole object --------------------------------------------------------------------------------------------------------

def test_pickle_and_as_dict_round_trip():
    options = ReadOptions.from_options({
        "assign": '{"t":[0,1]}', "startingOffsetsByTimestamp": '{"t":{"0":1,"1":2}}', "endingTimestamp": "99",
        "kafka.isolation.level": "read_committed", "splitSize": "1m", "minPartitions": "4",
        "kafka.bootstrap.servers": "h:9092"})
    clone = pickle.loads(pickle.dumps(options))
    assert clone == options and clone.ignored == options.ignored
    described = options.as_dict()
    json.dumps(described)  # JSON-friendly
    assert described["assign"] == {"t": [0, 1]}
    assert described["startingOffsetsByTimestamp"] == {"t": {"0": 1, "1": 2}}
    assert described["endingTimestamp"] == 99
    assert described["minPartitions"] == 4 and described["splitSize"] == MiB
    # as_dict output (minus bookkeeping) parses back to the same options
    described.pop("ignored")
    assert ReadOptions.from_options(described) == options


def test_frozen():
    options = ReadOptions()
    with pytest.raises(Exception):
        options.split_size = 1  # type: ignore[misc]
    assert options.replace(split_size=5).split_size == 5 and options.split_size == 128 * MiB


def test_error_is_a_value_error():
    with pytest.raises(ValueError):
        ReadOptions.from_options({"minPartitions": "x"})


def test_every_tool_takes_the_batches_a_read_takes():
    """verify, describe and lookups refused a valid 70 MiB batch at a 64 MiB storage default that reads
    (maxBatchBytes=128m) accept (found in review): one limit."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.storage.segment import DEFAULT_MAX_BATCH_BYTES

    assert ReadOptions().max_batch_bytes == DEFAULT_MAX_BATCH_BYTES == 128 << 20


def test_an_option_of_thousands_of_digits_is_an_option_error():
    """int() refused it with a raw ValueError (found in review)."""
    from kafkaseg.errors import InvalidOptionError
    from kafkaseg.options import ReadOptions

    with pytest.raises(InvalidOptionError, match="maxRecordsPerBatch.*does not fit a 64-bit integer"):
        ReadOptions.from_options({"maxRecordsPerBatch": "9" * 5000})


def test_numpy_scalars_and_datetimes_are_accepted():
    """Values taken from pandas or NumPy (numpy.int64, numpy.bool_) parse as the Python values they hold, and a
    timestamp option takes a datetime (a pandas Timestamp is one) or an ISO-8601 string, zoneless as UTC."""
    import datetime as dt

    np = pytest.importorskip("numpy")
    assert parse(maxRecordsPerBatch=np.int64(100)).max_records_per_batch == 100
    assert parse(includeHeaders=np.bool_(True)).include_headers is True
    assert parse(splitSize=np.int32(4096)).split_size == 4096
    assert parse(startingTimestamp=np.int64(1_700_000_010_000)) == parse(startingTimestamp=1_700_000_010_000)
    expected = parse(startingTimestamp=1_700_000_010_000)
    moment = dt.datetime.fromtimestamp(1_700_000_010, dt.timezone.utc)
    for value in (moment, moment.astimezone(dt.timezone(dt.timedelta(hours=2))), moment.replace(tzinfo=None),
                  "2023-11-14T22:13:30Z", "2023-11-14T22:13:30", "2023-11-15 00:13:30+02:00", "  1700000010000 "):
        assert parse(startingTimestamp=value) == expected, value
    # a datetime64 of any precision, pandas' usual one (ns) among them: its .item() is then an int of nanoseconds
    for unit in ("s", "ms", "us", "ns"):
        assert parse(startingTimestamp=np.datetime64("2023-11-14T22:13:30", unit)) == expected, unit
    pd = pytest.importorskip("pandas")
    assert parse(startingTimestamp=pd.Timestamp("2023-11-14T22:13:30Z")) == expected
    assert parse(endingTimestamp=pd.Series([pd.Timestamp("2023-11-14T22:13:30")]).values.max()).ending == \
        parse(endingTimestamp=1_700_000_010_000).ending
    for nat in (pd.NaT, np.datetime64("NaT"), np.datetime64("NaT", "ns")):
        with pytest.raises(InvalidOptionError, match="startingTimestamp"):
            parse(startingTimestamp=nat)
    with pytest.raises(InvalidOptionError, match="startingTimestamp.*ISO-8601"):
        parse(startingTimestamp="yesterday")
    with pytest.raises(InvalidOptionError, match="startingTimestamp"):
        parse(startingTimestamp=np.float64(1.5))
    with pytest.raises(InvalidOptionError, match="startingTimestamp"):
        parse(startingTimestamp="1969-12-31T23:59:59Z")  # before the epoch: negative
