"""The compiled kernel reads its input in place, and under ``readMode=mmap`` that input is a shared mapping of a file
a broker may rewrite while the kernel runs (cramjam and crc32c release the GIL). Nothing read twice from the input
may size a write: these tests change the input while it is being decoded and require only clean outcomes.
Each runs in a subprocess, so a memory error fails the test instead of the test run.
"""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkaseg.decode import DecodeRequest
from kafkaseg.errors import KafkaSegError
from kafkaseg.storage import fs
from kafkaseg.testing import Record, build_batch_v2

try:
    from kafkaseg.decode import _kernel as _compiled
except ImportError:  # pragma: no cover
    _compiled = None

needs_compiled = pytest.mark.skipif(_compiled is None, reason="compiled kernel not built")
ROOT = Path(__file__).resolve().parents[1]

# A thread flips a few bytes of the batch back and forth while the kernel decodes it: a xerial snappy block's
# declared size (small in one state, 3 MiB in the other, after a 4 MiB first block sizes the scratch buffer), or an
# lz4 block's size field. Every outcome must be a result or a KafkaSegError.
_FLIPPER = textwrap.dedent("""
    import random, struct, sys, threading, time
    import cramjam, lz4.block
    from kafkaseg.decode import DecodeRequest, _kernel as K
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.testing.writer import assemble_batch_v2
    codec = sys.argv[1]
    rng = random.Random(0)
    words = [bytes(rng.randbytes(rng.randint(3, 9))) for _ in range(500)]
    if codec == "snappy":
        raw1 = b"".join(rng.choice(words) for _ in range(700_000))[:(4 << 20) - 200]
        blk1 = bytes(cramjam.snappy.compress_raw(raw1))
        big = bytes(cramjam.snappy.compress_raw(bytes(3 << 20)))  # declares 3 MiB in a 3-byte varint
        small = bytes([0x8A, 0x80, 0x00]) + big[3:]  # the same block declaring 10 bytes
        payload = (b"\\x82SNAPPY\\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(blk1)) + blk1
                   + struct.pack(">i", len(small)) + small)
        states = (small[:3], big[:3])
        tail = len(small)
    else:
        raw = b"".join(rng.choice(words) for _ in range(20_000))[:60_000]
        block = lz4.block.compress(raw, store_size=False)
        header = bytes.fromhex("04224d18") + bytes([0x60, 0x40, 0x82])
        # two blocks: while the first decodes (GIL released) the second's size field flips
        payload = header + (struct.pack("<I", len(block)) + block) * 2 + bytes(4)
        states = (struct.pack("<I", len(block)), struct.pack("<I", 0x80000000 | (4 << 20)))  # "raw 4 MiB"
        tail = 4 + len(block) + 4
    batch = bytearray(assemble_batch_v2(base_offset=0, partition_leader_epoch=0, attributes=2 if codec == "snappy"
                                        else 3, last_offset_delta=0, base_timestamp=0, max_timestamp=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=1,
                                        payload=payload))
    at = len(batch) - tail
    stop = False
    def flip():
        view = memoryview(batch)
        while not stop:
            for state in states:
                view[at:at + len(state)] = state
                time.sleep(0)
    threading.Thread(target=flip, daemon=True).start()
    request = DecodeRequest(path="x.log", verify_crc=False)
    outcomes = 0
    for _ in range(300):
        try:
            K.decode(batch, request)
        except KafkaSegError:
            pass
        outcomes += 1
    stop = True
    print("clean outcomes:", outcomes)
""")


@needs_compiled
@pytest.mark.parametrize("codec", ["snappy", "lz4"])
def test_input_changing_under_the_codec_fast_paths_never_corrupts_memory(codec):
    proc = subprocess.run([sys.executable, "-c", _FLIPPER, codec], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "clean outcomes: 300" in proc.stdout


@needs_compiled
def test_views_handed_to_the_python_codecs_keep_the_input_alive():
    """A corrupt batch's error keeps the codec's frame (and its view of the payload) in the traceback; that view
    must hold the input exported, so a mapping or a reused read buffer cannot be released under it."""
    records = [Record(i, 1, b"k", b"v" * 100, []) for i in range(20)]
    batch = bytearray(build_batch_v2(records, codec="gzip").data)
    batch[-8] ^= 0xFF  # inside the gzip trailer/stream: the Python codec path fails
    with pytest.raises(KafkaSegError) as info:
        _compiled.decode(memoryview(batch), DecodeRequest(path="g.log", verify_crc=False))
    views = []
    err = info.value
    while err is not None:
        tb = err.__traceback__
        while tb is not None:
            views += [v for v in tb.tb_frame.f_locals.values() if isinstance(v, memoryview)]
            tb = tb.tb_next
        err = err.__cause__
    assert views, "expected the codec's frame to hold its payload view"
    assert all(v.obj is not None for v in views)  # owned views: they keep their exporter alive
    gc.collect()


@pytest.mark.skipif(not fs.MAPPING_AVAILABLE, reason="kafkaseg.storage._mapped not compiled")
def test_the_guard_never_chains_to_itself(tmp_path):
    """faulthandler enabled while a mapping is open and disabled after it closed puts the guard's own handler back
    with no mapping open; the next mapping must not then save it as "the previous handler" (a foreign SIGBUS
    would call itself forever)."""
    script = textwrap.dedent(f"""
        import faulthandler, mmap, os
        from kafkaseg.storage._mapped import MappedRange
        faulthandler.disable()
        path = {str(tmp_path / "f")!r}
        open(path, "wb").write(b"x" * 65536)
        fd = os.open(path, os.O_RDONLY)
        first = MappedRange(fd, 0, 4096)
        faulthandler.enable()
        first.close()
        faulthandler.disable()
        second = MappedRange(fd, 0, 4096)
        other = mmap.mmap(fd, 65536, prot=mmap.PROT_READ)
        os.truncate(path, 0)
        other[40000]
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == -signal.SIGBUS
