"""A file-only live broker for the live-disk tests: several log dirs (JBOD) written while readers read them.

Run as ``python tests/live_broker.py ROOT SECONDS SEED``; it writes ``ROOT/d0`` and ``ROOT/d1`` (the log dirs),
``ROOT/markers.jsonl`` (the time each transaction marker write began, before the write) and, at the end,
``ROOT/truth.json`` (every batch of the final logs) -- what :func:`check_read` judges reads against.

What it does, each as a broker does it (see /work/shared/reference/kafka-on-disk.md):

- producers: one without a producer id, one idempotent, three transactional; transactions span batches and segment
  rolls, end with a COMMIT or ABORT marker written later, an ABORT appends a ``.txnindex`` entry (``lastStableOffset``
  = the first offset of the earliest other open transaction, else the marker's offset + 1) to the active segment;
- appends sometimes seen half written; ``.index``/``.timeindex`` preallocated zero-filled, trimmed on roll;
- ``file.preallocate=true`` on some partitions: the active ``.log`` is zero-filled to ``SEGMENT_BYTES`` at creation
  and written in place, trimmed to its size on roll;
- a producer snapshot written in place at each roll (readers can see it torn), carrying the open transactions;
- the high watermark lags the log end; checkpoints (per log dir, ``.tmp`` then rename) lag it further;
- follower truncation (``UnifiedLog.truncateTo``): to a batch boundary at or above the high watermark, deleting later
  segments (``.deleted`` rename, then delete), truncating the active segment's ``.log`` and ``.txnindex``, leaving the
  index entries past the cut in place (``truncateToEntries`` only moves the position; a segment active again gets its
  indexes resized to full size), deleting producer snapshots above the cut, a new leader epoch at the cut. What follows
  is a new generation of records at the same offsets (the value says which).

Every record's key, timestamp and value are a function of what it is (:func:`value_of`), so readers check each one.
:func:`run_live` runs it beside readers and judges them (:func:`check_rows`). Reads past the high watermark
(``upperBound=logEndOffset``, ``consume --to-log-end``), which a truncation of the same partition can overtake, are
judged by :func:`check_past_watermark`: no error, each record as some generation wrote it, offsets increasing,
no offset skipped but a transaction marker's (of the generations the reader went through: the broker records every
marker it writes, truncated ones too).
"""
import json
import os
import random
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkaseg.testing import Record, build_batch_v2  # noqa: E402
from kafkaseg.testing.partition import (ProducerEntry, encode_producer_snapshot, write_meta_properties,  # noqa: E402
                                        write_offset_checkpoint, write_partition_metadata)
from kafkaseg.testing.writer import build_control_batch  # noqa: E402

OFF = struct.Struct(">ii")
TIM = struct.Struct(">qi")
TXN = struct.Struct(">hqqqq")
INDEX_BYTES = 64 * 1024
INTERVAL = 1024
SEGMENT_BYTES = 16 * 1024
T0 = 1_700_000_000_000
TOPIC = "tx"
# (partition, log dir, file.preallocate)
LAYOUT = [(0, 0, True), (1, 1, True), (2, 1, False), (3, 0, False)]
TXN_PIDS = (1001, 1002, 1003)
IDEMPOTENT_PID = 2001
ABORT, COMMIT = 0, 1


def key_of(offset):
    return b"k%d" % offset


def ts_of(offset):
    return T0 + offset


def value_of(partition, offset, gen, pid, txn, fate):
    """fate: N (not transactional), C (its transaction commits), A (aborts)."""
    return b"p%d/o%d/g%d/pid%d/x%d/%s/" % (partition, offset, gen, pid, txn, fate.encode()) + b"." * (offset % 23)


def parse_value(value):
    p, o, g, pid, x, fate = value.split(b"/")[:6]
    return int(p[1:]), int(o[1:]), int(g[1:]), int(pid[3:]), int(x[1:]), fate.decode()


def name(base, suffix):
    return "%020d%s" % (base, suffix)


class Seg:
    def __init__(self, folder, base, preallocate, reopen=None):
        self.folder, self.base, self.preallocate = folder, base, preallocate
        self.n_off = self.n_tim = 0
        self.since = 0
        self.last_ts_entry = -1
        self.max_ts = self.off_of_max = -1
        path = folder / name(base, ".log")
        if reopen is None:
            with open(path, "wb") as f:
                if preallocate:
                    f.truncate(SEGMENT_BYTES)
            self.size = 0
            for suffix in (".index", ".timeindex"):
                with open(folder / name(base, suffix), "wb") as f:
                    f.truncate(INDEX_BYTES - INDEX_BYTES % (8 if suffix == ".index" else 12))
        else:  # a segment active again after a truncation: state as given, indexes resized to full size
            self.size, self.n_off, self.n_tim, self.last_ts_entry, self.max_ts, self.off_of_max = reopen
            for suffix in (".index", ".timeindex"):
                with open(folder / name(base, suffix), "r+b") as f:
                    f.truncate(INDEX_BYTES - INDEX_BYTES % (8 if suffix == ".index" else 12))
        self.fd = os.open(path, os.O_RDWR)
        self.idx = os.open(folder / name(base, ".index"), os.O_RDWR)
        self.tix = os.open(folder / name(base, ".timeindex"), os.O_RDWR)

    def state(self):
        return (self.size, self.n_off, self.n_tim, self.last_ts_entry, self.max_ts, self.off_of_max)

    def append(self, data, last_offset, max_ts, rng):
        pos = self.size
        if rng.random() < 0.15 and len(data) > 100:  # a write seen half done
            cut = rng.randint(1, len(data) - 1)
            os.pwrite(self.fd, data[:cut], pos)
            time.sleep(rng.random() * 0.01)
            os.pwrite(self.fd, data[cut:], pos + cut)
        else:
            os.pwrite(self.fd, data, pos)
        self.size += len(data)
        if max_ts > self.max_ts:
            self.max_ts, self.off_of_max = max_ts, last_offset
        if self.since > INTERVAL:
            os.pwrite(self.idx, OFF.pack(last_offset - self.base, pos), self.n_off * 8)
            self.n_off += 1
            self._time_entry(self.max_ts, self.off_of_max)
            self.since = 0
        self.since += len(data)

    def _time_entry(self, ts, off):
        if ts > self.last_ts_entry:
            os.pwrite(self.tix, TIM.pack(ts, off - self.base), self.n_tim * 12)
            self.n_tim += 1
            self.last_ts_entry = ts

    def become_inactive(self):
        # LogSegment.onBecomeInactiveSegment: final time entry, indexes and (preallocated) log trimmed
        self._time_entry(self.max_ts, self.off_of_max)
        os.ftruncate(self.idx, self.n_off * 8)
        os.ftruncate(self.tix, self.n_tim * 12)
        os.ftruncate(self.fd, self.size)
        self.close()

    def close(self):
        for fd in (self.idx, self.tix, self.fd):
            os.close(fd)


class Partition:
    def __init__(self, root, partition, preallocate, rng):
        self.partition, self.preallocate, self.rng = partition, preallocate, rng
        self.folder = root / f"{TOPIC}-{partition}"
        self.folder.mkdir()
        write_partition_metadata(self.folder / "partition.metadata", "dG9waWMtdHgtaWQtMDAwMQ")
        self.batches = []  # dicts: base, last, gen, pid, txn, fate, control, seg, pos, size, epoch, seq
        self.controls = []  # (gen, offset) of every marker ever written, truncated ones too (check_past_watermark)
        self.seg_states = {}  # base -> Seg.state() when it became inactive
        self.segments = [0]
        self.active = Seg(self.folder, 0, preallocate)
        self.next = 0
        self.hw = 0
        self.gen = 0
        self.epochs = [(0, 0)]
        self.open = {}  # pid -> txn number
        self.txn_first = {}  # pid -> first offset of its open transaction
        self.fates = {}  # (pid, txn) -> "C" | "A"
        self.txn_no = {pid: 0 for pid in TXN_PIDS}
        self.seq = {pid: 0 for pid in TXN_PIDS + (IDEMPOTENT_PID,)}
        self.pending_delete = []
        self.markers = []  # (time, partition, pid, txn), for markers.jsonl
        self._write_epochs()

    def _write_epochs(self):
        tmp = self.folder / "leader-epoch-checkpoint.tmp"
        tmp.write_text("0\n%d\n" % len(self.epochs) + "".join(f"{e} {o}\n" for e, o in self.epochs))
        os.replace(tmp, self.folder / "leader-epoch-checkpoint")

    # appends ----------------------------------------------------------------------------------------------------
    def _append(self, encoded, meta):
        if self.active.size > 0 and self.active.size + len(encoded.data) > SEGMENT_BYTES:
            self.roll()
        meta.update(base=encoded.first_offset, last=encoded.last_offset, gen=self.gen, seg=self.active.base,
                    pos=self.active.size, size=len(encoded.data))
        self.batches.append(meta)
        self.active.append(encoded.data, encoded.last_offset, encoded.max_timestamp, self.rng)
        self.next = encoded.last_offset + 1

    def append_data(self):
        rng = self.rng
        kind = rng.random()
        n = rng.randint(1, 8)
        first = self.next
        if kind < 0.2:
            pid, txn, fate, attrs = -1, 0, "N", {}
        elif kind < 0.35:
            pid, txn, fate = IDEMPOTENT_PID, 0, "N"
            attrs = dict(producer_id=pid, producer_epoch=0, base_sequence=self.seq[pid])
        else:
            pid = rng.choice(TXN_PIDS)
            if pid not in self.open:
                self.txn_no[pid] += 1
                self.open[pid] = self.txn_no[pid]
                self.txn_first[pid] = first
                self.fates[(pid, self.txn_no[pid])] = "A" if rng.random() < 0.4 else "C"
            txn = self.open[pid]
            fate = self.fates[(pid, txn)]
            attrs = dict(producer_id=pid, producer_epoch=0, base_sequence=self.seq[pid], is_transactional=True)
        if pid != -1:
            self.seq[pid] += n
        recs = [Record(o, ts_of(o), key_of(o), value_of(self.partition, o, self.gen, pid, txn, fate))
                for o in range(first, first + n)]
        b = build_batch_v2(recs, codec=rng.choice(["none", "none", "lz4", "gzip"]),
                           partition_leader_epoch=self.epochs[-1][0], **attrs)
        self._append(b, dict(pid=pid, txn=txn, fate=fate, control=False))

    def end_txn(self, pid, root):
        txn = self.open.pop(pid)
        first = self.txn_first.pop(pid)
        fate = self.fates[(pid, txn)]
        offset = self.next
        self.markers.append({"t": time.time(), "p": self.partition, "pid": pid, "txn": txn})
        marker_log(root, self.markers)
        b = build_control_batch(offset, ts_of(offset), COMMIT if fate == "C" else ABORT, producer_id=pid,
                                producer_epoch=0, partition_leader_epoch=self.epochs[-1][0])
        self._append(b, dict(pid=pid, txn=txn, fate=fate, control=True))
        self.controls.append((self.gen, offset))
        if fate == "A":  # LogSegment.updateTxnIndex, at the marker's append
            lso = min(self.txn_first.values(), default=offset + 1)
            with open(self.folder / name(self.active.base, ".txnindex"), "ab") as f:
                f.write(TXN.pack(0, pid, first, offset, lso))

    def step(self, root):
        for _ in range(self.rng.randint(1, 4)):
            self.append_data()
        for pid in list(self.open):
            if self.rng.random() < 0.15:
                self.end_txn(pid, root)
        # the high watermark: the log end (all in sync), or the base of a batch a little behind it
        behind = [b["base"] for b in self.batches[-self.rng.randint(1, 6):]]
        self.hw = max(self.hw, self.next if self.rng.random() < 0.3 else behind[0])

    def roll(self):
        new = self.next
        entries = [ProducerEntry(pid, 0, self.seq[pid] - 1, new - 1, 0, ts_of(new - 1), 0,
                                 self.txn_first.get(pid, -1))
                   for pid in TXN_PIDS + (IDEMPOTENT_PID,) if self.seq[pid] > 0]
        snap = encode_producer_snapshot(entries)
        with open(self.folder / name(new, ".snapshot"), "wb") as f:  # written in place: may be seen torn
            cut = self.rng.randint(0, len(snap))
            f.write(snap[:cut])
            f.flush()
            time.sleep(self.rng.random() * 0.02)
            f.write(snap[cut:])
        self.seg_states[self.active.base] = self.active.state()
        self.active.become_inactive()
        self.active = Seg(self.folder, new, self.preallocate)
        self.segments.append(new)

    # truncation -------------------------------------------------------------------------------------------------
    def truncate(self):
        """UnifiedLog.truncateTo(target), target a batch boundary in [hw, log end)."""
        cands = [b["base"] for b in self.batches if b["base"] >= self.hw]
        if not cands:
            return None
        target = self.rng.choice(cands[-40:])
        keep = [b for b in self.batches if b["last"] < target]
        cut = [b for b in self.batches if b["base"] >= target]
        assert len(keep) + len(cut) == len(self.batches)
        later = [s for s in self.segments if s > target]
        if later and later[-1] == self.active.base:
            self.active.close()
        for s in later:
            self.segments.remove(s)
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                p = self.folder / name(s, suffix)
                if p.exists():
                    p.rename(p.with_name(p.name + ".deleted"))
                    self.pending_delete.append((time.time() + self.rng.uniform(0.2, 2.0),
                                                p.with_name(p.name + ".deleted")))
        base = self.segments[-1]
        if later:
            self.active = Seg(self.folder, base, False, reopen=self.seg_states.pop(base))
        seg_batches = [b for b in keep if b["seg"] == base]
        size = seg_batches[-1]["pos"] + seg_batches[-1]["size"] if seg_batches else 0
        # indexes: truncateToEntries (entries past the cut stay in the file until overwritten)
        n_off = entries_below(self.active.idx, self.active.n_off, 8, lambda e: OFF.unpack(e)[0], target - base)
        n_tim = entries_below(self.active.tix, self.active.n_tim, 12, lambda e: TIM.unpack(e)[1], target - base)
        self.active.n_off, self.active.n_tim = n_off, n_tim
        self.active.last_ts_entry = TIM.unpack(os.pread(self.active.tix, 12, (n_tim - 1) * 12))[0] if n_tim else -1
        txi = self.folder / name(base, ".txnindex")
        if txi.exists():
            data = txi.read_bytes()
            ents = [data[i:i + 34] for i in range(0, len(data), 34)]
            kept = [e for e in ents if TXN.unpack(e)[3] < target]
            with open(txi, "r+b") as f:
                f.truncate(34 * len(kept))
        os.ftruncate(self.active.fd, size)  # FileRecords.truncateTo: the preallocated tail goes too
        self.active.size = size
        self.active.since = 0
        self.active.max_ts = max((ts_of(b["last"]) for b in seg_batches), default=-1)
        self.active.off_of_max = max((b["last"] for b in seg_batches), default=-1)
        for snap in self.folder.glob("*.snapshot"):
            if int(snap.name[:20]) > target:
                snap.unlink()
        self.batches = keep
        self.next = target
        # producer state rebuilt from the log kept
        self.open, self.txn_first = {}, {}
        for b in keep:
            if b["pid"] in TXN_PIDS:
                if b["control"]:
                    self.open.pop(b["pid"], None)
                    self.txn_first.pop(b["pid"], None)
                elif b["pid"] not in self.open:
                    self.open[b["pid"]] = b["txn"]
                    self.txn_first[b["pid"]] = b["base"]
        self.gen += 1
        epoch = self.epochs[-1][0] + 1
        self.epochs = [(e, o) for e, o in self.epochs if o < target] + [(epoch, target)]
        self._write_epochs()
        return target

    def reap(self):
        now = time.time()
        for t, p in [x for x in self.pending_delete if x[0] <= now]:
            p.unlink(missing_ok=True)
        self.pending_delete = [x for x in self.pending_delete if x[0] > now]


def entries_below(fd, count, size, relative_offset, limit):
    """How many of an index file's first ``count`` entries hold a relative offset below ``limit``."""
    n = 0
    while n < count and relative_offset(os.pread(fd, size, n * size)) < limit:
        n += 1
    return n


def marker_log(root, markers):
    with open(root / "markers.jsonl", "a") as f:
        while markers:
            f.write(json.dumps(markers.pop(0)) + "\n")
        f.flush()


def log_dirs(root):
    return [str(Path(root) / "d0"), str(Path(root) / "d1")]


def main():
    root = Path(sys.argv[1])
    seconds = float(sys.argv[2])
    rng = random.Random(int(sys.argv[3]))
    dirs = [root / "d0", root / "d1"]
    for i, d in enumerate(dirs):
        d.mkdir(parents=True)
        write_meta_properties(d / "meta.properties", cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=1,
                              directory_id=f"BBBBBBBBBBBBBBBBBBBBB{'AB'[i]}")
    parts = {p: (Partition(dirs[d], p, pre, rng), d) for p, d, pre in LAYOUT}

    def checkpoints():
        for i, d in enumerate(dirs):
            mine = {(TOPIC, p): part for p, (part, dd) in parts.items() if dd == i}
            write_offset_checkpoint(d / "replication-offset-checkpoint", {k: v.hw for k, v in mine.items()})
            write_offset_checkpoint(d / "recovery-point-offset-checkpoint",
                                    {k: min(v.segments[-1], v.hw) for k, v in mine.items()})
            write_offset_checkpoint(d / "log-start-offset-checkpoint", {k: 0 for k in mine})

    checkpoints()
    (root / "started").write_text("")
    end = time.time() + seconds
    last_cp = 0.0
    truncations = []
    while time.time() < end:
        for part, _ in parts.values():
            part.step(root)
            if rng.random() < 0.02:
                target = part.truncate()
                if target is not None:
                    truncations.append((part.partition, target, time.time()))
            part.reap()
        if time.time() - last_cp > rng.uniform(0.05, 0.6):
            checkpoints()
            last_cp = time.time()
        time.sleep(rng.uniform(0.002, 0.02))
    for part, _ in parts.values():
        part.hw = part.next
    checkpoints()
    truth = {p: {"batches": part.batches, "hw": part.hw, "open": {str(k): v for k, v in part.txn_first.items()},
                 "segments": part.segments, "controls": part.controls}
             for p, (part, _) in parts.items()}
    (root / "truth.json.tmp").write_text(json.dumps({"partitions": truth, "truncations": truncations}))
    os.replace(root / "truth.json.tmp", root / "truth.json")



# checking reads ---------------------------------------------------------------------------------------------------
class Truth:
    """The final logs (truth.json) and marker times (markers.jsonl) of a finished run."""

    def __init__(self, root):
        root = Path(root)
        doc = json.loads((root / "truth.json").read_text())
        self.truncations = doc["truncations"]
        self.data = {}  # partition -> {offset: (gen, pid, txn, fate)}
        self.lso = {}
        self.leo = {}
        for p, t in doc["partitions"].items():
            p = int(p)
            self.data[p] = {o: (b["gen"], b["pid"], b["txn"], b["fate"])
                            for b in t["batches"] if not b["control"] for o in range(b["base"], b["last"] + 1)}
            self.leo[p] = t["hw"]
            self.lso[p] = min(list(t["open"].values()) + [t["hw"]])
        # partition -> offset -> the generations in which a transaction marker stood there (past the high
        # watermark a reader can meet one that a truncation later replaced)
        self.controls = {}
        for p, t in doc["partitions"].items():
            for gen, o in t["controls"]:
                self.controls.setdefault(int(p), {}).setdefault(o, set()).add(gen)
        self.marker_at = {}
        for line in (root / "markers.jsonl").read_text().splitlines() if (root / "markers.jsonl").exists() else []:
            m = json.loads(line)
            key = (m["p"], m["pid"], m["txn"])
            self.marker_at[key] = min(self.marker_at.get(key, m["t"]), m["t"])

    def visible(self, p, o, committed):
        fate = self.data[p][o][3]
        return not committed or fate != "A"


def rows_of(table):
    cols = [table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")]
    ts = [t.as_py() for t in table.column("timestamp").cast("int64")]
    return list(zip(*cols, ts))


def check_rows(truth, rows, *, committed, read_end, final=False, what="read"):
    """Problems with one read's rows (topic, partition, offset, key, value, timestamp in us), judged against the
    finished run: each record as written, of the generation the log kept (reads stop at the high watermark, below
    which nothing is truncated), per partition exactly the records of [0, last returned] (read_committed: none
    aborted, none of a transaction whose marker was not yet being written when the read ended); ``final``: a read
    after the broker stopped, which must reach the log end (read_committed: the last stable offset)."""
    problems = []
    by = {}
    for topic, p, o, k, v, ts in rows:
        by.setdefault(p, []).append(o)
        if topic != TOPIC or k != key_of(o) or ts != ts_of(o) * 1000:
            problems.append(f"{what}: {topic}-{p}@{o}: key/timestamp differ: {k!r} {ts}")
            continue
        vp, vo, gen, pid, txn, fate = parse_value(v)
        if (vp, vo) != (p, o):
            problems.append(f"{what}: {p}@{o}: value of {vp}@{vo}")
        elif o not in truth.data[p]:
            problems.append(f"{what}: {p}@{o}: not a data record of the final log (gen {gen})")
        elif truth.data[p][o] != (gen, pid, txn, fate):
            problems.append(f"{what}: {p}@{o}: {(gen, pid, txn, fate)} truncated later, the log kept "
                            f"{truth.data[p][o]}")
        elif committed and fate == "A":
            problems.append(f"{what}: {p}@{o}: aborted record under read_committed (pid {pid} txn {txn})")
        elif committed and pid in TXN_PIDS and truth.marker_at.get((p, pid, txn), float("inf")) > read_end:
            problems.append(f"{what}: {p}@{o}: record of a transaction open when the read ended (pid {pid} "
                            f"txn {txn})")
        if len(problems) > 20:
            return problems
    for p, offs in by.items():
        if offs != sorted(set(offs)):
            problems.append(f"{what}: partition {p}: offsets not strictly increasing")
            continue
        want = [o for o in sorted(truth.data[p]) if o <= offs[-1] and truth.visible(p, o, committed)]
        if offs != want:
            missing = sorted(set(want) - set(offs))[:10]
            extra = sorted(set(offs) - set(want))[:10]
            problems.append(f"{what}: partition {p}: missing {missing} extra {extra}")
    if final:
        for p in truth.data:
            end = truth.lso[p] if committed else truth.leo[p]
            want = [o for o in sorted(truth.data[p]) if o < end and truth.visible(p, o, committed)]
            if by.get(p, []) != want:
                problems.append(f"{what}: final read of partition {p}: {len(by.get(p, []))} records, "
                                f"{len(want)} below {end}")
    return problems


def run_live(root, seconds, seed, *, read_as=None, tools=True):
    """Run the broker for ``seconds`` while reading its log dirs over and over (read_uncommitted and read_committed
    batch reads, a read_committed ``follow``, the CLI); afterwards judge every read against the finished run.
    ``read_as``: where the readers find ``root`` (e.g. a read-only bind mount of it). ``tools``: also run ``verify``
    and ``describe`` (which must exit 0: no error for what a truncation past the high watermark rewrote or left, nor
    for an append begun while they look). Returns (problems, stats)."""
    import subprocess
    import threading

    import kafkaseg

    root = Path(root)
    broker = subprocess.Popen([sys.executable, __file__, str(root), str(seconds), str(seed)])
    while not (root / "started").exists():
        if broker.poll() is not None:
            raise RuntimeError(f"broker exited with {broker.returncode}")
        time.sleep(0.05)
    dirs = log_dirs(root if read_as is None else read_as)
    committed_opt = {"kafka.isolation.level": "read_committed"}
    reads = []  # (what, rows, committed, ended, began) or (what, traceback text, began, ended)
    followed = []
    follow_errors = []

    def follow():
        try:
            for b in kafkaseg.follow(dirs, startingOffsets="earliest", idle_timeout=3, poll_interval=0.2,
                                     **committed_opt):
                followed.extend(rows_of_batch(b))
        except Exception as exc:  # noqa: BLE001
            follow_errors.append(repr(exc))

    cli_runs = []  # (what, rc, stdout, stderr, read_end)
    cli_args = [a for d in dirs for a in ("--data-dir", d)]
    consume = ["consume", *cli_args, "--topic", TOPIC, "--from-beginning", "--timeout-ms", "1000",
               "--property", "print.offset=true", "--property", "print.partition=true",
               "--property", "print.key=true", "--property", "print.timestamp=true"]
    cli_ops = [("verify", ["verify", "--no-progress", *dirs]),  # (both tools among the first 4: a loaded run may
               ("offsets committed", ["offsets", *cli_args, "--time", "-1", "--isolation", "read_committed"]),
               ("describe", ["describe", *dirs]),  # do no more)
               ("consume committed", consume + ["--isolation-level", "read_committed"]),
               ("consume to log end", consume + ["--to-log-end"])]
    if not tools:
        cli_ops = [op for op in cli_ops if op[0] not in ("verify", "describe")]

    def cli():
        j = 0
        while broker.poll() is None:
            what, args = cli_ops[j % len(cli_ops)]
            j += 1
            began = time.time()
            r = subprocess.run([sys.executable, "-m", "kafkaseg", *args], capture_output=True, text=True,
                               timeout=120)
            cli_runs.append((what, r.returncode, r.stdout, r.stderr, began, time.time()))

    follower = threading.Thread(target=follow)
    follower.start()
    clier = threading.Thread(target=cli)
    clier.start()
    ops = [("read_arrow", {}), ("read_arrow committed", committed_opt), ("iter_batches committed", committed_opt),
           ("read_arrow to log end", {"upperBound": "logEndOffset"})]
    i = 0
    while broker.poll() is None:
        what, opts = ops[i % len(ops)]
        i += 1
        began = time.time()
        try:
            if what.startswith("iter_batches"):
                import pyarrow as pa
                batches = list(kafkaseg.iter_batches(dirs, **opts))
                rows = rows_of(pa.Table.from_batches(batches)) if batches else []
            else:
                rows = rows_of(kafkaseg.read_arrow(dirs, **opts))
            reads.append((what, rows, bool(opts), time.time(), began))
        except Exception:  # noqa: BLE001
            import traceback
            reads.append((what, traceback.format_exc(), began, time.time()))
    if broker.returncode != 0:
        raise RuntimeError(f"broker exited with {broker.returncode}")
    finals = [(what + " final", rows_of(kafkaseg.read_arrow(dirs, **opts)), bool(opts), time.time())
              for what, opts in ops[:2]]
    follower.join()
    clier.join()
    truth = Truth(root)
    problems = []
    for r in reads:
        if isinstance(r[1], str):  # (what, traceback, began, ended)
            problems.append(f"{r[0]} raised: {r[1]}")
        elif r[0].endswith("to log end"):
            problems += check_past_watermark(truth, r[1], what=r[0])
        else:
            problems += check_rows(truth, r[1], committed=r[2], read_end=r[3], what=r[0])
    for what, rc, out, err, began, end in cli_runs:
        if rc != 0 or "Traceback" in err:
            problems.append(f"kafkaseg {what}: exit {rc}: {out[-800:]} {err[-1500:]}")
        elif what == "offsets committed":
            for line in out.split():
                _, p, lso = line.split(":")
                p, lso = int(p), int(lso)
                open_below = [o for o, (_, pid, txn, _) in truth.data[p].items() if o < lso and pid in TXN_PIDS
                              and truth.marker_at.get((p, pid, txn), float("inf")) > end]
                if open_below:
                    problems.append(f"kafkaseg offsets --isolation read_committed: {p}: {lso} is above "
                                    f"{min(open_below)} of a transaction open then")
        elif what.startswith("consume"):
            rows = []
            for line in out.splitlines():
                ts, part, off, k, v = line.split("\t")
                rows.append((TOPIC, int(part.split(":")[1]), int(off.split(":")[1]), k.encode(), v.encode(),
                             int(ts.split(":")[1]) * 1000))
            if what.endswith("to log end"):
                problems += check_past_watermark(truth, rows, what=what)
            else:
                problems += check_rows(truth, rows, committed=True, read_end=end, what=what)
    for what, rows, committed, end in finals:
        problems += check_rows(truth, rows, committed=committed, read_end=end, final=True, what=what)
    problems += [f"follow raised: {e}" for e in follow_errors]
    problems += check_rows(truth, followed, committed=True, read_end=time.time(), final=True, what="follow")
    stats = {"reads": len(reads), "followed": len(followed), "cli runs": len(cli_runs),
             "tool runs": {what: sum(1 for run in cli_runs if run[0] == what) for what in ("verify", "describe")},
             "truncations": len(truth.truncations),
             "records": {p: len(d) for p, d in truth.data.items()},
             "aborted": {p: sum(1 for v in d.values() if v[3] == "A") for p, d in truth.data.items()},
             "segments": {p: len(list(Path(dirs[d]).glob(f"{TOPIC}-{p}/*.log"))) for p, d, _ in LAYOUT}}
    return problems, stats


def check_past_watermark(truth, rows, *, what):
    """A read past the high watermark (records a truncation may replace), read_uncommitted from the log start:
    each record as written at its offset by some generation, offsets strictly increasing per partition, and no
    gap: between two offsets returned one after the other (generations g1 and g2; before the first, from offset 0
    and generation 0) every offset skipped held a transaction marker in some generation from g1 to g2 (the log
    the reader went through was of those generations: a marker it skipped may have been replaced since by a
    truncation, and a truncation at or below the last offset returned goes on at the next one, so it explains no
    gap). Where a read stops (its end bound, or the log end a truncation brought below it) is not judged: past the
    high watermark no end is promised."""
    problems = []
    last = {}
    for topic, p, o, k, v, ts in rows:
        if topic != TOPIC or k != key_of(o) or ts != ts_of(o) * 1000 or parse_value(v)[:2] != (p, o):
            problems.append(f"{what}: {topic}-{p}@{o}: not the record written there: {k!r} {v[:40]!r} {ts}")
            continue
        gen = parse_value(v)[2]
        before, before_gen = last.get(p, (-1, 0))
        if o <= before:
            problems.append(f"{what}: partition {p}: offset {o} after {before}")
        else:
            gens = range(min(before_gen, gen), max(before_gen, gen) + 1)
            markers = truth.controls.get(p, {})
            skipped = [x for x in range(before + 1, o) if not markers.get(x, set()).intersection(gens)]
            if skipped:
                problems.append(f"{what}: partition {p}: gap: offsets {skipped[:10]}{'...' if len(skipped) > 10 else ''}"
                                f" ({len(skipped)}) skipped between {before} (generation {before_gen}) and {o} "
                                f"(generation {gen}), no marker there in those generations")
        last[p] = (o, gen)
        if len(problems) > 20:
            break
    return problems


def rows_of_batch(batch):
    import pyarrow as pa
    return rows_of(pa.Table.from_batches([batch]))


if __name__ == "__main__":
    if len(sys.argv) == 4:
        main()
    else:  # by hand: live_broker.py ROOT SECONDS SEED check [READ_AS]
        found, seen = run_live(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]),
                               read_as=sys.argv[5] if len(sys.argv) > 5 else None)
        print(json.dumps(seen))
        print("\n".join(found[:60]) or "no problems")
