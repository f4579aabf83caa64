"""``__transaction_state`` records: transaction coordinator state (bytes -> values, no I/O).

Since Kafka 4.1 (KAFKA-18207, ``TransactionCoordinatorRecordSerde``) these records are framed and printed as the
other coordinators' are (:mod:`~kafkaseg.wire.internal.coordinator_records`): the key's int16 is the record type
(0, the only one), the value's int16 its version. Schemas, transcribed from
``transaction-coordinator/src/main/resources/common/message/``::

    TransactionLogKey   v0 (not flexible): transactionalId string
    TransactionLogValue v0-1 (flexible 1+): producerId int64, previousProducerId int64 (tag 0, default -1),
                        nextProducerId int64 (tag 1, default -1), producerEpoch int16, transactionTimeoutMs int32,
                        transactionStatus int8, transactionPartitions []{topic string, partitionIds []int32}
                        (nullable), transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64,
                        clientTransactionVersion int16 (tag 2, default 0)

``DumpLogSegments --transaction-log-decoder`` (``TransactionLogMessageParser``, Kafka 4.1 to 4.3) prints them as
JSON through the generated converters: ``key: {"type":"0","data":{"transactionalId":"t"}} payload:
{"version":"1","data":{"producerId":7,...,"transactionStatus":1,...}}``, the status as its number, a tagged field
only when it is not its default. Kafka 4.0 and earlier printed ``transaction_metadata::transactionalId=...``
text instead (``TransactionLog.formatRecordKeyAndValue``); kafkaseg prints the newer form only.

``transactionStatus`` ids (``TransactionState.java``): 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence.
"""

from __future__ import annotations

from kafkaseg.wire.internal.coordinator_records import (CoordinatorRecord, RecordType, decode_coordinator_record,
                                                        format_coordinator_record)
from kafkaseg.wire.internal.protocol import Field, Message

__all__ = ["TRANSACTION_LOG_KEY", "TRANSACTION_LOG_VALUE", "TRANSACTION_STATES", "decode_transaction_record",
           "format_transaction_record"]

TRANSACTION_LOG_KEY = Message("TransactionLogKey", "0", "none", (
    Field("TransactionalId", "string", "0"),
))
TRANSACTION_LOG_VALUE = Message("TransactionLogValue", "0-1", "1+", (
    Field("ProducerId", "int64", "0+"),
    Field("PreviousProducerId", "int64", "1+", tagged="1+", tag=0, default=-1),
    Field("NextProducerId", "int64", "1+", tagged="1+", tag=1, default=-1),
    Field("ProducerEpoch", "int16", "0+"),
    Field("TransactionTimeoutMs", "int32", "0+"),
    Field("TransactionStatus", "int8", "0+"),
    Field("TransactionPartitions", "[]PartitionsSchema", "0+", nullable="0+", fields=(
        Field("Topic", "string", "0+"), Field("PartitionIds", "[]int32", "0+"))),
    Field("TransactionLastUpdateTimestampMs", "int64", "0+"),
    Field("TransactionStartTimestampMs", "int64", "0+"),
    Field("ClientTransactionVersion", "int16", "1+", tagged="1+", tag=2, default=0),
))
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

_RECORD_TYPES = {0: RecordType("transaction_log", TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)}


def decode_transaction_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """Decode one ``__transaction_state`` record (kind ``"transaction_log"``, or ``"unknown"`` for a record type
    other than 0; ``value`` None for a tombstone). Raises :class:`CorruptDataError` on malformed bytes."""
    return decode_coordinator_record("__transaction_state", _RECORD_TYPES, key, value)


def format_transaction_record(key: bytes | None, value: bytes | None, offset: int
                              ) -> tuple[str | None, str | None]:
    """``(key, payload)`` as ``DumpLogSegments --transaction-log-decoder`` prints them (Kafka 4.1+)::

        key: {"type":"0","data":{"transactionalId":"t"}}
        payload: {"version":"1","data":{"producerId":7,"producerEpoch":2,"transactionTimeoutMs":60000,
                  "transactionStatus":1,"transactionPartitions":[{"topic":"t","partitionIds":[0,1]}],
                  "transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":900,
                  "clientTransactionVersion":2}}

    A tombstone's payload is ``<DELETE>``; see :func:`format_coordinator_record` for the error lines."""
    return format_coordinator_record(decode_transaction_record, key, value, offset)
