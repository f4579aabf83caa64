"""kafkaseg decode throughput against the machine's limits, the raw codec libraries, aiokafka and kafka-python.

Usage::

    PYTHONPATH=. python benchmarks/bench_decode.py [--size-mb 200] [--codecs none,gzip,snappy,lz4,zstd]
        [--batch-sizes 16k,1m] [--runs 3] [--subset-mb 20] [--pure-mb 2] [--quick] [--json out.json]

For every (codec, batch size) one segment of ``--size-mb`` MiB is generated under /tmp with
``kafkaseg.testing.write_benchmark_segment`` (200-byte text values, 16-byte keys), measured, and deleted. On that
segment, each measurement the best of ``--runs`` timed runs (after one untimed warm-up where cheap), one core:

  page cache   mmap the (already cached) .log and sum it as uint64 with numpy, mapping it anew in every run (with
               and without MAP_POPULATE, the faster counts): the read limit. Also the sum alone over a mapping
               already in place (memory bandwidth), 16 MiB os.pread chunks and a memcpy out of the mapping
                                                                    -> file MB/s
  codec        every batch payload of the segment through kafkaseg.codecs.decompress (bounded) and through the
               library's plain call (isal_zlib/zlib.decompress, cramjam.snappy.decompress_raw per xerial block,
               lz4.frame.decompress, zstandard decompressobj)        -> decompressed MB/s
  kafkaseg     kafkaseg.iter_batches(dir) with default options (CRC verification on; local files decoded from
               guarded mappings) -> Arrow; the same with readMode=pread; the compiled kernel driven directly on
               os.pread chunks of scan's size (without planning), and the pure-Python twin on the first --pure-mb MiB
               -> file MB/s, decompressed MB/s, records/s
  aiokafka     aiokafka.record.memory_records.MemoryRecords (its _crecords Cython extension when built) on the
               first --subset-mb MiB of whole batches: validate_crc() per batch (consumer default check_crcs),
               then offset/timestamp/key/value of every record    -> records/s
  kafka-python kafka.record.memory_records.MemoryRecords, the same loop, same subset -> records/s

Floors (from the issue) are evaluated per segment and printed as PASS/FAIL lines:
  uncompressed: kafkaseg file MB/s >= 30% of the page-cache read limit (mmap + numpy sum, mapped each run)
  compressed:   kafkaseg decompressed MB/s >= 80% of the raw library's decompressed MB/s on the same payloads
  all:          kafkaseg records/s >= 3x aiokafka's and >= 50x kafka-python's
Records/s of aiokafka and kafka-python come from the subset; a rate needs no scaling, the subset is the same kind
of batches as the rest of the segment. Rates are decimal MB/s (10^6 bytes).
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import shutil
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ALL_CODECS,
    MB,
    MiB,
    best_of,
    fmt_rate,
    format_table,
    machine,
    machine_line,
    parse_size,
    scratch_dir,
    size_label,
    walk_batches,
)

import numpy as np  # noqa: E402

import kafkaseg  # noqa: E402
from kafkaseg import decode as kdecode  # noqa: E402
from kafkaseg.codecs import available_codecs, decompress  # noqa: E402
from kafkaseg.decode import _kernel_py  # noqa: E402
from kafkaseg.decode.api import STOP_PARTIAL, DecodeRequest  # noqa: E402
from kafkaseg.testing import write_benchmark_segment  # noqa: E402
from kafkaseg.scan import READ_CHUNK_BYTES as SCAN_CHUNK  # noqa: E402

V2_HEADER_SIZE = 61
READ_CHUNK = 16 * MiB
XERIAL_MAGIC = b"\x82SNAPPY\x00"

FLOOR_PAGE_CACHE = 0.30
FLOOR_CODEC = 0.80
FLOOR_AIOKAFKA = 3.0
FLOOR_KAFKA_PYTHON = 50.0

try:
    from kafkaseg.decode import _kernel as _compiled_kernel  # type: ignore[attr-defined]
except ImportError:  # reported in the header; the compiled-kernel rows then use whatever kafkaseg.decode picked
    _compiled_kernel = None


# --- the machine's limits --------------------------------------------------------------------------------------------

def page_cache_rates(path: Path, runs: int) -> dict:
    """The page-cache read limit: map the (cached) file and sum it as uint64, mapping it anew in every timed run
    (with and without MAP_POPULATE; the faster counts), since a reader pays for the page tables as well as the
    memory. Also: summing a mapping that is already in place (memory bandwidth, not a page-cache read), 16 MiB
    preads, and a memcpy out of the mapping."""
    size = path.stat().st_size
    usable = size // 8 * 8
    with open(path, "rb") as f:
        while f.read(READ_CHUNK):  # warm-up read: the file is in the page cache from here on
            pass
        fd = f.fileno()

        def map_and_sum(flags: int):
            def run():
                mm = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
                try:
                    words = np.frombuffer(mm, dtype=np.uint64, count=size // 8)
                    total = int(words.sum())
                    del words
                finally:
                    mm.close()
                return total
            return run

        t_fresh = min(best_of(map_and_sum(mmap.MAP_SHARED | populate), runs)[0]
                      for populate in (0, getattr(mmap, "MAP_POPULATE", 0)))
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        try:
            words = np.frombuffer(mm, dtype=np.uint64, count=size // 8)
            t_mapped, _ = best_of(lambda: int(words.sum()), runs)
            target = np.empty_like(words)
            t_copy, _ = best_of(lambda: np.copyto(target, words), runs)
            words = target = None  # release the mapping's views before unmapping
        finally:
            gc.collect()
            mm.close()
        chunk = bytearray(READ_CHUNK)

        def pread_all():
            view = memoryview(chunk)
            pos = 0
            while pos < size:
                got = os.preadv(fd, [view], pos)
                if got <= 0:
                    break
                pos += got
        t_pread, _ = best_of(pread_all, runs)
    return {"mmap_sum_MBps": usable / t_fresh / MB, "mapped_sum_MBps": usable / t_mapped / MB,
            "memcpy_from_page_cache_MBps": usable / t_copy / MB, "pread_16MiB_MBps": size / t_pread / MB}


def memcpy_rate(runs: int, nbytes: int = 64 * MiB) -> float:
    """RAM -> RAM copy of an anonymous buffer (no page cache involved)."""
    src = np.ones(nbytes // 8, dtype=np.uint64)
    dst = np.empty_like(src)
    t, _ = best_of(lambda: np.copyto(dst, src), runs)
    return nbytes / t / MB


# --- codecs ----------------------------------------------------------------------------------------------------------

def raw_library_calls(codec: str, payloads: list, sizes: list[int]) -> list:
    """[(label, fn)] each decompressing every payload with a plain library call: no output bound, no Kafka framing
    checks beyond what is needed to make the call. The fastest is the ceiling kafkaseg is compared with. Block
    boundaries of xerial snappy are found outside the timed part; zstd frames written without a content size need
    either a streaming object or an output size (here the exact one, known only because we decompressed before)."""
    if codec == "gzip":
        try:
            from isal import isal_zlib as lib
            label = "isal_zlib.decompress"
        except ImportError:
            lib, label = zlib, "zlib.decompress"
        fn = lib.decompress
        return [(label, lambda: [fn(p, 31) for p in payloads])]
    if codec == "snappy":
        import cramjam
        blocks = []
        for p in payloads:
            if bytes(p[:8]) == XERIAL_MAGIC:
                pos = 16
                while pos < len(p):
                    n = int.from_bytes(p[pos:pos + 4], "big")
                    blocks.append(p[pos + 4:pos + 4 + n])
                    pos += 4 + n
            else:
                blocks.append(p)
        fn = cramjam.snappy.decompress_raw
        return [("cramjam.snappy.decompress_raw", lambda: [fn(b) for b in blocks])]
    if codec == "lz4":
        import lz4.frame
        fn = lz4.frame.decompress
        return [("lz4.frame.decompress", lambda: [fn(p) for p in payloads])]
    if codec == "zstd":
        import zstandard
        dctx = zstandard.ZstdDecompressor()
        return [("zstandard decompressobj", lambda: [dctx.decompressobj().decompress(p) for p in payloads]),
                ("zstandard decompress(exact size)",
                 lambda: [dctx.decompress(p, max_output_size=n) for p, n in zip(payloads, sizes)])]
    raise ValueError(codec)


# --- kafkaseg --------------------------------------------------------------------------------------------------------

def kafkaseg_scan(partition_dir: Path, **options) -> int:
    rows = 0
    for batch in kafkaseg.iter_batches(str(partition_dir), **options):
        rows += batch.num_rows
    return rows


def kernel_pread_loop(kernel, log_path: Path, limit: int | None = None) -> int:
    """The kernel on positioned reads of scan.READ_CHUNK_BYTES, resuming at result.consumed (scan.read_slice's loop, minus
    planning and Arrow batch assembly). CRC verification on, scan's default output bounds."""
    path = str(log_path)
    size = log_path.stat().st_size if limit is None else limit
    base = DecodeRequest(path=path, verify_crc=True, max_records=65536, max_bytes=64 * MiB)
    rows = 0
    pos = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while pos < size:
            buf = os.pread(fd, min(SCAN_CHUNK, size - pos), pos)
            if not buf:
                break
            view = memoryview(buf)
            off = 0
            while off < len(buf):
                req = DecodeRequest(**{**base.__dict__, "base_position": pos + off})
                result = kernel.decode(view[off:], req)
                rows += result.num_rows
                off += result.consumed
                if result.stop == STOP_PARTIAL:
                    break
            if off == 0:
                raise RuntimeError(f"a batch larger than {READ_CHUNK} bytes at {pos}: not expected here")
            pos += off
    finally:
        os.close(fd)
    return rows


# --- the Kafka clients -----------------------------------------------------------------------------------------------

def client_loop(memory_records_cls, data: bytes):
    def run():
        records = memory_records_cls(data)
        n = 0
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise RuntimeError("CRC mismatch")
            for record in batch:
                record.offset, record.timestamp, record.key, record.value  # noqa: B018
                n += 1
        return n
    return run


def aiokafka_memory_records():
    from aiokafka.record import memory_records
    cls = memory_records.MemoryRecords
    kind = "C (_crecords)" if getattr(memory_records, "_MemoryRecordsCython", None) is cls else "pure Python"
    import aiokafka
    return cls, f"aiokafka {aiokafka.__version__} {kind}"


def kafka_python_memory_records():
    import kafka
    from kafka.record.memory_records import MemoryRecords
    return MemoryRecords, f"kafka-python {kafka.__version__}"


# --- one segment -----------------------------------------------------------------------------------------------------

def bench_segment(root: Path, codec: str, batch_bytes: int, args, clients) -> dict:
    partition_dir = root / f"bench-{codec}-{size_label(batch_bytes)}-0"
    seg = write_benchmark_segment(partition_dir, args.size_bytes, batch_bytes, codec)
    os.sync()  # no background writeback of the fresh segment competing with the measurements
    log = Path(seg.log_path)
    runs = args.runs
    out = {"codec": codec, "batch_bytes": batch_bytes, "file_bytes": seg.size, "batches": seg.batches,
           "records": seg.records}
    out.update(page_cache_rates(log, runs))

    data = log.read_bytes()
    view = memoryview(data)
    headers = list(walk_batches(data))
    payloads = [view[h.position + V2_HEADER_SIZE:h.end] for h in headers]
    limit = 256 * MiB
    sizes = [len(decompress(h.codec, p, max_output=limit)) for h, p in zip(headers, payloads)]
    decompressed = sum(sizes)
    out["record_bytes"] = decompressed  # the records' bytes after decompression (= payload bytes for none)

    if codec != "none":
        t, _ = best_of(lambda: [decompress(h.codec, p, max_output=limit) for h, p in zip(headers, payloads)], runs)
        out["codec_kafkaseg_MBps"] = decompressed / t / MB
        best_label, best_t = None, float("inf")
        for label, raw in raw_library_calls(codec, payloads, sizes):
            t, _ = best_of(raw, runs)
            out[f"codec_raw_MBps[{label}]"] = decompressed / t / MB
            if t < best_t:
                best_label, best_t = label, t
        out["codec_raw_MBps"] = decompressed / best_t / MB
        out["codec_raw_call"] = best_label

    # kafkaseg end to end (iter_batches, default options: verifyCrc on)
    t, rows = best_of(lambda: kafkaseg_scan(partition_dir), runs)
    if rows != seg.records:
        raise RuntimeError(f"iter_batches returned {rows} records, the segment has {seg.records}")
    out.update(scan_s=t, scan_file_MBps=seg.size / t / MB, scan_record_MBps=decompressed / t / MB,
               scan_records_per_s=rows / t)
    # the same with readMode=pread (chunks copied out of the page cache first), for comparison
    t, rows = best_of(lambda: kafkaseg_scan(partition_dir, readMode="pread"), runs)
    if rows != seg.records:
        raise RuntimeError(f"iter_batches(readMode=pread) returned {rows} records, the segment has {seg.records}")
    out.update(scan_pread_file_MBps=seg.size / t / MB)

    # the compiled kernel on positioned reads (no planning, no Arrow batch assembly)
    kernel = _compiled_kernel or kdecode.kernel
    t, rows = best_of(lambda: kernel_pread_loop(kernel, log), runs)
    if rows != seg.records:
        raise RuntimeError(f"kernel loop decoded {rows} records, the segment has {seg.records}")
    out.update(kernel_file_MBps=seg.size / t / MB, kernel_records_per_s=rows / t)

    # the pure twin vs the compiled kernel on the same small prefix
    pure_end = max((h.end for h in walk_batches(data, args.pure_bytes)), default=headers[0].end)
    t_pure, rows_pure = best_of(lambda: kernel_pread_loop(_kernel_py, log, pure_end), runs, warmup=False)
    t_comp, rows_comp = best_of(lambda: kernel_pread_loop(kernel, log, pure_end), runs)
    if rows_pure != rows_comp:
        raise RuntimeError(f"pure twin decoded {rows_pure} records, compiled {rows_comp}")
    out.update(pure_subset_bytes=pure_end, pure_records_per_s=rows_pure / t_pure,
               compiled_over_pure=t_pure / t_comp)

    # the clients on the first --subset-mb MiB of whole batches
    sub_end = max((h.end for h in walk_batches(data, args.subset_bytes)), default=headers[0].end)
    subset = bytes(view[:sub_end])
    out["client_subset_bytes"] = sub_end
    for key, (cls, _label) in clients.items():
        t, n = best_of(client_loop(cls, subset), runs, warmup=key != "kafka_python")
        out[f"{key}_records_per_s"] = n / t
    payloads = view = headers = data = None  # free the segment's copy before the next codec
    gc.collect()
    shutil.rmtree(partition_dir, ignore_errors=True)
    return out


def floors(r: dict) -> list[tuple[str, float, float, bool]]:
    """(description, measured ratio, floor, pass) for one segment's result."""
    name = f"{r['codec']:>6} {size_label(r['batch_bytes']):>3} batches"
    checks = []
    if r["codec"] == "none":
        ratio = r["scan_file_MBps"] / r["mmap_sum_MBps"]
        checks.append((f"{name}: kafkaseg file MB/s / page-cache read limit (map + sum)", ratio,
                       FLOOR_PAGE_CACHE))
    else:
        ratio = r["scan_record_MBps"] / r["codec_raw_MBps"]
        checks.append((f"{name}: kafkaseg decompressed MB/s / raw {r['codec_raw_call']}", ratio, FLOOR_CODEC))
    if "aiokafka_records_per_s" in r:
        checks.append((f"{name}: kafkaseg records/s / aiokafka records/s",
                       r["scan_records_per_s"] / r["aiokafka_records_per_s"], FLOOR_AIOKAFKA))
    if "kafka_python_records_per_s" in r:
        checks.append((f"{name}: kafkaseg records/s / kafka-python records/s",
                       r["scan_records_per_s"] / r["kafka_python_records_per_s"], FLOOR_KAFKA_PYTHON))
    return [(d, v, f, v >= f) for d, v, f in checks]


def print_report(results: list[dict], info: dict) -> list[dict]:
    headers = ["codec", "batch", "file MB", "records", "mmap-sum", "mapped-sum", "pread", "memcpy-pc",
               "codec-raw", "codec-kseg", "kseg file", "kseg dec", "kseg rec/s", "pread file", "kernel rec/s",
               "aiokafka rec/s", "kafka-py rec/s", "pure rec/s", "cy/py"]
    rows = []
    for r in results:
        rows.append([r["codec"], size_label(r["batch_bytes"]), f"{r['file_bytes'] / MB:.0f}", f"{r['records']:,}",
                     fmt_rate(r["mmap_sum_MBps"]), fmt_rate(r["mapped_sum_MBps"]), fmt_rate(r["pread_16MiB_MBps"]),
                     fmt_rate(r["memcpy_from_page_cache_MBps"]),
                     fmt_rate(r.get("codec_raw_MBps")), fmt_rate(r.get("codec_kafkaseg_MBps")),
                     fmt_rate(r["scan_file_MBps"]), fmt_rate(r["scan_record_MBps"]),
                     fmt_rate(r["scan_records_per_s"]), fmt_rate(r.get("scan_pread_file_MBps")),
                     fmt_rate(r["kernel_records_per_s"]),
                     fmt_rate(r.get("aiokafka_records_per_s")), fmt_rate(r.get("kafka_python_records_per_s")),
                     fmt_rate(r["pure_records_per_s"]), f"{r['compiled_over_pure']:.0f}x"])
    print(format_table(headers, rows))
    print("columns: MB/s are decimal MB per second. mmap-sum = page-cache read limit (mmap + numpy uint64 sum, "
          "mapped anew each run); mapped-sum = the sum alone over a mapping already in place (memory bandwidth);\n"
          "  pread = 16 MiB os.pread chunks; memcpy-pc = np.copyto out of the mapping;\n"
          "  codec-raw / codec-kseg = decompressed MB/s of the segment's batch payloads (library's plain call / "
          "kafkaseg.codecs.decompress); kseg file / kseg dec = kafkaseg.iter_batches MB/s of file bytes / of\n"
          "  decompressed record bytes (default options: local files decoded from guarded mappings); kseg rec/s = "
          "iter_batches records/s; pread file = iter_batches(readMode=pread) MB/s of file bytes;\n"
          "  kernel rec/s = compiled kernel on "
          "preads of scan's chunk size; client and pure rates are on the subsets given in the JSON/header; cy/py = compiled "
          "over pure twin.")
    print()
    verdicts = []
    for r in results:
        for desc, value, floor, ok in floors(r):
            print(f"{'PASS' if ok else 'FAIL'}  {desc} = {value:.3f} (floor {floor:g})")
            verdicts.append({"check": desc, "value": value, "floor": floor, "pass": ok})
        if r["codec"] == "none":  # the same ratio against memory bandwidth, for comparison with earlier runs
            print(f"info  {r['codec']:>6} {size_label(r['batch_bytes']):>3} batches: kafkaseg file MB/s / sum over "
                  f"an already-mapped file = {r['scan_file_MBps'] / r['mapped_sum_MBps']:.3f}")
    failed = sum(not v["pass"] for v in verdicts)
    print(f"floors: {len(verdicts) - failed} PASS, {failed} FAIL")
    return verdicts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=200, help="segment size in MiB (default 200)")
    parser.add_argument("--codecs", default=",".join(ALL_CODECS))
    parser.add_argument("--batch-sizes", default="16k,1m", help="uncompressed batch sizes, e.g. 16k,1m")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per measurement; the best is kept (>= 3)")
    parser.add_argument("--subset-mb", type=float, default=20, help="MiB of whole batches given to the clients")
    parser.add_argument("--pure-mb", type=float, default=2, help="MiB of whole batches given to the pure twin")
    parser.add_argument("--no-clients", action="store_true", help="skip aiokafka and kafka-python")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 MiB segments, tiny subsets")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.size_mb, args.subset_mb, args.pure_mb = min(args.size_mb, 4), min(args.subset_mb, 0.25), \
            min(args.pure_mb, 0.25)
    args.runs = max(3, args.runs)
    args.size_bytes = int(args.size_mb * MiB)
    args.subset_bytes = int(args.subset_mb * MiB)
    args.pure_bytes = int(args.pure_mb * MiB)
    codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    for c in codecs:
        if c not in ALL_CODECS:
            parser.error(f"unknown codec {c!r} (choose from {', '.join(ALL_CODECS)})")
    batch_sizes = [parse_size(s) for s in args.batch_sizes.split(",") if s.strip()]

    info = machine()
    print(machine_line(info))
    clients = {}
    if not args.no_clients:
        for key, factory in (("aiokafka", aiokafka_memory_records), ("kafka_python", kafka_python_memory_records)):
            try:
                cls, label = factory()
            except ImportError as exc:
                print(f"{key}: not installed ({exc}); its floor is skipped")
                continue
            clients[key] = (cls, label)
    kernel_name = "compiled (_kernel.pyx)" if _compiled_kernel else f"{kdecode.IMPLEMENTATION} (compiled missing!)"
    print(f"kafkaseg {kafkaseg.__version__}: kernel {kernel_name}, iter_batches uses {kdecode.IMPLEMENTATION}; "
          f"codecs {available_codecs()}")
    print("clients: " + (", ".join(label for _, label in clients.values()) or "none"))
    print(f"segments: {args.size_mb:g} MiB each, codecs {','.join(codecs)}, batch sizes "
          f"{','.join(size_label(b) for b in batch_sizes)}; best of {args.runs} runs; clients on the first "
          f"{args.subset_mb:g} MiB, pure twin on the first {args.pure_mb:g} MiB of each segment; one core")
    memcpy = memcpy_rate(args.runs)
    print(f"memcpy (RAM -> RAM, 64 MiB, np.copyto): {memcpy:,.0f} MB/s")
    print(flush=True)

    results = []
    started = time.perf_counter()
    with scratch_dir("kafkaseg-bench-") as root:
        for batch_bytes in batch_sizes:
            for codec in codecs:
                t0 = time.perf_counter()
                results.append(bench_segment(root, codec, batch_bytes, args, clients))
                print(f"  measured {codec}/{size_label(batch_bytes)} in {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr, flush=True)
    print()
    verdicts = print_report(results, info)
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "memcpy_MBps": memcpy, "args": {k: v for k, v in vars(args).items()},
                       "clients": {k: label for k, (_, label) in clients.items()}, "kernel": kernel_name,
                       "results": results, "floors": verdicts}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
