"""Read options: parsed once, validated once, shipped (pickled) to wherever a scan runs.

:meth:`ReadOptions.from_options` takes Spark-style options (string values, keys case-insensitive) or the native
Python values the Python API passes (``bool``, ``int``, ``dict``, ``list``) and returns a frozen, picklable
:class:`ReadOptions`. Anything unknown or malformed raises :class:`~kafkaseg.errors.InvalidOptionError` naming the
option and what it accepts.

The options that Spark's own Kafka source knows keep its meaning (``KafkaSourceProvider.scala``,
``JsonUtils.scala``, ``KafkaOffsetRangeCalculator.scala`` in apache/spark ``connector/kafka-0-10-sql``):

* ``assign`` (JSON ``{"t":[0,1]}``), ``subscribe`` (comma list), ``subscribePattern`` (a regex found anywhere in
  the topic name, never matching internal topics, as Spark's admin-based ``SubscribePatternStrategy``): at most one.
  Unlike Spark, which requires one, none given means every topic found on disk (then ``topic``, a sink option
  Spark's reader ignores, is an error rather than a silent read of everything), and internal topics named in
  ``subscribe``/``assign`` are read (Spark's reader drops them).
* ``startingOffsets`` ``"earliest"`` (default) or JSON ``{"t":{"0":23,"1":-2}}`` (-2 earliest; -1 latest is
  rejected for a batch read, as Spark does), ``endingOffsets`` ``"latest"`` (default) or JSON (-1 latest; -2
  earliest rejected). ``startingTimestamp``/``endingTimestamp`` (ms, every partition) and
  ``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp`` (JSON ``{"t":{"0":ts}}``). Precedence per side:
  global timestamp > per-partition timestamps > offsets (the lower-precedence options are still checked for form).
  ``startingOffsetsByTimestampStrategy`` ``error`` (default) | ``latest``: what a starting timestamp with no record
  at or after it resolves to. An ending timestamp with no such record resolves to latest (Spark's rule).
  When both sides are JSON offsets (or both per-partition timestamps) they must name the same partitions and
  start <= end, as in Spark. Unlike Spark, a JSON need not list every partition read: unlisted partitions take the
  default (earliest / latest); a listed partition that is not on disk is an error at planning.
* ``failOnDataLoss`` (true), ``minPartitions``, ``maxRecordsPerPartition``, ``includeHeaders`` (false),
  ``kafka.isolation.level`` ``read_uncommitted`` (default) | ``read_committed``.

Streaming reads (``spark.readStream``, :meth:`ReadOptions.from_options` with ``stream=True``) follow Spark's
``validateStreamOptions``: ``startingOffsets`` defaults to ``"latest"`` and may be ``latest`` (or -1 in its JSON),
the ``ending*`` options are rejected, and ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` (positive longs, min
<= max) and ``maxTriggerDelay`` (Spark's time string, default ``15m``) take effect (batch reads check their form,
then ignore them, as Spark does). ``replicas=all`` is rejected: a stream's offsets name one copy per
topic-partition.

kafkaseg's own: ``upperBound``, ``verifyCrc``, ``includeControl``, ``includeMetadata``, ``onCorruption``,
``splitSize``, ``openCostInBytes``, ``packTopicPartitions``, ``maxRecordsPerBatch``, ``maxBytesPerBatch``,
``maxBatchBytes``, ``maxDecompressedBatchBytes``, ``replicas``, ``filterPushdown``, ``readMode``, ``columns`` (see :class:`ReadOptions`). ``path``/``paths`` are what Spark's ``DataFrameReader.load`` passes.

Spark Kafka options that mean nothing for files are accepted and ignored (:data:`IGNORED_OPTIONS`,
:data:`IGNORED_KAFKA_OPTIONS`), so existing Spark code can switch format with no other edits; ``kafka.*`` consumer
settings that change what Spark would read are rejected with Spark's own explanation
(:data:`REJECTED_KAFKA_OPTIONS`); any other ``kafka.*`` key is rejected as unknown.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

from kafkaseg.errors import InvalidOptionError, did_you_mean

__all__ = [
    "ReadOptions",
    "OffsetLimit",
    "EARLIEST",
    "LATEST",
    "OPTION_NAMES",
    "IGNORED_OPTIONS",
    "INTERNAL_TOPICS",
    "IGNORED_KAFKA_OPTIONS",
    "IGNORED_KAFKA_OPTION_PREFIXES",
    "REJECTED_KAFKA_OPTIONS",
    "parse_byte_size",
    "STREAM_OPTION_NAMES",
]

EARLIEST = -2  # Spark's KafkaOffsetRangeLimit.EARLIEST (Kafka's ListOffsets EARLIEST_TIMESTAMP)
LATEST = -1  # Spark's KafkaOffsetRangeLimit.LATEST

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TWO_GIB = 2 * GiB

# Canonical spelling of every option this module understands (keys are matched case-insensitively).
OPTION_NAMES: tuple[str, ...] = (
    "assign", "subscribe", "subscribePattern",
    "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "failOnDataLoss", "minPartitions", "maxRecordsPerPartition", "includeHeaders", "kafka.isolation.level",
    "upperBound", "verifyCrc", "includeControl", "includeMetadata", "onCorruption", "splitSize", "openCostInBytes",
    "packTopicPartitions",
    "maxRecordsPerBatch", "maxBytesPerBatch", "maxBatchBytes", "maxDecompressedBatchBytes", "replicas",
    "filterPushdown", "readMode", "columns", "timestampUnit", "tieredKeyRing", "remoteLogMetadata",
    "path", "paths",
)

#: Kafka's internal topics (``Topic.INTERNAL_TOPICS``) and its KRaft metadata log, none of which
#: ``Admin.listTopics()`` returns: ``subscribePattern`` never matches them, as in Spark. ``subscribe``/``assign``
#: read them when named (Spark's reader silently returns nothing for them), and no selection reads every topic.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"})

#: Spark Kafka source options that only matter for a live cluster or a stream: accepted, recorded, no effect
#: (the three ``*Trigger*`` ones take effect in a streaming read, :data:`STREAM_OPTION_NAMES`).
IGNORED_OPTIONS: tuple[str, ...] = (
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "groupIdPrefix",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "topic",  # a sink option, which Spark's reader ignores too
)

#: Consumer settings (``kafka.<name>``, from the Java ``ConsumerConfig``) about reaching a cluster or tuning
#: fetches: accepted, recorded, no effect on files. A ``kafka.`` name not listed is an error (a typo is likelier
#: than a setting this list misses).
IGNORED_KAFKA_OPTIONS: tuple[str, ...] = (
    "bootstrap.servers", "security.protocol", "client.id", "group.id", "client.dns.lookup",
    "request.timeout.ms", "default.api.timeout.ms", "session.timeout.ms", "heartbeat.interval.ms",
    "retry.backoff.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "metadata.max.age.ms",
    "connections.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes",
    "fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "max.partition.fetch.bytes", "max.poll.records",
    "max.poll.interval.ms", "check.crcs", "client.rack", "partition.assignment.strategy", "group.instance.id",
    "group.protocol", "group.remote.assignor", "exclude.internal.topics", "allow.auto.create.topics",
    "auto.commit.interval.ms", "retry.backoff.max.ms", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "security.providers", "metric.reporters", "metrics.num.samples",
    "metrics.recording.level", "metrics.sample.window.ms", "enable.metrics.push", "auto.include.jmx.reporter",
    "internal.leave.group.on.close", "internal.throw.on.fetch.stable.offset.unsupported",
    "metadata.recovery.strategy", "metadata.recovery.rebootstrap.trigger.ms",
)
#: Options that only a streaming read parses (Spark's ``KafkaMicroBatchStream``); a batch read ignores them.
STREAM_OPTION_NAMES: tuple[str, ...] = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
_STREAM = {name.lower(): name for name in STREAM_OPTION_NAMES}

#: Prefixes of ``kafka.*`` connection/security settings that are ignored the same way.
IGNORED_KAFKA_OPTION_PREFIXES: tuple[str, ...] = ("ssl.", "sasl.")

#: ``kafka.*`` settings Spark itself rejects, with its reason (``KafkaSourceProvider.validateGeneralOptions``).
REJECTED_KAFKA_OPTIONS: Mapping[str, str] = {
    "auto.offset.reset": "set the option 'startingOffsets' to 'earliest' or a JSON of offsets instead",
    "key.deserializer": "keys are returned as bytes; deserialize them with DataFrame operations",
    "value.deserializer": "values are returned as bytes; deserialize them with DataFrame operations",
    "enable.auto.commit": "a file reader commits nothing",
    "interceptor.classes": "interceptors can modify payloads, so they are not supported",
}

#: Spark's ``DEFAULT_MAX_TRIGGER_DELAY`` ("15m").
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000

_CANONICAL = {name.lower(): name for name in OPTION_NAMES}
_IGNORED = {name.lower(): name for name in IGNORED_OPTIONS}
_IGNORED_KAFKA = {name.lower() for name in IGNORED_KAFKA_OPTIONS}

_CHOICES = {
    "startingOffsetsByTimestampStrategy": ("error", "latest"),
    "kafka.isolation.level": ("read_uncommitted", "read_committed"),
    "upperBound": ("highWatermark", "logEndOffset"),
    "onCorruption": ("fail", "skip"),
    "replicas": ("highestHighWatermark", "all"),
    "filterPushdown": ("auto", "true", "false"),
    "readMode": ("auto", "mmap", "pread"),
    "timestampUnit": ("us", "ms"),
    "remoteLogMetadata": ("use", "ignore"),
}


@dataclass(frozen=True)
class OffsetLimit:
    """One side (start or end) of the offset range to read, before it is resolved against a partition.

    ``kind`` is ``"earliest"``, ``"latest"``, ``"offsets"`` (``entries`` hold ``(topic, partition, offset)`` with
    -2 earliest, -1 latest), ``"timestamp"`` (``timestamp`` applies to every partition) or ``"timestamps"``
    (``entries`` hold ``(topic, partition, timestamp)``). ``option`` is the option it came from, for messages.
    """

    kind: str
    entries: tuple[tuple[str, int, int], ...] = ()
    timestamp: int | None = None
    option: str | None = None

    @functools.cached_property
    def _by_partition(self) -> dict[tuple[str, int], int]:
        found: dict[tuple[str, int], int] = {}
        for topic, partition, value in self.entries:
            found.setdefault((topic, partition), value)  # the first entry for a partition, as a scan would find
        return found

    def lookup(self, topic: str, partition: int) -> int | None:
        """The offset or timestamp given for ``topic``-``partition`` (None when not listed). A dict built once:
        planning asks once per partition, and a walk of the entries made that quadratic (20,000 partitions: 25 s
        per stream trigger)."""
        return self._by_partition.get((topic, partition))

    def partitions(self) -> frozenset[tuple[str, int]]:
        return frozenset((t, p) for t, p, _ in self.entries)

    def describe(self) -> Any:
        """A JSON-friendly form, as the option would be written."""
        if self.kind in ("earliest", "latest"):
            return self.kind
        if self.kind == "timestamp":
            return self.timestamp
        nested: dict[str, dict[str, int]] = {}
        for topic, partition, value in self.entries:
            nested.setdefault(topic, {})[str(partition)] = value
        return nested


@dataclass(frozen=True)
class ReadOptions:
    """Every read option, parsed and validated. Build it with :meth:`from_options`; the defaults are the defaults.

    Topic selection: ``assign`` (sorted ``(topic, partition)`` pairs), ``subscribe`` (topics) or
    ``subscribe_pattern`` (full-match regex); all None = every topic.

    ``starting``/``ending``: the effective :class:`OffsetLimit` of each side after Spark's precedence.
    ``upper_bound``: what ``latest`` means: ``highWatermark`` (from ``replication-offset-checkpoint``; the log end
    offset when the checkpoint lacks the partition, which the plan report records) or ``logEndOffset``. Under
    ``read_committed`` latest is further capped at the last stable offset.
    ``split_size``: target bytes per input partition (slices are cut at ``.index`` entries near it, and small slices
    of one topic-partition are packed up to it). ``open_cost``: what each slice counts on top of its bytes when
    packing (Spark's ``spark.sql.files.openCostInBytes``; :func:`kafkaseg.planning.pack_slices`).
    ``pack_topic_partitions``: whether the units of small topic-partitions (no more bytes than ``open_cost``) share
    input partitions (up to ``split_size``), so a log dir of thousands of nearly empty partitions is not read one
    Spark task per partition.
    ``max_records_per_batch``/``max_bytes_per_batch``: bounds of one output Arrow batch.
    ``max_batch_bytes``: largest on-disk batch accepted (guards against absurd length fields).
    ``max_decompressed_batch_bytes``: largest decompressed batch accepted (decompression-bomb guard).
    ``replicas``: ``highestHighWatermark`` reads one replica per topic-partition, ``all`` reads every copy found.
    ``filter_pushdown``: whether the Spark source lets pushed-down WHERE predicates prune the scan: ``auto`` only
    on PySpark versions that keep a pushed-down plan to its own query (see :mod:`kafkaseg.spark.source`),
    ``true`` always (safe when every query uses its own ``load()``), ``false`` never. No effect outside Spark.
    ``read_mode``: how local segment files are read: ``mmap`` decodes straight from guarded read-only mappings
    (a truncation by a live broker under the mapping is caught and that range reread with ``pread``; see
    :mod:`kafkaseg.storage.fs`), ``pread`` copies each chunk into a buffer first, ``auto`` (default) maps local
    files when the compiled mapping module is available. Other filesystems, and ``mmap`` without that module,
    use positioned reads.
    ``max_offsets_per_trigger``/``min_offsets_per_trigger``/``max_trigger_delay_ms``: a streaming read's admission
    control (Spark's Kafka source names and meaning; see :mod:`kafkaseg.streaming`); always the defaults for a
    batch read.
    ``columns``: the projection (names from :data:`kafkaseg.schema.COLUMN_NAMES`, in output order), or None
    for the whole schema. A projection without ``key``/``value`` skips copying them (the bytes are still walked
    and their CRC checked); ``headers`` and the metadata columns are decoded only when named, so with
    ``columns`` the flags ``include_headers``/``include_metadata`` follow from it.
    ``timestamp_unit``: ``us`` (default) gives ``timestamp[us]`` as Spark stores timestamps, where a Kafka value
    beyond +-9.2e15 ms (a producer that sent nanoseconds) is a corrupt batch; ``ms`` gives ``timestamp[ms]``,
    Kafka's values as they are (the Python API and the CLI; Spark's TimestampType is microseconds).
    ``tiered_key_ring``: the private key files that open tiered-storage copies Aiven's plugin stored encrypted
    (:class:`kafkaseg.storage.encryption.KeyRing`, from ``tieredKeyRing="<id>=<file>,..."`` or a dict), or None.
    ``remote_log_metadata``: ``use`` (default): when the paths hold both tiered-storage copies and
    ``__remote_log_metadata`` partitions, the copies that topic says are dead are left out
    (:mod:`kafkaseg.remote_metadata`); ``ignore``: the copies' leader epochs alone decide (a stale metadata copy).
    ``ignored``: the no-op options that were given (canonical names), for logging.
    ``metadata_ways_on``: no option (set with :meth:`replace`; not compared, not in :meth:`as_dict`): how the
    error for a corrupt ``__remote_log_metadata`` record says to read on, in the words of a tool reading through
    planning with switches of its own (``kafkaseg consume``'s --skip-message-on-error); None: the read options'
    (:data:`kafkaseg.remote_metadata.READ_WAYS_ON`).
    """

    assign: tuple[tuple[str, int], ...] | None = None
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    starting: OffsetLimit = OffsetLimit("earliest", option="startingOffsets")
    ending: OffsetLimit = OffsetLimit("latest", option="endingOffsets")
    starting_offsets_by_timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    isolation_level: str = "read_uncommitted"
    upper_bound: str = "highWatermark"
    verify_crc: bool = True
    include_control: bool = False
    include_metadata: bool = False
    on_corruption: str = "fail"
    split_size: int = 128 * MiB
    open_cost: int = 4 * MiB
    pack_topic_partitions: bool = True
    max_records_per_batch: int = 65536
    max_bytes_per_batch: int = 64 * MiB
    max_batch_bytes: int = 128 * MiB
    max_decompressed_batch_bytes: int = 256 * MiB
    replicas: str = "highestHighWatermark"
    filter_pushdown: str = "auto"
    read_mode: str = "auto"
    timestamp_unit: str = "us"
    paths: tuple[str, ...] = ()
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    columns: tuple[str, ...] | None = None
    tiered_key_ring: Any = None
    remote_log_metadata: str = "use"
    ignored: tuple[str, ...] = field(default=(), compare=False)
    metadata_ways_on: str | None = field(default=None, compare=False)

    # ------------------------------------------------------------------------------------------------------------
    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

    @property
    def schema(self):
        """The output's Arrow schema (:func:`kafkaseg.schema.arrow_schema` for these options)."""
        from kafkaseg.schema import arrow_schema

        return arrow_schema(self.include_headers, self.include_metadata, self.columns, self.timestamp_unit)

    def outputs(self, column: str) -> bool:
        """Whether the output has ``column`` (the decoder skips copying ``key``/``value`` when not)."""
        return self.columns is None or column in self.columns

    def selects_topic(self, topic: str) -> bool:
        """Whether ``assign``/``subscribe``/``subscribePattern`` let ``topic`` through (no selection: every topic)."""
        if self.assign is not None:
            return topic in self._assigned_topics
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.subscribe_pattern is not None:
            # Spark (SubscribePatternStrategy): the regex is searched for anywhere in the name (Scala's findFirstIn)
            # among the topics Admin.listTopics() returns, which leaves out internal topics
            return topic not in INTERNAL_TOPICS and re.search(self.subscribe_pattern, topic) is not None
        return True

    def selects(self, topic: str, partition: int) -> bool:
        """Whether the topic selection lets ``topic``-``partition`` through."""
        if self.assign is not None:
            return (topic, partition) in self._assigned
        return self.selects_topic(topic)

    @functools.cached_property
    def _assigned(self) -> frozenset[tuple[str, int]]:
        return frozenset(self.assign or ())

    @functools.cached_property
    def _assigned_topics(self) -> frozenset[str]:
        return frozenset(t for t, _ in self.assign or ())

    def as_dict(self) -> dict[str, Any]:
        """The effective options under their canonical names, JSON-friendly (for logs and plan reports)."""
        out: dict[str, Any] = {}
        if self.assign is not None:
            nested: dict[str, list[int]] = {}
            for topic, partition in self.assign:
                nested.setdefault(topic, []).append(partition)
            out["assign"] = nested
        if self.subscribe is not None:
            out["subscribe"] = list(self.subscribe)
        if self.subscribe_pattern is not None:
            out["subscribePattern"] = self.subscribe_pattern
        out[self.starting.option or "startingOffsets"] = self.starting.describe()
        out[self.ending.option or "endingOffsets"] = self.ending.describe()
        out.update({
            "startingOffsetsByTimestampStrategy": self.starting_offsets_by_timestamp_strategy,
            "failOnDataLoss": self.fail_on_data_loss,
            "minPartitions": self.min_partitions,
            "maxRecordsPerPartition": self.max_records_per_partition,
            "includeHeaders": self.include_headers,
            "kafka.isolation.level": self.isolation_level,
            "upperBound": self.upper_bound,
            "verifyCrc": self.verify_crc,
            "includeControl": self.include_control,
            "includeMetadata": self.include_metadata,
            "onCorruption": self.on_corruption,
            "splitSize": self.split_size,
            "openCostInBytes": self.open_cost,
            "packTopicPartitions": self.pack_topic_partitions,
            "maxRecordsPerBatch": self.max_records_per_batch,
            "maxBytesPerBatch": self.max_bytes_per_batch,
            "maxBatchBytes": self.max_batch_bytes,
            "maxDecompressedBatchBytes": self.max_decompressed_batch_bytes,
            "replicas": self.replicas,
            "filterPushdown": self.filter_pushdown,
            "readMode": self.read_mode,
            "timestampUnit": self.timestamp_unit,
            "remoteLogMetadata": self.remote_log_metadata,
        })
        if self.paths:  # masked: this dict goes into plan reports, which are files other users may read
            from kafkaseg.storage.fs import redact

            out["paths"] = [redact(p) for p in self.paths]
        if self.max_offsets_per_trigger is not None:
            out["maxOffsetsPerTrigger"] = self.max_offsets_per_trigger
        if self.min_offsets_per_trigger is not None:
            out["minOffsetsPerTrigger"] = self.min_offsets_per_trigger
            out["maxTriggerDelay"] = f"{self.max_trigger_delay_ms}ms"
        if self.columns is not None:
            out["columns"] = list(self.columns)
        if self.tiered_key_ring is not None:  # the key files' names, never their contents
            from kafkaseg.storage.fs import redact

            out["tieredKeyRing"] = ",".join(f"{key_id}={redact(path)}" for key_id, path in self.tiered_key_ring.files)
        if self.ignored:
            out["ignored"] = list(self.ignored)
        return out

    def replace(self, **changes: Any) -> "ReadOptions":
        """A copy with some fields changed (no re-validation: callers pass already valid values)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------------------------------------------------
    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None, *, stream: bool = False,
                     path_options: bool = True) -> "ReadOptions":
        """Parse and validate ``options`` (keys case-insensitive; values strings or native Python values) for a
        batch read, or for a streaming read with ``stream=True`` (see the module docstring).

        ``path_options=False`` is for callers that take the paths as an argument (the Python API): an option
        named ``path``/``paths`` is refused saying so, and an unknown option's list of accepted ones leaves them
        out.

        Raises :class:`InvalidOptionError` for an unknown key (suggesting the closest valid one), a malformed
        value, two keys that differ only in case with different values, or a combination Spark rejects.
        """
        given: dict[str, tuple[str, Any]] = {}  # canonical name -> (key as given, value)
        ignored: list[str] = []
        stream_only: dict[str, Any] = {}  # a batch read's stream options: ignored, but their form checked
        for key, value in (options or {}).items():
            if value is None:
                continue
            value = _native(value)
            if not isinstance(key, str):
                raise InvalidOptionError(f"option names must be strings, got {key!r}")
            if stream and key.strip().lower() in _STREAM:
                canonical = _STREAM[key.strip().lower()]
            else:
                canonical = _canonical_name(key.strip(), path_options=path_options)
            if canonical is None:
                ignored.append(_ignored_name(key.strip()))
                if key.strip().lower() in _STREAM:
                    stream_only[_STREAM[key.strip().lower()]] = value
                continue
            if canonical in given and given[canonical][1] != value:
                raise InvalidOptionError(
                    f"option {canonical!r} given twice with different values "
                    f"({given[canonical][0]!r}={given[canonical][1]!r}, {key!r}={value!r}); option names are "
                    "case-insensitive")
            given[canonical] = (key, value)
        # None means "not given" (the Python API passes optional keyword arguments straight through).
        raw = {name: value for name, (_, value) in given.items() if value is not None}
        kwargs: dict[str, Any] = {"ignored": tuple(sorted(set(ignored)))}

        # Topic selection -----------------------------------------------------------------------------------------
        strategies = [name for name in ("assign", "subscribe", "subscribePattern") if name in raw]
        if len(strategies) > 1:
            raise InvalidOptionError(
                f"only one of the options 'assign', 'subscribe', 'subscribePattern' can be given, got "
                f"{', '.join(repr(s) for s in strategies)}")
        if not strategies and "topic" in ignored:
            # Spark's reader requires a selection and so never reaches `topic`; here no selection means every
            # topic on disk, which would silently read far more than the user who wrote topic=... meant.
            raise InvalidOptionError(
                "option 'topic' is a Kafka sink (write) option, which Spark's Kafka reader ignores; to read a topic "
                "give subscribe=<topic> (or assign / subscribePattern). Without any of them kafkaseg reads every "
                "topic on disk")
        if "assign" in raw:
            kwargs["assign"] = _parse_assign(raw["assign"])
        if "subscribe" in raw:
            kwargs["subscribe"] = _parse_subscribe(raw["subscribe"])
        if "subscribePattern" in raw:
            kwargs["subscribe_pattern"] = _parse_pattern(raw["subscribePattern"])

        # Offsets -------------------------------------------------------------------------------------------------
        if "startingOffsetsByTimestampStrategy" in raw:
            kwargs["starting_offsets_by_timestamp_strategy"] = _parse_choice(
                "startingOffsetsByTimestampStrategy", raw["startingOffsetsByTimestampStrategy"])
        starting = _offset_limit(raw, "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets",
                                 default="latest" if stream else "earliest")
        ending = _offset_limit(raw, "endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets",
                               default="latest")
        if stream:
            kwargs.update(_stream_options(raw))  # Spark's validateStreamOptions (rejects the ending options)
        else:
            _check_batch_limits(starting, ending)
            _stream_options(stream_only)  # malformed is an error, also where they mean nothing
        kwargs["starting"] = starting
        kwargs["ending"] = ending

        # Scalars ---------------------------------------------------------------------------------------------------
        for name, attr in (("failOnDataLoss", "fail_on_data_loss"), ("includeHeaders", "include_headers"),
                           ("verifyCrc", "verify_crc"), ("includeControl", "include_control"),
                           ("includeMetadata", "include_metadata"),
                           ("packTopicPartitions", "pack_topic_partitions")):
            if name in raw:
                kwargs[attr] = _parse_bool(name, raw[name])
        for name, attr in (("minPartitions", "min_partitions"),
                           ("maxRecordsPerPartition", "max_records_per_partition"),
                           ("maxRecordsPerBatch", "max_records_per_batch")):
            if name in raw:
                kwargs[attr] = _parse_positive_int(name, raw[name])
        if "minPartitions" in raw and kwargs["min_partitions"] >= 1 << 31:
            raise InvalidOptionError(
                f"option 'minPartitions' must be a positive 32-bit int, got {raw['minPartitions']!r}")
        for name, attr, limit in (("splitSize", "split_size", None),
                                  ("maxBytesPerBatch", "max_bytes_per_batch", TWO_GIB),
                                  ("maxBatchBytes", "max_batch_bytes", TWO_GIB),
                                  ("maxDecompressedBatchBytes", "max_decompressed_batch_bytes", None)):
            if name in raw:
                kwargs[attr] = _parse_size_option(name, raw[name], limit)
        if "openCostInBytes" in raw:
            kwargs["open_cost"] = _parse_size_option("openCostInBytes", raw["openCostInBytes"], None, allow_zero=True)
        for name, attr in (("kafka.isolation.level", "isolation_level"), ("upperBound", "upper_bound"),
                           ("onCorruption", "on_corruption"), ("replicas", "replicas"),
                           ("filterPushdown", "filter_pushdown"), ("readMode", "read_mode"),
                           ("timestampUnit", "timestamp_unit"), ("remoteLogMetadata", "remote_log_metadata")):
            if name in raw:
                kwargs[attr] = _parse_choice(name, raw[name])
        paths: list[str] = []
        if "path" in raw:
            paths.extend(_parse_paths("path", raw["path"]))
        if "paths" in raw:
            paths.extend(_parse_paths("paths", raw["paths"]))
        kwargs["paths"] = tuple(dict.fromkeys(paths))
        if "columns" in raw:
            kwargs.update(_parse_columns(raw["columns"], raw))
        if "tieredKeyRing" in raw:
            kwargs["tiered_key_ring"] = _parse_key_ring(raw["tieredKeyRing"])
        if stream and kwargs.get("replicas") == "all":
            raise InvalidOptionError(
                "option 'replicas' can't be 'all' for a streaming read: a stream's offsets follow one copy of each "
                "topic-partition (use the default highestHighWatermark)")
        return cls(**kwargs)


# --------------------------------------------------------------------------------------------------------------------
# Names

def _canonical_name(key: str, *, path_options: bool = True) -> str | None:
    """The canonical option for ``key``; None when it is an accepted no-op; raises for anything else (with
    ``path_options=False``, also for ``path``/``paths``: see :meth:`ReadOptions.from_options`)."""
    lowered = key.lower()
    names = OPTION_NAMES if path_options else tuple(n for n in OPTION_NAMES if n not in ("path", "paths"))
    if not path_options and lowered in ("path", "paths"):
        raise InvalidOptionError(f"option {key!r} is for Spark's load(); give the paths to read as the first "
                                 "argument (a path or a list of paths)")
    if lowered in _CANONICAL:
        return _CANONICAL[lowered]
    if lowered in _IGNORED:
        return None
    if lowered.startswith("kafka."):
        setting = lowered[len("kafka."):]
        if setting in REJECTED_KAFKA_OPTIONS:
            raise InvalidOptionError(
                f"Kafka option 'kafka.{setting}' is not supported: {REJECTED_KAFKA_OPTIONS[setting]}")
        if setting in _IGNORED_KAFKA or setting.startswith(IGNORED_KAFKA_OPTION_PREFIXES):
            return None
        raise InvalidOptionError(
            f"unknown option {key!r}: the only consumer setting with a meaning for files is "
            f"'kafka.isolation.level' (read_uncommitted|read_committed); connection settings "
            f"({', '.join('kafka.' + k for k in IGNORED_KAFKA_OPTIONS[:3])}, kafka.ssl.*, kafka.sasl.*, ...) are "
            "accepted and ignored")
    candidates = list(names) + list(IGNORED_OPTIONS)
    close = difflib.get_close_matches(lowered, [c.lower() for c in candidates], n=1, cutoff=0.6)
    hint = "."
    if close:
        suggestion = next(c for c in candidates if c.lower() == close[0])
        hint = f"; did you mean {suggestion!r}?"
    raise InvalidOptionError(
        f"unknown option {key!r}{hint} Accepted options: {', '.join(names)} (case-insensitive); "
        f"accepted and ignored: {', '.join(IGNORED_OPTIONS)}")


def _ignored_name(key: str) -> str:
    lowered = key.lower()
    if lowered in _IGNORED:
        return _IGNORED[lowered]
    return "kafka." + lowered[len("kafka."):]


# --------------------------------------------------------------------------------------------------------------------
# Values

def _native(value: Any) -> Any:
    """A NumPy scalar (a value taken from pandas or NumPy: ``numpy.int64``, ``numpy.bool_``) as the Python value
    it holds, so it parses as that; anything else as it is. NumPy is only consulted when it is imported."""
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        if isinstance(value, numpy.datetime64):  # pandas' datetime64[ns] .item() is an int of nanoseconds
            moment = value.astype("datetime64[us]").item()
            return moment if moment is not None else value  # NaT: refused by the option as it is
        return value.item()
    return value


_TRUE = {"true"}
_FALSE = {"false"}


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise InvalidOptionError(f"option {name!r} must be 'true' or 'false', got {value!r}")


_INT64_MAX = 2**63 - 1


def _int64(name: str, number: int, value: Any) -> int:
    """``number``, or an error naming the option when it does not fit Spark's (and the decoder's) 64-bit long."""
    if not -_INT64_MAX - 1 <= number <= _INT64_MAX:
        raise InvalidOptionError(f"option {name!r}: {value!r} does not fit a 64-bit integer")
    return number


def _parse_int(name: str, value: Any, what: str = "an integer") -> int:
    if isinstance(value, bool):
        raise InvalidOptionError(f"option {name!r} must be {what}, got {value!r}")
    if isinstance(value, int):
        return _int64(name, value, value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        from kafkaseg.storage.checkpoints import parse_java_integer

        number = parse_java_integer(value.strip())
        if number is None:
            raise InvalidOptionError(f"option {name!r}: {value.strip()[:40]!r} does not fit a 64-bit integer")
        return number
    raise InvalidOptionError(f"option {name!r} must be {what}, got {value!r}")


def _parse_positive_int(name: str, value: Any) -> int:
    number = _parse_int(name, value, "a positive integer")
    if number <= 0:
        raise InvalidOptionError(f"option {name!r} must be positive, got {value!r}")
    return number


def _parse_choice(name: str, value: Any) -> str:
    choices = _CHOICES[name]
    if isinstance(value, str):
        lowered = value.strip().lower()
        for choice in choices:
            if choice.lower() == lowered:
                return choice
    raise InvalidOptionError(f"option {name!r} must be one of {', '.join(choices)}, got {value!r}")


_SIZE_UNITS = {"": 1, "b": 1, "k": KiB, "kb": KiB, "kib": KiB, "m": MiB, "mb": MiB, "mib": MiB,
               "g": GiB, "gb": GiB, "gib": GiB, "t": 1024 * GiB, "tb": 1024 * GiB, "tib": 1024 * GiB}


def parse_byte_size(text: str) -> int:
    """``"4096"``, ``"128k"``, ``"128m"``, ``"1g"``, ``"64MiB"``, ``"1.5g"`` -> bytes (binary units, as Spark's
    ``byteStringAsBytes``). Raises ValueError for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(text)
    number, unit = match.group(1), _SIZE_UNITS[match.group(2).lower()]
    if "." in number:
        whole, frac = number.split(".")
        return int(whole) * unit + (int(frac) * unit) // (10 ** len(frac))
    return int(number) * unit


def _parse_size_option(name: str, value: Any, limit: int | None, allow_zero: bool = False) -> int:
    accepted = "a byte count such as 4096, '128k', '128m' or '1g'"
    if isinstance(value, bool):
        raise InvalidOptionError(f"option {name!r} must be {accepted}, got {value!r}")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str):
        try:
            size = parse_byte_size(value)
        except ValueError:
            raise InvalidOptionError(f"option {name!r} must be {accepted}, got {value!r}") from None
    else:
        raise InvalidOptionError(f"option {name!r} must be {accepted}, got {value!r}")
    if size < 0 or (size == 0 and not allow_zero):
        raise InvalidOptionError(f"option {name!r} must be {'0 or more' if allow_zero else 'positive'}, got {value!r}")
    _int64(name, size, value)
    if limit is not None and size >= limit:
        raise InvalidOptionError(f"option {name!r} must be below 2 GiB ({limit} bytes), got {value!r}")
    return size


def _load_json(name: str, value: Any, example: str) -> Any:
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as err:
            raise InvalidOptionError(f"option {name!r}: expected JSON like {example}, got {value!r} ({err})") from err
    raise InvalidOptionError(f"option {name!r}: expected JSON like {example}, got {value!r}")


def _as_partition(name: str, topic: str, raw: Any, example: str) -> int:
    if isinstance(raw, bool):
        raise InvalidOptionError(f"option {name!r}: partition {raw!r} of topic {topic!r} is not an int; "
                                 f"expected e.g. {example}")
    if isinstance(raw, int):
        partition = raw
    elif isinstance(raw, str) and re.fullmatch(r"\s*\d+\s*", raw):
        partition = int(raw)
    else:
        raise InvalidOptionError(f"option {name!r}: partition {raw!r} of topic {topic!r} is not a non-negative "
                                 f"int; expected e.g. {example}")
    if partition < 0 or partition >= 1 << 31:
        raise InvalidOptionError(f"option {name!r}: partition {raw!r} of topic {topic!r} is out of range")
    return partition


def _check_topic(name: str, topic: Any, example: str) -> str:
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidOptionError(f"option {name!r}: topic {topic!r} is not a non-empty string; expected e.g. {example}")
    return topic


def _parse_assign(value: Any) -> tuple[tuple[str, int], ...]:
    example = '{"topicA":[0,1],"topicB":[0,1]}'
    if isinstance(value, str) and not value.strip().startswith("{"):
        raise InvalidOptionError(f"option 'assign': no topic-partitions to assign, expected JSON like {example}, "
                                 f"got {value!r}")
    parsed = _load_json("assign", value, example)
    if not isinstance(parsed, dict):
        raise InvalidOptionError(f"option 'assign': expected a JSON object like {example}, got {value!r}")
    pairs = set()
    for topic, partitions in parsed.items():
        _check_topic("assign", topic, example)
        if not isinstance(partitions, (list, tuple)):
            raise InvalidOptionError(f"option 'assign': partitions of topic {topic!r} must be a list, e.g. {example}")
        for raw in partitions:
            if isinstance(raw, str):  # Jackson would not turn "0" into an Int inside a list either
                raise InvalidOptionError(f"option 'assign': partition {raw!r} of topic {topic!r} must be a number")
            pairs.add((topic, _as_partition("assign", topic, raw, example)))
    if not pairs:
        raise InvalidOptionError(f"option 'assign': no topic-partitions to assign in {value!r}")
    return tuple(sorted(pairs))


def _parse_subscribe(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        topics = [t.strip() for t in value.split(",")]
    elif isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(t, str) for t in value):
        topics = [t.strip() for t in value]
    else:
        raise InvalidOptionError(f"option 'subscribe' must be a comma-separated list of topics, got {value!r}")
    topics = [t for t in topics if t]
    if not topics:
        raise InvalidOptionError(f"option 'subscribe': no topics to subscribe to in {value!r}")
    return tuple(dict.fromkeys(topics))


def _parse_columns(value: Any, raw: Mapping[str, Any]) -> dict[str, Any]:
    """``columns``: a comma list (or a list) of output column names, each once. The headers and metadata flags
    follow from it; an ``includeHeaders``/``includeMetadata`` that contradicts it is an error rather than a
    silent winner."""
    from kafkaseg.schema import COLUMN_NAMES, HEADERS_FIELD, METADATA_FIELDS

    if isinstance(value, str):
        names = [c.strip() for c in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(c, str) for c in value):
        names = [c.strip() for c in value]
    else:
        raise InvalidOptionError(f"option 'columns' must be a comma-separated list of column names, got {value!r}")
    names = [c for c in names if c]
    if not names:
        raise InvalidOptionError(f"option 'columns': no column names in {value!r} (one or more of "
                                 f"{', '.join(COLUMN_NAMES)})")
    for name in names:
        if name not in COLUMN_NAMES:
            raise InvalidOptionError(f"option 'columns': unknown column {name!r}{did_you_mean(name, COLUMN_NAMES)}; "
                                     f"the columns are {', '.join(COLUMN_NAMES)}")
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise InvalidOptionError(f"option 'columns' names {', '.join(map(repr, repeated))} more than once")
    metadata = {f.name for f in METADATA_FIELDS}
    derived = {"include_headers": HEADERS_FIELD.name in names,
               "include_metadata": any(c in metadata for c in names)}
    for option, attr, what in (("includeHeaders", "include_headers", "'headers'"),
                               ("includeMetadata", "include_metadata", "a metadata column")):
        if option in raw and _parse_bool(option, raw[option]) != derived[attr]:
            raise InvalidOptionError(
                f"option {option!r}={raw[option]!r} contradicts option 'columns', which "
                f"{'names' if derived[attr] else 'does not name'} {what}; with 'columns' leave {option!r} out")
    return {"columns": tuple(names), **derived}


def _parse_pattern(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidOptionError(f"option 'subscribePattern' must be a non-empty regular expression, got {value!r}")
    pattern = value.strip()
    if re.search(r"\[[^\]]*&&", pattern):
        # Java's character-class intersection ([a-z&&[^b]]), which Spark's regex understands and Python's reads as
        # literal characters: refused rather than silently matching other topics
        raise InvalidOptionError(f"option 'subscribePattern': {pattern!r} uses Java's character-class intersection "
                                 "(&&), which kafkaseg's Python regular expressions do not have; write the class out")
    if _nested_class(pattern):
        # Java reads [a-z[-]] as the union of two classes; Python as the class {a-z, [, -} then a literal ']'
        raise InvalidOptionError(f"option 'subscribePattern': {pattern!r} has a '[' inside a character class, which "
                                 "Java (Spark) reads as a nested class (a union) and Python as a literal '['; write "
                                 "the union as one class, or escape the bracket (\\[)")
    try:
        with warnings.catch_warnings():  # Python's hints about set operators Java does not have (--, ||, ~~)
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern)
    except re.error as err:
        raise InvalidOptionError(f"option 'subscribePattern': {pattern!r} is not a valid regular expression "
                                 f"({err})") from err
    return pattern


def _nested_class(pattern: str) -> bool:
    """Whether an unescaped '[' appears inside a character class: a nested class in Java, a literal in Python.
    (A ']' right after the opening '[' or '[^' is a literal in Python and is stepped over.)"""
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if not in_class:
            if c == "[":
                in_class = True
                i += 1
                if i < len(pattern) and pattern[i] == "^":
                    i += 1
                if i < len(pattern) and pattern[i] == "]":  # a leading ']' is a literal (Python)
                    i += 1
                continue
        elif c == "[":
            return True
        elif c == "]":
            in_class = False
        i += 1
    return False


def datetime_ms(value: Any) -> int | None:
    """Epoch milliseconds of a ``datetime`` (a pandas ``Timestamp`` is one) or an ISO-8601 date-time string
    (``2024-05-01T12:00:00Z``, ``2024-05-01 12:00:00+02:00``); one without a zone is UTC, as the CLI's ``--time``
    takes it. None for anything else."""
    from datetime import datetime, timezone

    if isinstance(value, str):
        raw = value.strip()
        try:
            value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw[-1:] in "Zz" and raw else raw)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    try:
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return int(round(value.timestamp() * 1000))
    except (ValueError, OverflowError, OSError):  # pandas' NaT is a datetime that is no time
        return None


def zoneless_datetime(value: Any) -> bool:
    """Whether ``value`` is an ISO-8601 date-time string without a zone (which :func:`datetime_ms` takes as UTC)."""
    from datetime import datetime

    if not isinstance(value, str) or not value.strip() or value.strip()[-1:] in "Zz":
        return False
    try:
        return datetime.fromisoformat(value.strip()).tzinfo is None
    except ValueError:
        return False


def _parse_timestamp(name: str, value: Any) -> int:
    expected = "a single long value (ms since the epoch), a datetime or an ISO-8601 date-time"
    if isinstance(value, bool):
        raise InvalidOptionError(f"option {name!r}: expected {expected}, got {value!r}")
    if isinstance(value, int):
        timestamp = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        timestamp = int(value.strip())
    else:
        timestamp = datetime_ms(value)
        if timestamp is None:
            raise InvalidOptionError(f"option {name!r}: expected {expected}, got {value!r}")
    _check_timestamp(name, timestamp, "")
    return _int64(name, timestamp, value)


def _check_timestamp(name: str, timestamp: int, where: str) -> None:
    """A timestamp option's value: ms since the epoch, or -1/-2, which Spark's Kafka source passes to Kafka's
    ListOffsets as they are (``OffsetSpec.forTimestamp``): LATEST_TIMESTAMP and EARLIEST_TIMESTAMP there, resolved by
    planning as ``latest`` and ``earliest``. The other negative values ListOffsets defines are refused."""
    if timestamp < EARLIEST:
        raise InvalidOptionError(
            f"option {name!r}: {where}{timestamp} is not a timestamp (ms >= 0), -1 (latest) or -2 (earliest); "
            "Spark's Kafka source passes it to Kafka's ListOffsets as it is (-3 max-timestamp, -4 earliest-local, "
            f"-5 latest-tiered), which a read here does not take: `kafkaseg offsets --time {timestamp}` answers it, "
            "to give as startingOffsets or endingOffsets")


def _parse_partition_values(name: str, value: Any, example: str, *,
                            timestamps: bool) -> tuple[tuple[str, int, int], ...]:
    parsed = _load_json(name, value, example)
    if not isinstance(parsed, dict):
        raise InvalidOptionError(f"option {name!r}: expected a JSON object like {example}, got {value!r}")
    entries = {}
    for topic, per_partition in parsed.items():
        _check_topic(name, topic, example)
        if not timestamps and topic.startswith("@"):
            continue  # a kafkaseg stream's offsets pasted from its checkpoint: the ids and epochs it records there
        if not isinstance(per_partition, dict):
            raise InvalidOptionError(f"option {name!r}: value of topic {topic!r} must be an object of partition -> "
                                     f"{'timestamp' if timestamps else 'offset'}, e.g. {example}")
        for raw_partition, raw_value in per_partition.items():
            partition = _as_partition(name, topic, raw_partition, example)
            if isinstance(raw_value, bool) or not isinstance(raw_value, int):
                raise InvalidOptionError(f"option {name!r}: {topic}-{partition} must map to an integer, got "
                                         f"{raw_value!r}; expected e.g. {example}")
            if timestamps:
                _check_timestamp(name, raw_value, f"{topic}-{partition}: ")
            if not timestamps and raw_value < EARLIEST:
                raise InvalidOptionError(f"option {name!r}: offset of {topic}-{partition} must be >= 0, -1 (latest) "
                                         f"or -2 (earliest), got {raw_value}")
            _int64(name, raw_value, f"{topic}-{partition}: {raw_value}")
            if (topic, partition) in entries and entries[(topic, partition)] != raw_value:
                raise InvalidOptionError(f"option {name!r}: {topic}-{partition} given twice")
            entries[(topic, partition)] = raw_value
    return tuple(sorted((t, p, v) for (t, p), v in entries.items()))


def _offset_limit(raw: Mapping[str, Any], global_ts: str, by_ts: str, offsets: str, *, default: str) -> OffsetLimit:
    """Spark's ``getKafkaOffsetRangeLimit``: global timestamp > per-partition timestamps > offsets > default.
    Every given option is parsed (so a malformed one is reported even when a higher-precedence one wins)."""
    candidates: list[OffsetLimit] = []
    if global_ts in raw:
        candidates.append(OffsetLimit("timestamp", timestamp=_parse_timestamp(global_ts, raw[global_ts]),
                                      option=global_ts))
    if by_ts in raw:
        example = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
        candidates.append(OffsetLimit("timestamps", _parse_partition_values(by_ts, raw[by_ts], example,
                                                                            timestamps=True), option=by_ts))
    if offsets in raw:
        value = raw[offsets]
        if isinstance(value, str) and value.strip().lower() in ("earliest", "latest"):
            candidates.append(OffsetLimit(value.strip().lower(), option=offsets))
        else:
            if isinstance(value, str) and not value.strip().startswith("{"):
                raise InvalidOptionError(
                    f"option {offsets!r} must be 'earliest', 'latest' or a JSON like "
                    f'{{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {value!r}')
            example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
            candidates.append(OffsetLimit("offsets", _parse_partition_values(offsets, value, example,
                                                                             timestamps=False), option=offsets))
    if len(candidates) > 1 and candidates[0].kind == "timestamps":
        # Spark requires the per-partition timestamps to name every partition read, so its precedence never
        # decides a partition's start by default; kafkaseg lets unlisted partitions take the default, which would
        # silently drop the start an offsets JSON gives them
        listed = candidates[0].partitions()
        dropped = sorted(p for lower in candidates[1:] if lower.kind == "offsets" for p in lower.partitions()
                         if p not in listed)
        if dropped:
            names = ", ".join(f"{t}-{p}" for t, p in dropped)
            raise InvalidOptionError(
                f"option {offsets!r} gives {names} a position that option {by_ts!r} (which takes precedence, as in "
                f"Spark) does not list, so it would be ignored there: list those partitions in {by_ts!r}, or "
                f"leave {offsets!r} out")
    return candidates[0] if candidates else OffsetLimit(default, option=offsets)


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    """Spark's ``validateBatchOptions``: a batch read cannot start at latest nor end at earliest."""
    if starting.kind == "latest":
        raise InvalidOptionError(
            "option 'startingOffsets' can't be 'latest' for a batch read (accepted: 'earliest' or a JSON "
            'like {"topicA":{"0":23,"1":-2}} with -2 = earliest)')
    if starting.kind == "offsets":
        for topic, partition, value in starting.entries:
            if value == LATEST:
                raise InvalidOptionError(
                    f"option 'startingOffsets' for {topic}-{partition} can't be latest (-1) for a batch read")
    if ending.kind == "earliest":
        raise InvalidOptionError(
            "option 'endingOffsets' can't be 'earliest' for a batch read (accepted: 'latest' or a JSON "
            'like {"topicA":{"0":23,"1":-1}} with -1 = latest)')
    if ending.kind == "offsets":
        for topic, partition, value in ending.entries:
            if value == EARLIEST:
                raise InvalidOptionError(
                    f"option 'endingOffsets' for {topic}-{partition} can't be earliest (-2) for a batch read")
    _check_limit_validity(starting, ending)


def _stream_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Spark's ``validateStreamOptions`` and ``KafkaMicroBatchStream``'s admission-control options."""
    for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        if name in raw:
            raise InvalidOptionError(f"option {name!r} is not valid in streaming queries (a stream reads until it "
                                     "is stopped; use Trigger.AvailableNow to stop at the offsets present when it "
                                     "starts)")
    out: dict[str, Any] = {}
    if "maxOffsetsPerTrigger" in raw:
        out["max_offsets_per_trigger"] = _parse_positive_int("maxOffsetsPerTrigger", raw["maxOffsetsPerTrigger"])
    if "minOffsetsPerTrigger" in raw:
        out["min_offsets_per_trigger"] = _parse_positive_int("minOffsetsPerTrigger", raw["minOffsetsPerTrigger"])
    if "maxTriggerDelay" in raw:
        out["max_trigger_delay_ms"] = _parse_duration_ms("maxTriggerDelay", raw["maxTriggerDelay"])
    low, high = out.get("min_offsets_per_trigger"), out.get("max_offsets_per_trigger")
    if low is not None and high is not None and low > high:
        raise InvalidOptionError(f"the value of minOffsetsPerTrigger ({low}) is higher than the "
                                 f"maxOffsetsPerTrigger ({high})")
    return out


# Spark's JavaUtils.timeStringAsMs suffixes (a bare number is milliseconds).
_DURATION_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _parse_duration_ms(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", value.lower())
        if match and (match.group(2) in _DURATION_MS or match.group(2) == ""):
            return int(int(match.group(1)) * _DURATION_MS.get(match.group(2), 1))
    raise InvalidOptionError(f"option {name!r} must be a duration like '15m', '30s', '500ms' or a number of "
                             f"milliseconds, got {value!r}")


def _check_limit_validity(starting: OffsetLimit, ending: OffsetLimit) -> None:
    """Spark's ``checkOffsetLimitValidity``: same partitions on both sides, start <= end where both are concrete."""
    if starting.kind != ending.kind or starting.kind not in ("offsets", "timestamps"):
        return
    if starting.partitions() != ending.partitions():
        fmt = lambda s: ", ".join(f"{t}-{p}" for t, p in sorted(s))  # noqa: E731
        raise InvalidOptionError(
            f"options {starting.option!r} and {ending.option!r} must name the same topic-partitions; "
            f"{starting.option!r} has [{fmt(starting.partitions())}], {ending.option!r} has "
            f"[{fmt(ending.partitions())}]")
    for topic, partition, start in starting.entries:
        end = ending.lookup(topic, partition)
        if start >= 0 and end is not None and end >= 0 and start > end:
            what = "offset" if starting.kind == "offsets" else "timestamp"
            raise InvalidOptionError(
                f"starting {what} {start} is greater than ending {what} {end} for {topic}-{partition} "
                f"({starting.option!r}, {ending.option!r})")


def _parse_key_ring(value: Any):
    from kafkaseg.storage.encryption import parse_key_ring

    if isinstance(value, Mapping):
        value = ",".join(f"{key_id}={path}" for key_id, path in value.items())
    if not isinstance(value, str) or not value.strip():
        raise InvalidOptionError(f"option 'tieredKeyRing' must be '<key pair id>=<private key file>,...', got "
                                 f"{value!r}")
    return parse_key_ring(value, "tieredKeyRing")


def _parse_paths(name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        text = value.strip()
        if name == "paths" and text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError as err:
                raise InvalidOptionError(f"option 'paths' must be a JSON list of strings, got {value!r}") from err
        else:
            return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(p, str) for p in value):
        return list(value)
    if hasattr(value, "__fspath__"):
        return [str(value.__fspath__())]
    raise InvalidOptionError(f"option {name!r} must be a path or a list of paths, got {value!r}")
