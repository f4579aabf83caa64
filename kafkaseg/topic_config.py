"""The retention and compaction settings of a topic, as a broker would resolve them, with where each value came from.

Kafka's ``LogConfig`` (``storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java``) defines the
topic-level settings, their defaults and their valid ranges; ``ServerTopicConfigSynonyms``
(``server-common/.../server/config/ServerTopicConfigSynonyms.java``) maps each to the broker-level default that
applies when the topic sets none (``retention.ms`` <- ``log.retention.ms`` > ``log.retention.minutes`` >
``log.retention.hours`` in ``server.properties``, only ``log.retention.ms`` as a dynamic config
(``core/.../server/DynamicBrokerConfig.scala``); ``min.cleanable.dirty.ratio`` <- ``log.cleaner.min.cleanable.ratio``;
...).
``LogConfig.localRetentionMs/Bytes``: ``local.retention.*`` = -2 means "use ``retention.*``".

A data dir does not hold ``server.properties``, so values come from, in this order (the first that sets a key
wins, and :class:`Setting.source` says which):

1. ``[topics."<name>"]`` of the TOML file (``conf/retention.toml``), then the first ``[topics."regex:<re>"]`` table
   (in file order) whose regex matches the whole topic name;
2. the topic's ``ConfigRecord`` s in the KRaft metadata log (``__cluster_metadata-0`` found among the data dirs:
   the newest ``<end offset>-<epoch>.checkpoint`` snapshot, then the log's records from its end offset; last write
   wins, a null value deletes, a ``RemoveTopicRecord`` drops the topic's configs, as
   ``metadata/.../image/ConfigurationsDelta.java`` replays them; a KIP-868 metadata transaction counts at its end
   record, never when aborted or still open, as ``image/loader/MetadataBatchLoader.java`` publishes it);
   Kafka's own internal topic configs stand at this level too (``__consumer_offsets`` and
   ``__transaction_state`` are created compacted: ``INTERNAL_TOPIC_CONFIGS``);
3. broker-level configs in the same metadata log (``ConfigRecord`` s of BROKER resources: the broker's own, named
   by its node id, over the cluster-wide default, the empty name), read as ``DynamicBrokerConfig`` reads them:
   only the dynamic synonym of each setting (``log.retention.ms``; ``log.retention.hours``/``minutes`` and
   ``log.roll.hours`` are static-only and a broker ignores them there), invalid values ignored
   (:attr:`ClusterConfigs.notes` lists both), a negative ``log.retention.ms`` read as -1;
4. ``[defaults]`` of the TOML file (stands in for ``server.properties``);
5. Kafka's defaults (``LogConfig.DEFAULT_*``).

Keys are the topic-level names (``retention.ms``, ``cleanup.policy``, ...). An unknown key, a table other than
``defaults``/``topics``, or a value of the wrong type or out of Kafka's range is an :class:`InvalidOptionError`
naming the key and the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from kafkaseg.errors import CorruptDataError, InvalidOptionError, KafkaSegError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import KRAFT_SNAPSHOT_NAME, PartitionDir

__all__ = [
    "KAFKA_DEFAULTS", "SETTING_NAMES", "Setting", "TopicConfig", "ConfigFile", "ClusterConfigs",
    "load_config_file", "read_cluster_configs", "resolve_topic_config", "INTERNAL_TOPICS",
]

LONG_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000

# LogConfig.DEFAULT_* (and TopicConfig names)
KAFKA_DEFAULTS: dict[str, Any] = {
    "cleanup.policy": ("delete",),
    "retention.ms": 7 * DAY_MS,
    "retention.bytes": -1,
    "local.retention.ms": -2,
    "local.retention.bytes": -2,
    "remote.storage.enable": False,
    "remote.log.copy.disable": False,
    "segment.ms": 7 * DAY_MS,
    "segment.bytes": 1024 * 1024 * 1024,
    "min.cleanable.dirty.ratio": 0.5,
    "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": LONG_MAX,
    "delete.retention.ms": DAY_MS,
    "file.delete.delay.ms": 60_000,
}
SETTING_NAMES = tuple(KAFKA_DEFAULTS)

# topics whose logs never go to remote storage (UnifiedLog.isRemoteLogEnabled excludes internal topics, the
# remote log metadata topic and the KRaft metadata log, and every compacted topic)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state",
                             "__cluster_metadata"})
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"

# Topic configs Kafka itself gives its internal topics when it creates them (GroupCoordinator.offsetsTopicConfigs,
# TransactionStateManager.transactionTopicConfigs; ShareCoordinatorService gives __share_group_state "delete", the
# default). They are stored as topic configs, so they rank with the metadata log's topic configs, above broker
# defaults; a data dir without a metadata log (a ZooKeeper-era broker) has them from here.
INTERNAL_TOPIC_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "__consumer_offsets": ("GroupCoordinator.offsetsTopicConfigs", {"cleanup.policy": ("compact",)}),
    "__transaction_state": ("TransactionStateManager.transactionTopicConfigs", {"cleanup.policy": ("compact",)}),
}

# Dynamic broker config -> topic config (ServerTopicConfigSynonyms: the first synonym of each, the only one
# DynamicLogConfig.ReconfigurableConfigs accepts). A broker drops the other synonyms from its dynamic configs
# (DynamicBrokerConfig.fromPersistentProps removes non-dynamic configs, and values that do not validate, with an
# error log), so they are reported as ignored, never applied.
_BROKER_SYNONYMS: dict[str, str] = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.local.retention.ms": "local.retention.ms",
    "log.local.retention.bytes": "local.retention.bytes",
    "log.roll.ms": "segment.ms",
    "log.segment.bytes": "segment.bytes",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
}
_STATIC_ONLY_SYNONYMS = ("log.retention.minutes", "log.retention.hours", "log.roll.hours")


# -- values: one parser per setting, for TOML values (typed) and metadata strings ---------------------------------

def _long(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    try:
        number = int(value.strip()) if isinstance(value, str) else value
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None
    if not minimum <= number <= LONG_MAX:
        raise ValueError(f"{name} must be at least {minimum} (and fit a 64-bit long), not {number}")
    return number


def _ratio(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number between 0 and 1, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number between 0 and 1, not {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, not {number}")
    return number


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _policy(name: str, value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"{name} must be a list of compact/delete (a string \"compact,delete\" or an array), "
                         f"not {value!r}")
    policy = tuple(dict.fromkeys(i.strip().lower() for i in items if i.strip()))
    wrong = [p for p in policy if p not in ("compact", "delete")]
    if wrong:
        raise ValueError(f"{name} may hold only compact and delete, not {', '.join(wrong)}")
    return policy


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "cleanup.policy": _policy,
    "retention.ms": lambda n, v: _long(n, v, -1),
    "retention.bytes": lambda n, v: _long(n, v, -(2**63)),
    "local.retention.ms": lambda n, v: _long(n, v, -2),
    "local.retention.bytes": lambda n, v: _long(n, v, -2),
    "remote.storage.enable": _boolean,
    "remote.log.copy.disable": _boolean,
    "segment.ms": lambda n, v: _long(n, v, 1),
    "segment.bytes": lambda n, v: _long(n, v, 14),
    "min.cleanable.dirty.ratio": _ratio,
    "min.compaction.lag.ms": lambda n, v: _long(n, v, 0),
    "max.compaction.lag.ms": lambda n, v: _long(n, v, 1),
    "delete.retention.ms": lambda n, v: _long(n, v, 0),
    "file.delete.delay.ms": lambda n, v: _long(n, v, 0),
}


def parse_setting(name: str, value: Any) -> Any:
    """``value`` of topic setting ``name`` as Kafka would accept it (ValueError otherwise; KeyError for a name
    this module does not know)."""
    return _PARSERS[name](name, value)


def _broker_setting(broker_name: str, raw: str) -> tuple[str, Any]:
    """(topic setting, value) of dynamic broker config ``broker_name`` (ValueError when a broker would drop it)."""
    topic_name = _BROKER_SYNONYMS[broker_name]
    if topic_name == "retention.ms":  # KafkaConfig.logRetentionTimeMillis: no validator, any negative is -1
        value = _long(broker_name, raw, -(2**63))
        return topic_name, -1 if value < 0 else value
    return topic_name, parse_setting(topic_name, raw)


# -- the resolved config -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One resolved value and where it came from (``toml topic "orders"``, ``toml regex:...``, ``cluster metadata
    topic config``, ``cluster metadata broker 1 (log.retention.hours)``, ``toml defaults``, ``kafka default``)."""

    value: Any
    source: str


@dataclass(frozen=True)
class TopicConfig:
    """The settings of one topic that retention and the log cleaner read (``LogConfig``), each with its source."""

    topic: str
    settings: Mapping[str, Setting]

    def __getitem__(self, name: str) -> Any:
        return self.settings[name].value

    def source(self, name: str) -> str:
        return self.settings[name].source

    @property
    def delete(self) -> bool:
        """``LogConfig.delete``: cleanup.policy contains ``delete``."""
        return "delete" in self["cleanup.policy"]

    @property
    def compact(self) -> bool:
        return "compact" in self["cleanup.policy"]

    @property
    def remote_log_enabled(self) -> bool:
        """``UnifiedLog.isRemoteLogEnabled``: the topic's ``remote.storage.enable`` (a topic can only set it on a
        cluster with ``remote.log.storage.system.enable``), never for a compacted topic, an internal topic, the
        remote log metadata topic or the KRaft metadata log."""
        return (bool(self["remote.storage.enable"]) and not self.compact and self.topic not in INTERNAL_TOPICS
                and self.topic != REMOTE_LOG_METADATA_TOPIC)

    def topic_level(self, name: str) -> bool:
        """Whether setting ``name`` came from a topic-level source (the TOML file's topic or regex table, the
        metadata log's topic config, Kafka's internal topic configs) rather than a default."""
        source = self.source(name)
        return source.startswith(("toml topic", "toml 'regex:", "cluster metadata topic", "kafka internal topic"))

    @property
    def remote_copy_enabled(self) -> bool:
        """``UnifiedLog.remoteLogEnabledAndRemoteCopyEnabled``: local retention applies only then."""
        return self.remote_log_enabled and not self["remote.log.copy.disable"]

    @property
    def effective_retention_ms(self) -> int:
        """``UnifiedLog.localRetentionMs``: ``LogConfig.localRetentionMs()`` (-2 = retention.ms) when remote copy is
        on, else ``retention.ms``."""
        if self.remote_copy_enabled and self["local.retention.ms"] != -2:
            return self["local.retention.ms"]
        return self["retention.ms"]

    @property
    def effective_retention_bytes(self) -> int:
        if self.remote_copy_enabled and self["local.retention.bytes"] != -2:
            return self["local.retention.bytes"]
        return self["retention.bytes"]

    @property
    def retention_ms_source(self) -> str:
        if self.remote_copy_enabled and self["local.retention.ms"] != -2:
            return f"local.retention.ms from {self.source('local.retention.ms')}"
        return f"retention.ms from {self.source('retention.ms')}"

    @property
    def retention_bytes_source(self) -> str:
        if self.remote_copy_enabled and self["local.retention.bytes"] != -2:
            return f"local.retention.bytes from {self.source('local.retention.bytes')}"
        return f"retention.bytes from {self.source('retention.bytes')}"

    def as_dict(self) -> dict:
        return {name: {"value": list(s.value) if isinstance(s.value, tuple) else s.value, "source": s.source}
                for name, s in self.settings.items()}


# -- the TOML file -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigFile:
    """A parsed ``retention.toml``: ``defaults``, exact ``topics`` and ``patterns`` (compiled ``regex:`` tables in
    file order), values already validated."""

    path: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    topics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    patterns: tuple[tuple[str, re.Pattern, Mapping[str, Any]], ...] = ()
    use_cluster_metadata: bool = True


def _table_values(table: Any, where: str, path: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise InvalidOptionError(f"{path}: {where} must be a table of settings, not {table!r}")
    values = {}
    for key, raw in table.items():
        if key not in _PARSERS:
            raise InvalidOptionError(f"{path}: {where}: unknown setting {key!r} (known: {', '.join(SETTING_NAMES)}; "
                                     f"quote dotted names: \"retention.ms\" = ...)")
        try:
            values[key] = parse_setting(key, raw)
        except ValueError as err:
            raise InvalidOptionError(f"{path}: {where}: {err}") from err
    return values


_CONFIG_CAP = 16 * 1024 * 1024  # a retention TOML is a few KB


def load_config_file(path: str | None) -> ConfigFile:
    """Parse and validate a retention TOML file (None: an empty one)."""
    if path is None:
        return ConfigFile()
    try:
        if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
            # a pipe, /dev/stdin, a process substitution: a config generated on the fly (a few KB at most)
            with open(path, "rb") as handle:
                data = handle.read(_CONFIG_CAP + 1)
            if len(data) > _CONFIG_CAP:
                raise OSError(f"more than {_CONFIG_CAP} bytes")
        else:
            data = _fs.read_small_file(path, max_bytes=_CONFIG_CAP)
    except (OSError, KafkaSegError) as err:
        raise InvalidOptionError(f"{path}: cannot read the retention config: {err}") from err
    try:
        doc = tomllib.loads(bytes(data).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InvalidOptionError(f"{path}: not valid TOML: {err}") from err
    unknown = [k for k in doc if k not in ("defaults", "topics", "cluster_metadata")]
    if unknown:
        raise InvalidOptionError(f"{path}: unknown top-level key(s) {', '.join(map(repr, unknown))} (expected "
                                 "[defaults], [topics.\"<name>\"] and cluster_metadata = true|false)")
    use_metadata = doc.get("cluster_metadata", True)
    if not isinstance(use_metadata, bool):
        raise InvalidOptionError(f"{path}: cluster_metadata must be true or false, not {use_metadata!r}")
    defaults = _table_values(doc.get("defaults", {}), "[defaults]", path)
    topics_table = doc.get("topics", {})
    if not isinstance(topics_table, dict):
        raise InvalidOptionError(f"{path}: topics must be tables [topics.\"<name>\"], not {topics_table!r}")
    topics, patterns = {}, []
    for name, table in topics_table.items():
        where = f"[topics.{name!r}]"
        values = _table_values(table, where, path)
        if name.startswith("regex:"):
            try:
                compiled = re.compile(name[len("regex:"):])
            except re.error as err:
                raise InvalidOptionError(f"{path}: {where}: invalid regex: {err}") from err
            patterns.append((name, compiled, values))
        else:
            topics[name] = values
    return ConfigFile(path, defaults, topics, tuple(patterns), use_metadata)


# -- the KRaft metadata log ----------------------------------------------------------------------------------------

_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4  # ConfigResource.Type
_CONFIG_RECORD, _TOPIC_RECORD, _REMOVE_TOPIC_RECORD = 4, 2, 9  # MetadataRecordType
_PARTITION_RECORD, _PARTITION_CHANGE_RECORD = 3, 5
_REPLAYED = (_TOPIC_RECORD, _PARTITION_RECORD, _CONFIG_RECORD, _PARTITION_CHANGE_RECORD, _REMOVE_TOPIC_RECORD)
_BEGIN_TRANSACTION, _END_TRANSACTION, _ABORT_TRANSACTION = 23, 24, 25


@dataclass(frozen=True)
class ClusterConfigs:
    """Topic and broker configs replayed from a KRaft metadata log: ``topics[name][key]`` and
    ``brokers[resource name][key]`` (raw strings; the empty resource name is the cluster-wide default)."""

    source: str | None = None
    topics: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    brokers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    records: int = 0
    notes: tuple[str, ...] = ()  # broker configs a broker would drop (non-dynamic names, invalid values); gaps
    topic_ids: Mapping[str, str] = field(default_factory=dict)  # name -> base64url id of each live topic
    complete: bool = False  # the replay starts from a snapshot or offset 0: topic_ids is the whole image
    cluster_id: str | None = None  # meta.properties of the log dir the metadata log was read from
    replicas: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)  # (topic id, partition)


def _metadata_values(path: str, filesystem, min_offset: int) -> Iterable[tuple[int, bytes]]:
    """``(offset, value)`` of every data record at or above ``min_offset`` in a metadata log segment or snapshot
    (control batches skipped); one batch in memory at a time."""
    from kafkaseg.decode import decode
    from kafkaseg.decode.api import DecodeRequest
    from kafkaseg.storage.segment import SegmentReader

    with SegmentReader(path, filesystem) as reader:
        for header in reader.iter_headers(0, max_batch_bytes=None):
            if header.is_control or header.last_offset < min_offset:
                continue
            data = reader.read_at(header.position, header.size)
            result = decode(memoryview(data), DecodeRequest(path=path, base_position=header.position,
                                                            max_batch_bytes=max(header.size, 1 << 20),
                                                            min_offset=min_offset))
            yield from zip(result.columns["offset"].to_pylist(), result.columns["value"].to_pylist())


def _kraft_snapshots(pdir: PartitionDir) -> list[tuple[int, str]]:
    """(end offset, path) of the KRaft snapshots of ``pdir``, newest first."""
    return sorted(((int(m.group(1)), path) for path in pdir.kraft_snapshot_paths
                   if (m := KRAFT_SNAPSHOT_NAME.match(_fs.basename(path)))), reverse=True)


def _metadata_reach(pdir: PartitionDir) -> int:
    """How far a copy of the metadata log reaches: its log end offset, or its newest snapshot's end offset."""
    from kafkaseg.storage.layout import partition_log_end_offset

    snapshots = _kraft_snapshots(pdir)
    try:
        leo = partition_log_end_offset(pdir, max_batch_bytes=None) if pdir.segments else None
    except KafkaSegError:
        leo = None
    return max([leo if leo is not None else -1] + [end for end, _ in snapshots[:1]])


def read_cluster_configs(partitions: Iterable[PartitionDir]) -> ClusterConfigs:
    """Replay the config records of the ``__cluster_metadata-0`` among ``partitions`` (empty when there is none; the
    copy that reaches the highest offset when several data dirs hold one). Malformed records raise a
    :class:`CorruptDataError` naming the file and offset."""
    from kafkaseg.wire.internal.cluster_metadata import decode_metadata_record

    copies = [p for p in partitions if p.topic == "__cluster_metadata" and p.partition == 0]
    if not copies:
        return ClusterConfigs()
    pdir = max(copies, key=lambda p: (_metadata_reach(p), p.path))
    snapshots = _kraft_snapshots(pdir)
    files: list[tuple[str, int]] = []
    start = 0
    if snapshots:
        start, snapshot_path = snapshots[0]
        files.append((snapshot_path, 0))
    segments = pdir.segments
    files += [(s.log_path, start) for i, s in enumerate(segments)  # segments holding offsets >= start
              if i + 1 == len(segments) or segments[i + 1].base_offset > start]
    topics: dict[str, dict[str, str]] = {}
    brokers: dict[str, dict[str, str]] = {}
    names_by_id: dict[str, str] = {}
    replicas: dict[tuple[str, int], tuple[int, ...]] = {}
    count = 0

    def apply(record) -> None:
        nonlocal count
        if record.api_key == _TOPIC_RECORD:
            names_by_id[record.data["topicId"]] = record.data["name"]
        elif record.api_key in (_PARTITION_RECORD, _PARTITION_CHANGE_RECORD):
            if record.data.get("replicas") is not None:  # a change record without replicas keeps them
                replicas[(record.data["topicId"], record.data["partitionId"])] = tuple(record.data["replicas"])
        elif record.api_key == _REMOVE_TOPIC_RECORD:
            topic_id = record.data["topicId"]
            name = names_by_id.pop(topic_id, None)
            if name is not None:
                topics.pop(name, None)
            for key in [k for k in replicas if k[0] == topic_id]:
                del replicas[key]
        elif record.api_key == _CONFIG_RECORD:
            data = record.data
            kind = data["resourceType"]
            target = topics if kind == _TOPIC_RESOURCE else brokers if kind == _BROKER_RESOURCE else None
            if target is None:
                return
            count += 1
            configs = target.setdefault(data["resourceName"], {})
            if data["value"] is None:
                configs.pop(data["name"], None)
            else:
                configs[data["name"]] = data["value"]

    # KIP-868 metadata transactions (MetadataBatchLoader): records between BeginTransactionRecord and
    # EndTransactionRecord are published at the end, dropped at an AbortTransactionRecord, held while still open
    staged: list | None = None
    for path, min_offset in files:
        for offset, value in _metadata_values(path, pdir.filesystem, min_offset):
            try:
                record = decode_metadata_record(value)
            except CorruptDataError as err:
                raise CorruptDataError(f"metadata record at offset {offset} does not decode: {err}",
                                       path=path) from err
            if record.api_key == _BEGIN_TRANSACTION:
                staged = staged if staged is not None else []  # a second begin continues the open one
            elif record.api_key in (_END_TRANSACTION, _ABORT_TRANSACTION):
                if record.api_key == _END_TRANSACTION:
                    for held in staged or ():
                        apply(held)
                staged = None
            elif record.data is None or record.api_key not in _REPLAYED:
                continue
            elif staged is not None:
                staged.append(record)
            else:
                apply(record)
    notes = list(_ignored_broker_configs(brokers))
    if staged:
        notes.append(f"a metadata transaction is still open at the log's end: its {len(staged)} record(s) are not "
                     "applied (brokers publish a transaction at its EndTransactionRecord)")
    complete = bool(snapshots) or (bool(segments) and segments[0].base_offset == 0)
    if not complete:
        notes.append(f"the metadata log starts at offset {segments[0].base_offset if segments else '?'} and no "
                     "snapshot covers what is before it: configs set earlier are missing")
    return ClusterConfigs(pdir.path, topics, brokers, count, tuple(notes),
                          {name: topic_id for topic_id, name in names_by_id.items()}, complete,
                          pdir.log_dir_meta.cluster_id if pdir.log_dir_meta is not None else None, replicas)


def _ignored_broker_configs(brokers: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:
    """What ``DynamicBrokerConfig.fromPersistentProps`` would drop of the retention-related broker configs."""
    ignored = []
    for scope, configs in sorted(brokers.items()):
        who = f"broker {scope}" if scope else "cluster default"
        for name, raw in sorted(configs.items()):
            if name in _STATIC_ONLY_SYNONYMS:
                ignored.append(f"{who} {name}={raw!r} is ignored: not a dynamic broker config (only in "
                               "server.properties; put its topic-level value in the TOML [defaults])")
            elif name in _BROKER_SYNONYMS:
                try:
                    _broker_setting(name, raw)
                except ValueError as err:
                    ignored.append(f"{who} {name}={raw!r} is ignored: {err}")
    return tuple(ignored)


# -- resolution ----------------------------------------------------------------------------------------------------

def _broker_values(cluster: ClusterConfigs, node_id: int | None) -> dict[str, Setting]:
    """Topic settings from dynamic broker configs, the broker's own over the cluster default
    (``DynamicBrokerConfig.updateCurrentConfig``); what a broker would drop (:attr:`ClusterConfigs.notes`) is
    skipped."""
    found: dict[str, Setting] = {}
    scopes = ([str(node_id)] if node_id is not None else []) + [""]
    for broker_name in _BROKER_SYNONYMS:
        for scope in scopes:
            raw = cluster.brokers.get(scope, {}).get(broker_name)
            if raw is None:
                continue
            try:
                topic_name, value = _broker_setting(broker_name, raw)
            except ValueError:
                continue
            who = f"broker {scope}" if scope else "cluster default"
            found[topic_name] = Setting(value, f"cluster metadata {who} ({broker_name})")
            break
    return found


def resolve_topic_config(topic: str, config_file: ConfigFile | None = None, cluster: ClusterConfigs | None = None,
                         node_id: int | None = None) -> TopicConfig:
    """The :class:`TopicConfig` of ``topic`` by the precedence in the module docstring. ``node_id`` (the log dir's
    ``meta.properties``) picks the broker's own broker-level configs."""
    config_file = config_file or ConfigFile()
    cluster = cluster if cluster is not None and config_file.use_cluster_metadata else ClusterConfigs()
    layers: list[dict[str, Setting]] = []
    if topic in config_file.topics:
        layers.append({k: Setting(v, f"toml topic {topic!r}") for k, v in config_file.topics[topic].items()})
    for name, pattern, values in config_file.patterns:
        if pattern.fullmatch(topic):
            layers.append({k: Setting(v, f"toml {name!r}") for k, v in values.items()})
            break
    metadata_topic = {}
    for key, raw in cluster.topics.get(topic, {}).items():
        if key not in _PARSERS:
            continue  # a config retention does not read (compression.type, ...)
        try:
            metadata_topic[key] = Setting(parse_setting(key, raw), "cluster metadata topic config")
        except ValueError as err:
            raise InvalidOptionError(f"{cluster.source}: topic {topic!r} config {key}={raw!r}: {err}") from err
    layers.append(metadata_topic)
    if topic in INTERNAL_TOPIC_CONFIGS:
        creator, values = INTERNAL_TOPIC_CONFIGS[topic]
        layers.append({k: Setting(v, f"kafka internal topic config ({creator})") for k, v in values.items()})
    layers.append(_broker_values(cluster, node_id))
    layers.append({k: Setting(v, "toml defaults") for k, v in config_file.defaults.items()})
    layers.append({k: Setting(v, "kafka default") for k, v in KAFKA_DEFAULTS.items()})
    settings = {}
    for name in SETTING_NAMES:
        settings[name] = next(layer[name] for layer in layers if name in layer)
    return TopicConfig(topic, settings)

