"""Decoders for Kafka's internal topics (bytes -> values, no I/O): ``__consumer_offsets``
(:mod:`~kafkaseg.wire.internal.consumer_offsets`), ``__share_group_state``
(:mod:`~kafkaseg.wire.internal.share_group_state`), both framed as coordinator records
(:mod:`~kafkaseg.wire.internal.coordinator_records`), ``__transaction_state``
(:mod:`~kafkaseg.wire.internal.transaction_state`), ``__cluster_metadata`` and Raft/transaction control records
(:mod:`~kafkaseg.wire.internal.cluster_metadata`), ``__remote_log_metadata``
(:mod:`~kafkaseg.wire.internal.remote_log_metadata`), built on a small interpreter of Kafka's message schemas
(:mod:`~kafkaseg.wire.internal.protocol`)."""

from kafkaseg.wire.internal.cluster_metadata import (ControlRecord, MetadataRecord, decode_control_record,
                                                     decode_metadata_record, metadata_type_name)
from kafkaseg.wire.internal.consumer_offsets import GroupRecord, decode_group_record, format_offsets_record
from kafkaseg.wire.internal.coordinator_records import CoordinatorRecord
from kafkaseg.wire.internal.protocol import to_json
from kafkaseg.wire.internal.remote_log_metadata import (decode_remote_log_metadata,
                                                        format_remote_log_metadata_record)
from kafkaseg.wire.internal.share_group_state import (decode_share_group_state_record,
                                                      format_share_group_state_record)
from kafkaseg.wire.internal.transaction_state import (decode_transaction_record,
                                                      format_transaction_record)

__all__ = ["ControlRecord", "MetadataRecord", "decode_control_record", "decode_metadata_record",
           "metadata_type_name", "GroupRecord", "decode_group_record", "format_offsets_record",
           "CoordinatorRecord", "decode_share_group_state_record", "format_share_group_state_record",
           "decode_transaction_record", "format_transaction_record", "decode_remote_log_metadata",
           "format_remote_log_metadata_record", "to_json"]
