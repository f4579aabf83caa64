"""kafka-python (an independent Kafka implementation) as the record-by-record oracle for decoding tests."""

from __future__ import annotations

from kafka.record.memory_records import MemoryRecords


def kafka_python_records(data: bytes, *, include_control: bool = True) -> list[dict]:
    """Every record kafka-python decodes from a record set, as plain dicts comparable with kafkaseg's rows.

    kafka-python gives magic-0 records timestamp None and timestampType None; kafkaseg (like Spark) gives -1 / -1.
    """
    rows = []
    records = MemoryRecords(bytes(data))
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        is_control = bool(getattr(batch, "is_control_batch", False))
        if is_control and not include_control:
            for _ in batch:
                pass
            continue
        for record in batch:
            headers = list(record.headers) if getattr(record, "headers", None) else None
            rows.append({
                "offset": record.offset,
                "timestamp": -1 if record.timestamp is None else record.timestamp,
                "timestampType": -1 if record.timestamp_type is None else record.timestamp_type,
                "key": record.key,
                "value": record.value,
                "headers": [(k, v) for k, v in headers] if headers else None,
                "isControl": is_control,
            })
    return rows


def kafkaseg_rows(result) -> list[dict]:
    """A kafkaseg DecodeResult's columns as the same dicts (timestamps back in ms)."""
    cols = {name: arr.to_pylist() for name, arr in result.columns.items() if name != "timestamp"}
    ts_us = result.columns["timestamp"].cast("int64").to_pylist()
    rows = []
    for i in range(result.num_rows):
        headers = cols["headers"][i] if "headers" in cols else None
        rows.append({
            "offset": cols["offset"][i],
            "timestamp": ts_us[i] // 1000,
            "timestampType": cols["timestampType"][i],
            "key": cols["key"][i],
            "value": cols["value"][i],
            "headers": None if headers is None else [(h["key"], h["value"]) for h in headers],
            **({"isControl": cols["isControl"][i]} if "isControl" in cols else {}),
        })
    return rows
