"""``__transaction_state`` records: transaction coordinator state (bytes -> values, no I/O).

Framing (``core/.../coordinator/transaction/TransactionLog.scala``): key and value each start with an int16
version. Schemas, transcribed from ``transaction-coordinator/src/main/resources/common/message/``::

    TransactionLogKey   v0 (not flexible): transactionalId string
    TransactionLogValue v0-1 (flexible 1+): producerId int64, previousProducerId int64 (tag 0, default -1),
                        nextProducerId int64 (tag 1, default -1), producerEpoch int16, transactionTimeoutMs int32,
                        transactionStatus int8, transactionPartitions []{topic string, partitionIds []int32}
                        (nullable), transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64,
                        clientTransactionVersion int16 (tag 2, default 0)

``transactionStatus`` ids (``TransactionMetadata.scala``): 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.protocol import Field, Message, Reader, read_message

__all__ = ["TRANSACTION_LOG_KEY", "TRANSACTION_LOG_VALUE", "TRANSACTION_STATES", "TransactionRecord",
           "decode_transaction_record", "format_transaction_record"]

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


@dataclass(frozen=True)
class TransactionRecord:
    """A decoded ``__transaction_state`` record; ``value`` None for a tombstone, ``transactional_id`` None when
    the key version is unknown."""

    key_version: int
    transactional_id: str | None
    value_version: int | None
    value: dict | None

    @property
    def state(self) -> str | None:
        if self.value is None:
            return None
        status = self.value["transactionStatus"]
        return TRANSACTION_STATES.get(status, f"Unknown({status})")

    @property
    def partitions(self) -> list[str]:
        """``topic-partition`` names, empty for the Empty state (Kafka ignores the field then)."""
        if self.value is None or self.state == "Empty":
            return []
        return [f"{p['topic']}-{pid}" for p in self.value.get("transactionPartitions") or []
                for pid in p["partitionIds"]]


def decode_transaction_record(key: bytes, value: bytes | None) -> TransactionRecord:
    """Decode one ``__transaction_state`` record (raises :class:`CorruptDataError` on malformed bytes)."""
    if key is None:
        raise CorruptDataError("__transaction_state record without a key")
    key_version = Reader(key).int16()
    if key_version != 0:
        return TransactionRecord(key_version, None, None, None)
    txn_id = read_message(TRANSACTION_LOG_KEY, key, 0, 2)["transactionalId"]
    if value is None:
        return TransactionRecord(0, txn_id, None, None)
    value_version = Reader(value).int16()
    return TransactionRecord(0, txn_id, value_version, read_message(TRANSACTION_LOG_VALUE, value, value_version, 2,
                                                                    require_all=False))


def format_transaction_record(key: bytes | None, value: bytes | None, offset: int
                              ) -> tuple[str | None, str | None]:
    """``(key, payload)`` as ``TransactionLog.formatRecordKeyAndValue`` prints them for ``DumpLogSegments
    --transaction-log-decoder``::

        key: transaction_metadata::transactionalId=<id>
        payload: producerId:P,producerEpoch:E,state=Ongoing,partitions=[t-0,t-1],txnLastUpdateTimestamp=T,
                 txnTimeoutMs=M

    (Kafka prints the partitions from a hash set, so its order may differ; here they are in record order.)"""
    try:
        record = decode_transaction_record(key, value)
    except CorruptDataError as err:
        return f"Error at offset {offset}, skipping. {err}", None
    if record.transactional_id is None:
        return f"unknown::version={record.key_version}", None
    key_text = f"transaction_metadata::transactionalId={record.transactional_id}"
    if record.value is None:
        return key_text, "<DELETE>"
    v = record.value
    return key_text, (f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={record.state},"
                      f"partitions=[{','.join(record.partitions)}],"
                      f"txnLastUpdateTimestamp={v['transactionLastUpdateTimestampMs']},"
                      f"txnTimeoutMs={v['transactionTimeoutMs']}")
