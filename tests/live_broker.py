"""A file-only live broker for the live-disk tests: several log dirs (JBOD) written while readers read them.

Run as ``python tests/live_broker.py ROOT SECONDS SEED [--retention] [--compact] [--move] [--fast-delete]``; it writes ``ROOT/d0`` and ``ROOT/d1`` (the log dirs),
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

- ``--retention`` (partitions :data:`RETAINED`): segment deletion as ``UnifiedLog.deleteSegments`` does it (the log
  start moves, each old segment's files renamed ``.deleted`` and removed later, its producer snapshot too), and
  DeleteRecords moving the log start inside a segment (``log-start-offset-checkpoint``, written as
  ``LogManager`` does, lists a partition only when its start is above its first segment's base);
- ``--compact`` (partitions :data:`COMPACTED`, whose keys repeat): the log cleaner (:meth:`Partition.clean`:
  ``.cleaned`` segments written, renamed ``.swap``, the old ones ``.deleted``, the ``.swap`` renamed in place;
  aborted data dropped, markers kept while their transaction has data then given a delete horizon, producers'
  last batches kept empty; ``cleaner-offset-checkpoint``) while transactions go on;
- ``--move`` (partition :data:`MOVED`): a move to the other log dir (``kafka-reassign-partitions`` with log dirs):
  a ``<topic>-<partition>.<id>-future`` folder there filled as ``ReplicaAlterLogDirsThread`` does while appends go
  on (both log dirs' checkpoints list the partition meanwhile), then :func:`replace_with_future`. No truncation of
  the partition while it moves;
- ``--fast-delete``: ``.deleted`` files and ``-delete`` folders removed 0.2 to 2 s after the rename, not
  :data:`DELETE_DELAY`.

Every removal is recorded with the time span in which readers could see it happen (``removed``), and the log end
offset after every change (``ends``), so that reads are judged honestly: a record removed before a read ended may
be missing from it, one removed before it began must be; a read to the log end must return every offset up to
the log end as of its start (but markers, removed records, and past a truncation during it).

Every record's key, timestamp and value are a function of what it is (:func:`value_of`), so readers check each one.
:func:`run_live` runs it beside readers and judges them (:func:`check_rows`). Reads past the high watermark
(``upperBound=logEndOffset``, ``consume --to-log-end``), which a truncation of the same partition can overtake, are
judged by :func:`check_past_watermark`: no error, each record as some generation wrote it, offsets increasing,
no offset skipped but a transaction marker's (of the generations the reader went through: the broker records every
marker it writes, truncated ones too) or a removed one, none missing up to the log end when the read began.
``check --hook`` has every ``consume --to-log-end`` truncate the partition it reads in the middle of reading it
(:func:`hooked`). Under ``--retention`` the readers read with ``failOnDataLoss=false`` (the default raises
``DataLossError`` for a segment deleted under a read, as Spark's source does).
"""
import bisect
import json
import os
import random
import shutil
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkaseg.testing import Record, build_batch_v2  # noqa: E402
from kafkaseg.testing.partition import (ProducerEntry, encode_producer_snapshot, write_meta_properties,  # noqa: E402
                                        write_offset_checkpoint, write_partition_metadata)
from kafkaseg.testing.writer import build_control_batch, control_key, end_txn_marker_value  # noqa: E402

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


#: partitions whose keys repeat (a compacted topic's: the cleaner keeps the last record of each key), when
#: ``--compact`` cleans them (partition 1 is also under ``--retention``: cleanup.policy=compact,delete)
COMPACTED = (1, 2)
#: partitions ``--retention`` deletes old segments of (and moves the log start of, as DeleteRecords does)
RETAINED = (0, 1)
KEYS = 41
#: delete.retention.ms of the compacted partitions: how long a marker whose transaction is all cleaned away stays
DELETE_RETENTION_MS = 1500


def key_of(partition, offset):
    return b"k%d" % (offset % KEYS if partition in COMPACTED else offset)


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
    def __init__(self, folder, base, preallocate, reopen=None, suffix=""):
        """``suffix``: ``.cleaned`` for the segment the cleaner writes."""
        self.folder, self.base, self.preallocate = folder, base, preallocate
        self.n_off = self.n_tim = 0
        self.since = 0
        self.last_ts_entry = -1
        self.max_ts = self.off_of_max = -1
        path = folder / name(base, ".log" + suffix)
        if reopen is None:
            with open(path, "wb") as f:
                if preallocate:
                    f.truncate(SEGMENT_BYTES)
            self.size = 0
            for kind in (".index", ".timeindex"):
                with open(folder / name(base, kind + suffix), "wb") as f:
                    f.truncate(INDEX_BYTES - INDEX_BYTES % (8 if kind == ".index" else 12))
        else:  # a segment active again after a truncation: state as given, indexes resized to full size
            self.size, self.n_off, self.n_tim, self.last_ts_entry, self.max_ts, self.off_of_max = reopen
            for kind in (".index", ".timeindex"):
                with open(folder / name(base, kind), "r+b") as f:
                    f.truncate(INDEX_BYTES - INDEX_BYTES % (8 if kind == ".index" else 12))
        self.fd = os.open(path, os.O_RDWR)
        self.idx = os.open(folder / name(base, ".index" + suffix), os.O_RDWR)
        self.tix = os.open(folder / name(base, ".timeindex" + suffix), os.O_RDWR)

    def state(self):
        return (self.size, self.n_off, self.n_tim, self.last_ts_entry, self.max_ts, self.off_of_max)

    def append(self, data, last_offset, max_ts, rng):
        pos = self.size
        if rng is not None and rng.random() < 0.15 and len(data) > 100:  # a write seen half done
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
    def __init__(self, root, partition, preallocate, rng, folder=None):
        """``folder``: the folder's name when not ``<topic>-<partition>`` (a ``-future`` copy's)."""
        self.partition, self.preallocate, self.rng = partition, preallocate, rng
        self.folder = root / (folder or f"{TOPIC}-{partition}")
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
        self.raw = {}  # batch base -> its bytes as in the log now
        self.log_start = 0
        self.start_moved = False  # a DeleteRecords moved log_start since the last checkpoint
        self.gone = set()  # data offsets retention or the cleaner removed
        self.removed = []  # [offsets, t0, t1]: removed from the files readers may list between t0 and t1
        self.ends = [(time.time(), 0)]  # (time, log end offset) after every change
        self.clean_end = 0  # cleaner-offset-checkpoint
        self.dead = set()  # bases of batches the cleaner dropped whole
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
        self.raw[encoded.first_offset] = encoded.data
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
        recs = [Record(o, ts_of(o), key_of(self.partition, o), value_of(self.partition, o, self.gen, pid, txn, fate))
                for o in range(first, first + n)]
        codec = rng.choice(["none", "none", "lz4", "gzip"])
        b = build_batch_v2(recs, codec=codec, partition_leader_epoch=self.epochs[-1][0], **attrs)
        self._append(b, dict(pid=pid, txn=txn, fate=fate, control=False, codec=codec,
                             epoch=self.epochs[-1][0], seq=attrs.get("base_sequence", -1)))

    def end_txn(self, pid, root):
        txn = self.open.pop(pid)
        first = self.txn_first.pop(pid)
        fate = self.fates[(pid, txn)]
        offset = self.next
        self.markers.append({"t": time.time(), "p": self.partition, "pid": pid, "txn": txn})
        marker_log(root, self.markers)
        b = build_control_batch(offset, ts_of(offset), COMMIT if fate == "C" else ABORT, producer_id=pid,
                                producer_epoch=0, partition_leader_epoch=self.epochs[-1][0])
        self._append(b, dict(pid=pid, txn=txn, fate=fate, control=True, codec="none", epoch=self.epochs[-1][0],
                             seq=-1, first=first))
        self.controls.append((self.gen, offset))
        if fate == "A":  # LogSegment.updateTxnIndex, at the marker's append
            lso = min(self.txn_first.values(), default=offset + 1)
            self.batches[-1]["lso"] = lso
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
        self.ends.append((time.time(), self.next))

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
    def truncate(self, above=None):
        """UnifiedLog.truncateTo(target), target a batch boundary in [hw, log end) (above ``above`` when there is
        one)."""
        cands = [b["base"] for b in self.batches if b["base"] >= self.hw]
        if above is not None and any(c > above for c in cands):
            cands = [c for c in cands if c > above]
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
        for b in cut:
            self.raw.pop(b["base"], None)
        self.ends.append((time.time(), self.next))
        return target

    # a move between log dirs (ReplicaAlterLogDirsThread, LogManager.replaceCurrentWithFutureLog) --------------------
    def copy_from(self, src, most):
        """This ``-future`` log fetches up to ``most`` batches from ``src`` as ``appendAsFollower`` appends them: the
        same bytes at the same offsets, its own segments, indexes, snapshots and ``.txnindex``; its high watermark
        the source's, capped at its log end (``futureLog.updateHighWatermark``)."""
        for b in [b for b in src.batches if b["base"] >= self.next][:most]:
            data = src.raw[b["base"]]
            if b["epoch"] != self.epochs[-1][0]:
                self.epochs.append((b["epoch"], b["base"]))
                self._write_epochs()
            self.gen = b["gen"]
            meta = {k: v for k, v in b.items() if k not in ("seg", "pos", "size")}
            encoded = Fetched(data, b["base"], b["last"], struct.unpack_from(">q", data, 35)[0])
            self._append(encoded, meta)
            pid = b["pid"]
            if b["control"]:
                self.open.pop(pid, None)
                self.txn_first.pop(pid, None)
                if b["fate"] == "A":
                    with open(self.folder / name(self.active.base, ".txnindex"), "ab") as f:
                        f.write(TXN.pack(0, pid, b["first"], b["base"], b["lso"]))
            elif pid != -1:
                self.seq[pid] = b["seq"] + b["last"] - b["base"] + 1
                if pid in TXN_PIDS and pid not in self.open:
                    self.open[pid], self.txn_first[pid] = b["txn"], b["base"]
        self.hw = min(src.hw, self.next)

    def take_over(self, src):
        """The state this copy carries on with once it replaced ``src``."""
        self.hw = src.hw  # (updateHighWatermark = true)
        self.gen, self.epochs = src.gen, src.epochs
        self.controls, self.fates, self.txn_no = src.controls, src.fates, src.txn_no
        self.removed, self.ends, self.markers = src.removed, src.ends, src.markers

    # retention (UnifiedLog.deleteOldSegments / deleteSegments) -----------------------------------------------------
    def next_base(self, s):
        i = self.segments.index(s)
        return self.segments[i + 1] if i + 1 < len(self.segments) else self.next

    def retain(self, keep_segments):
        """Retention by size: the oldest segments while more than ``keep_segments`` are left, each only when the
        high watermark is at or past its end, never the active one. In Kafka's order: the log start offset moves
        first (in memory; the checkpoint follows at the next checkpointing), then each segment's files are renamed
        ``.deleted`` (``LogSegment.changeFileSuffixes``: log, index, timeindex, txnindex) and removed later
        (``file.delete.delay.ms``), then the producer snapshots at their bases renamed ``.deleted`` too
        (``removeAndMarkSnapshotForDeletion``)."""
        deletable = []
        for s in self.segments[:-1]:
            if len(self.segments) - len(deletable) <= keep_segments or self.next_base(s) > self.hw:
                break
            deletable.append(s)
        if not deletable:
            return
        new_start = self.next_base(deletable[-1])
        self.log_start = max(self.log_start, new_start)
        offsets = [o for b in self.batches if not b["control"] and b["seg"] in deletable
                   for o in range(b["base"], b["last"] + 1) if o not in self.gone]
        t0 = time.time()
        for s in deletable:
            self.segments.remove(s)
            self.seg_states.pop(s, None)
            self._rename_away(s)
        for s in deletable:
            snap = self.folder / name(s, ".snapshot")
            if snap.exists():
                snap.rename(snap.with_name(snap.name + ".deleted"))
                self._delete_later(snap.with_name(snap.name + ".deleted"))
        self.gone.update(offsets)
        self.removed.append([offsets, t0, time.time()])

    def delete_records(self):
        """DeleteRecords: the log start offset moves up to a batch boundary at or below the high watermark (in
        memory; readers learn it from log-start-offset-checkpoint, so the records below it count as removed when
        the checkpoint is written: :meth:`checkpointed`)."""
        cands = [b["base"] for b in self.batches if self.log_start < b["base"] <= self.hw
                 and b["seg"] == self.segments[0]]
        if cands:
            self.log_start = self.rng.choice(cands)
            self.start_moved = True

    def checkpointed(self, t0, t1):
        """The log-start-offset checkpoint holding ``log_start`` was written between ``t0`` and ``t1``: the
        records below it are removed for readers (still in the file: the cleaner may keep them)."""
        if self.start_moved:
            offsets = [o for b in self.batches if not b["control"] and b["base"] < self.log_start
                       for o in range(b["base"], b["last"] + 1) if o not in self.gone and o < self.log_start]
            self.removed.append([offsets, t0, t1])
            self.start_moved = False

    def _rename_away(self, s):
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            p = self.folder / name(s, suffix)
            if p.exists():
                p.rename(p.with_name(p.name + ".deleted"))
                self._delete_later(p.with_name(p.name + ".deleted"))

    def _delete_later(self, path):
        """``file.delete.delay.ms`` (60 s by default): :data:`DELETE_DELAY` seconds here."""
        self.pending_delete.append((time.time() + self.rng.uniform(*DELETE_DELAY), path))

    # the log cleaner (LogCleaner.cleanSegments, MemoryRecords.filterTo, LocalLog.replaceSegments) ---------------
    def clean(self, root):
        """One cleaning round: every inactive segment below the first uncleanable offset (the last stable offset
        (at most the high watermark), the active segment's base), grouped by size (``groupSegmentsBySize``), each
        group cleaned into one ``<first base>.*.cleaned`` segment and swapped in as ``replaceSegments`` does:
        ``.cleaned`` -> ``.swap`` (log, index, timeindex, txnindex), the old segments' files -> ``.deleted``, then
        ``.swap`` -> the segment's name. Kept per key: the record with the highest offset below that end; aborted
        transactions' data dropped (its batch kept empty when it is its producer's last); markers as
        ``CleanedTransactionMetadata`` says, a marker whose transaction's batches are all gone given a delete
        horizon (now + :data:`DELETE_RETENTION_MS`) at that round, dropped at the first round past it."""
        lso = min(list(self.txn_first.values()) + [self.hw])
        end = min(lso, self.active.base)
        segs = [s for s in self.segments[:-1] if self.next_base(s) <= end]
        if not segs or end <= self.clean_end:
            return
        end = self.next_base(segs[-1])  # upperBoundOffsetOfCleaningRound
        now = time.time() * 1000
        alive = [b for b in self.batches if b["base"] >= self.log_start_seg() and b["base"] < end
                 and b["base"] not in self.dead]
        aborted = {(b["pid"], b["txn"]) for b in self.batches if b["control"] and b["fate"] == "A"}
        latest = {}  # the offset map: key -> highest offset (aborted data left out)
        for b in alive:
            if not b["control"] and (b["pid"], b["txn"]) not in aborted:
                for o in range(b["base"], b["last"] + 1):
                    if o not in self.gone:
                        latest[key_of(self.partition, o)] = o
        last_data = {}  # lastRecordsOfActiveProducers: each producer's last data batch's last offset
        for b in self.batches:
            if not b["control"] and b["pid"] != -1:
                last_data[b["pid"]] = b["last"]
        # the groups (consecutive segments, at most SEGMENT_BYTES of log between them)
        groups, size = [], 0
        for s in segs:
            seg_size = self.seg_size(s)
            if groups and size + seg_size <= SEGMENT_BYTES:
                groups[-1].append(s)
                size += seg_size
            else:
                groups.append([s])
                size = seg_size
        seen = set()  # (pid, txn) whose batches this round traversed
        removed = []
        t0 = None
        for group in groups:
            out = []  # (batch meta, bytes)
            txn_entries = []
            for b in [b for b in alive if b["seg"] in group]:
                key = (b["pid"], b["txn"])
                if not b["control"]:
                    if b["pid"] in TXN_PIDS:
                        seen.add(key)
                    discard = key in aborted
                    horizon = None
                else:
                    traversed = key in seen
                    if b["fate"] == "A" and traversed:
                        txn_entries.append(TXN.pack(0, b["pid"], b["first"], b["base"], b.get("lso", b["base"] + 1)))
                    can_discard = not traversed
                    horizon = b.get("horizon")
                    discard = can_discard and horizon is not None and horizon <= now
                    if can_discard and horizon is None:
                        horizon = now + DELETE_RETENTION_MS
                if b["pid"] != -1 and not b["control"] and last_data.get(b["pid"]) == b["last"]:
                    retention = "empty"
                elif b["last"] + 1 == end:
                    retention = "empty"
                elif discard:
                    retention = "delete"
                else:
                    retention = "delete_empty"
                if b["control"]:
                    kept = [] if discard else [b["base"]]
                else:
                    kept = [] if discard else [o for o in range(b["base"], b["last"] + 1) if o not in self.gone
                                               and latest.get(key_of(self.partition, o), -1) <= o]
                    removed += [o for o in range(b["base"], b["last"] + 1) if o not in self.gone and o not in kept]
                if not kept and retention != "empty":
                    self.dead.add(b["base"])
                    continue
                data = self.rebuilt(b, kept, horizon if b["control"] else None)
                if b["control"]:
                    b["horizon"] = horizon
                    if not kept:
                        b["emptied"] = True
                out.append((b, data))
            t0 = self.swap_in(group, out, txn_entries, t0)
        self.gone.update(removed)
        self.removed.append([removed, t0, time.time()])
        self.clean_end = end
        cleaned = CLEANER_CHECKPOINTS.setdefault(self.folder.parent, {})  # one file per log dir
        cleaned[(TOPIC, self.partition)] = end
        write_offset_checkpoint(self.folder.parent / "cleaner-offset-checkpoint", cleaned)

    def log_start_seg(self):
        return self.segments[0]

    def seg_size(self, s):
        return sum(len(self.raw[b["base"]]) for b in self.batches if b["seg"] == s and b["base"] not in self.dead)

    def rebuilt(self, b, kept, horizon):
        """The batch as ``MemoryRecords.filterTo`` writes it: as it was when all of it stays (and no delete horizon
        is to be set), else rebuilt with the records kept, its base and last offset (``overrideLastOffset``),
        producer fields, codec and epoch (``buildRetainedRecordsInto``), or its header alone (``writeEmptyHeader``)."""
        if b["control"]:
            now_has = [] if b.get("emptied") else [b["base"]]
        else:
            now_has = [o for o in range(b["base"], b["last"] + 1) if o not in self.gone]
        set_horizon = horizon is not None and b.get("horizon") is None
        if kept == now_has and not set_horizon:
            return self.raw[b["base"]]
        attrs = dict(base_offset=b["base"], last_offset=b["last"], partition_leader_epoch=b["epoch"],
                     producer_id=b["pid"], producer_epoch=0 if b["pid"] != -1 else -1,
                     base_sequence=b["seq"], is_transactional=b["pid"] in TXN_PIDS, is_control=b["control"])
        if not kept:
            ts = ts_of(b["last"])
            return build_batch_v2([], empty_timestamp=ts, **attrs).data
        if b["control"]:
            recs = [Record(b["base"], ts_of(b["base"]), control_key(COMMIT if b["fate"] == "C" else ABORT),
                           end_txn_marker_value(0))]
        else:
            recs = [Record(o, ts_of(o), key_of(self.partition, o),
                           value_of(self.partition, o, b["gen"], b["pid"], b["txn"], b["fate"])) for o in kept]
        return build_batch_v2(recs, codec=b["codec"], delete_horizon_ms=None if horizon is None else int(horizon),
                              **attrs).data

    def swap_in(self, group, out, txn_entries, t0):
        base = group[0]
        # the cleaned segment (LogSegment.open with suffix .cleaned, preallocated as the log's config says)
        seg = Seg(self.folder, base, self.preallocate, suffix=".cleaned")
        for b, data in out:
            b.update(seg=base, pos=seg.size, size=len(data))
            self.raw[b["base"]] = data
            seg.append(data, b["last"], struct.unpack_from(">q", data, 35)[0], None)  # its maxTimestamp
        if txn_entries:
            (self.folder / name(base, ".txnindex.cleaned")).write_bytes(b"".join(txn_entries))
        state = seg.state()
        seg.become_inactive()
        if t0 is None:
            t0 = time.time()
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):  # .cleaned -> .swap
            p = self.folder / name(base, suffix + ".cleaned")
            if p.exists():
                p.rename(self.folder / name(base, suffix + ".swap"))
        for s in group:  # the old segments -> .deleted
            self._rename_away(s)
            if s != base:
                self.segments.remove(s)
                self.seg_states.pop(s, None)
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):  # .swap -> in place
            p = self.folder / name(base, suffix + ".swap")
            if p.exists():
                p.rename(self.folder / name(base, suffix))
        self.seg_states[base] = state
        return t0

    def reap(self):
        now = time.time()
        for t, p in [x for x in self.pending_delete if x[0] <= now]:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
        self.pending_delete = [x for x in self.pending_delete if x[0] > now]


class Fetched:
    """A fetched batch as :meth:`Partition._append` takes it."""

    def __init__(self, data, first_offset, last_offset, max_timestamp):
        self.data, self.first_offset, self.last_offset, self.max_timestamp = data, first_offset, last_offset, max_timestamp


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


OPTIONS = ("--retention", "--compact", "--fast-delete", "--move")
#: the partition ``--move`` moves to the other log dir
MOVED = 3
#: how long after retention or the cleaner renamed a file ``.deleted`` it is removed (file.delete.delay.ms); 0.2 to
#: 2 s with ``--fast-delete`` (a truncation's files always)
DELETE_DELAY = (4.0, 8.0)
#: log dir -> {(topic, partition): cleaner checkpoint}
CLEANER_CHECKPOINTS = {}


def main(root, seconds, seed, options=()):
    """The broker: ``options`` among :data:`OPTIONS` (``--retention``: segment deletion and DeleteRecords on the
    partitions of :data:`RETAINED`; ``--compact``: the log cleaner on those of :data:`COMPACTED`; ``--move``,
    ``--fast-delete``: see the module). A truncation is also made on request (:func:`hooked`): ``ROOT/hook-request.json`` names the partition and the offset the reader
    read to; the broker truncates past the high watermark (above that offset when it can), appends a new
    generation there, then writes ``ROOT/hook-done-<id>``."""
    root = Path(root)
    rng = random.Random(seed)
    retention, compact = "--retention" in options, "--compact" in options
    if "--fast-delete" in options:
        global DELETE_DELAY
        DELETE_DELAY = (0.2, 2.0)
    dirs = [root / "d0", root / "d1"]
    for i, d in enumerate(dirs):
        d.mkdir(parents=True)
        write_meta_properties(d / "meta.properties", cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=1,
                              directory_id=f"BBBBBBBBBBBBBBBBBBBBB{'AB'[i]}")
    parts = {p: (Partition(dirs[d], p, pre, rng), d) for p, d, pre in LAYOUT}

    future = {}  # partition -> (its -future Partition, the log dir index it goes to)

    def checkpoints():
        for i, d in enumerate(dirs):
            mine = {(TOPIC, p): part for p, (part, dd) in parts.items() if dd == i}
            # (ReplicaManager.checkpointHighWatermarks and the LogManager checkpoints take future logs too)
            mine.update({(TOPIC, p): part for p, (part, dd) in future.items() if dd == i})
            write_offset_checkpoint(d / "replication-offset-checkpoint", {k: v.hw for k, v in mine.items()})
            write_offset_checkpoint(d / "recovery-point-offset-checkpoint",
                                    {k: min(v.segments[-1], v.hw) for k, v in mine.items()})
            # LogManager.checkpointLogStartOffsetsInDir: only the logs whose start is above their first segment
            t0 = time.time()
            write_offset_checkpoint(d / "log-start-offset-checkpoint",
                                    {k: v.log_start for k, v in mine.items() if v.log_start > v.segments[0]})
            t1 = time.time()
            for v in mine.values():
                v.checkpointed(t0, t1)

    checkpoints()
    (root / "started").write_text("")
    end = time.time() + seconds
    last_cp = 0.0
    truncations = []
    move_at = time.time() + seconds * rng.uniform(0.2, 0.5) if "--move" in options else None
    while time.time() < end:
        if move_at is not None and time.time() > move_at and not future:  # kafka-reassign-partitions: to d1
            move_at = None
            p, (src, d) = MOVED, parts[MOVED]
            future[p] = (Partition(dirs[1 - d], p, src.preallocate, rng,
                                   folder=f"{TOPIC}-{p}.{rng.getrandbits(128):032x}-future"), 1 - d)
        for part, _ in parts.values():
            part.step(root)
            if part.partition in future:
                copy, to = future[part.partition]
                copy.copy_from(part, rng.randint(5, 30))
                if copy.next == part.next:
                    parts[part.partition] = (replace_with_future(root, part, copy, dirs[to]), to)
                    del future[part.partition]
                    checkpoints()
                continue  # (no truncation, retention or cleaning while the partition moves)
            if rng.random() < 0.02:
                target = part.truncate()
                if target is not None:
                    truncations.append((part.partition, target, time.time()))
            if retention and part.partition in RETAINED:
                if rng.random() < 0.03:
                    part.retain(keep_segments=rng.randint(2, 5))
                if rng.random() < 0.01:
                    part.delete_records()
            if compact and part.partition in COMPACTED and rng.random() < 0.03:
                part.clean(root)
            part.reap()
        request = root / "hook-request.json"
        if request.exists():
            ask = json.loads(request.read_text())
            request.unlink()
            part = parts[ask["p"]][0]
            if ask["p"] in future:  # (no truncation while it moves)
                (root / f"hook-done-{ask['id']}").write_text(json.dumps({"target": None}))
                continue
            part.append_data()  # something past the high watermark
            target = part.truncate(above=ask["after"])
            if target is not None:
                truncations.append((part.partition, target, time.time()))
                for _ in range(rng.randint(1, 3)):
                    part.append_data()
                part.ends.append((time.time(), part.next))
            (root / f"hook-done-{ask['id']}").write_text(json.dumps({"target": target}))
        if time.time() - last_cp > rng.uniform(0.05, 0.6):
            checkpoints()
            last_cp = time.time()
        time.sleep(rng.uniform(0.002, 0.02))
    for part, _ in parts.values():
        part.hw = part.next
    checkpoints()
    truth = {p: {"batches": part.batches, "hw": part.hw, "open": {str(k): v for k, v in part.txn_first.items()},
                 "segments": part.segments, "controls": part.controls, "removed": part.removed,
                 "ends": part.ends}
             for p, (part, _) in parts.items()}
    (root / "truth.json.tmp").write_text(json.dumps({"partitions": truth, "truncations": truncations}))
    os.replace(root / "truth.json.tmp", root / "truth.json")


def replace_with_future(root, src, copy, log_dir):
    """``LogManager.replaceCurrentWithFutureLog``, in its order: the ``-future`` folder renamed to
    ``<topic>-<partition>`` (for a moment both log dirs hold the partition, whole in both), then the source folder
    renamed ``<topic>-<partition>.<id>-delete`` and removed later (``addLogToBeDeleted``; the checkpoints follow).
    Returns the copy, which carries on as the partition."""
    final = log_dir / f"{TOPIC}-{src.partition}"
    copy.folder.rename(final)
    copy.folder = final
    copy.take_over(src)
    src.active.close()
    gone = src.folder.with_name(f"{TOPIC}-{src.partition}.{src.rng.getrandbits(128):032x}-delete")
    src.folder.rename(gone)
    copy.pending_delete.append((time.time() + src.rng.uniform(*DELETE_DELAY), gone))
    (root / "moved.json").write_text(json.dumps({"p": src.partition, "t": time.time()}))
    return copy


def hooked(root, args):
    """``python -m kafkaseg ARGS`` with a hook in ``consume``'s reads: after the first batch read of the first
    slice of a partition, ask the broker to truncate that partition past the high watermark (above the offsets
    read, when it can) and wait until it has, and has appended a new generation there: a truncation that lands
    during the read every time, where a random one rarely does."""
    import runpy

    import kafkaseg.scan as scan

    original = scan.read_slice
    state = {"asked": False}

    def read_slice(piece, *a, **kw):
        for batch in original(piece, *a, **kw):
            yield batch
            if not state["asked"] and batch.num_rows:
                state["asked"] = True
                ask = {"id": os.getpid(), "p": piece.partition,
                       "after": batch.column("offset")[batch.num_rows - 1].as_py()}
                tmp = Path(root) / f"hook-request.{os.getpid()}.tmp"
                tmp.write_text(json.dumps(ask))
                os.replace(tmp, Path(root) / "hook-request.json")
                done = Path(root) / f"hook-done-{ask['id']}"
                give_up = time.time() + 10
                while not done.exists() and time.time() < give_up and not (Path(root) / "truth.json").exists():
                    time.sleep(0.01)
                print(f"live_broker hook: truncation asked at {ask} -> "
                      f"{done.read_text() if done.exists() else 'no answer'}", file=sys.stderr)

    scan.read_slice = read_slice  # (consume imports it at each run)
    sys.argv = ["kafkaseg", *args]
    runpy.run_module("kafkaseg", run_name="__main__")


# checking reads ---------------------------------------------------------------------------------------------------
class Truth:
    """The final logs (truth.json) and marker times (markers.jsonl) of a finished run."""

    def __init__(self, root):
        root = Path(root)
        doc = json.loads((root / "truth.json").read_text())
        self.truncations = doc["truncations"]
        self.data = {}  # partition -> {offset: (gen, pid, txn, fate)}, the records removed since too
        self.lso = {}
        self.leo = {}
        # partition -> {offset: (t0, t1)}: retention or the cleaner removed the record from what readers may list
        # between t0 and t1 (the earliest removal, when a DeleteRecords' and a deletion's both say it)
        self.removed = {}
        self.ends = {}  # partition -> [(time, log end offset)]
        for p, t in doc["partitions"].items():
            p = int(p)
            self.data[p] = {o: (b["gen"], b["pid"], b["txn"], b["fate"])
                            for b in t["batches"] if not b["control"] for o in range(b["base"], b["last"] + 1)}
            self.leo[p] = t["hw"]
            self.lso[p] = min(list(t["open"].values()) + [t["hw"]])
            gone = self.removed[p] = {}
            for offsets, t0, t1 in t["removed"]:
                for o in offsets:
                    was = gone.get(o, (t0, t1))
                    gone[o] = (min(was[0], t0), min(was[1], t1))
            self.ends[p] = t["ends"]
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

    def may_lack(self, p, o, ended):
        """Whether a read that ended at ``ended`` may lack record ``o``: removed before then."""
        return o in self.removed[p] and self.removed[p][o][0] < ended

    def must_lack(self, p, o, began):
        """Whether a read that began at ``began`` must lack record ``o``: removed (whole) before then."""
        return o in self.removed[p] and self.removed[p][o][1] < began

    def end_at(self, p, when):
        """The log end offset of partition ``p`` at time ``when`` (as of the last change done by then)."""
        ends = self.ends[p]
        k = bisect.bisect_right([t for t, _ in ends], when)
        return ends[k - 1][1] if k else 0


def rows_of(table):
    cols = [table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")]
    ts = [t.as_py() for t in table.column("timestamp").cast("int64")]
    return list(zip(*cols, ts))


def check_rows(truth, rows, *, committed, read_end, began, final=False, what="read"):
    """Problems with one read's rows (topic, partition, offset, key, value, timestamp in us), judged against the
    finished run: each record as written, of the generation the log kept (reads stop at the high watermark, below
    which nothing is truncated), per partition exactly the records of [0, last returned] (read_committed: none
    aborted, none of a transaction whose marker was not yet being written when the read ended) but those
    retention or the cleaner removed: a record removed before the read ended may be missing, one removed before
    it began must be; ``final``: a read after the broker stopped, which must reach the log end (read_committed:
    the last stable offset)."""
    problems = []
    by = {}
    for topic, p, o, k, v, ts in rows:
        by.setdefault(p, []).append(o)
        if topic != TOPIC or k != key_of(p, o) or ts != ts_of(o) * 1000:
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
        elif truth.must_lack(p, o, began):
            problems.append(f"{what}: {p}@{o}: removed (retention, the log start, the cleaner) before the read "
                            f"began ({truth.removed[p][o][1] - began:+.3f} s)")
        if len(problems) > 20:
            return problems
    for p, offs in by.items():
        if offs != sorted(set(offs)):
            at = next(k for k in range(1, len(offs)) if offs[k] <= offs[k - 1])
            problems.append(f"{what}: partition {p}: offsets not strictly increasing: {offs[max(0, at - 3):at + 3]} "
                            f"(at the {at}th of {len(offs)}; {len(offs) - len(set(offs))} repeated)")
            continue
        want = {o for o in truth.data[p] if o <= offs[-1] and truth.visible(p, o, committed)
                and not truth.may_lack(p, o, read_end)}
        missing = sorted(want - set(offs))[:10]
        if missing:
            problems.append(f"{what}: partition {p}: missing {missing}")
    if final:
        for p in truth.data:
            end = truth.lso[p] if committed else truth.leo[p]
            want = [o for o in sorted(truth.data[p]) if o < end and truth.visible(p, o, committed)
                    and not truth.may_lack(p, o, read_end)]
            got = [o for o in by.get(p, []) if not truth.may_lack(p, o, read_end)]
            if got != want:
                problems.append(f"{what}: final read of partition {p}: {len(got)} records, "
                                f"{len(want)} below {end}")
    return problems


def run_live(root, seconds, seed, *, read_as=None, tools=True, hook=False, options=()):
    """Run the broker for ``seconds`` while reading its log dirs over and over (read_uncommitted and read_committed
    batch reads, a read_committed ``follow``, the CLI); afterwards judge every read against the finished run.
    ``read_as``: where the readers find ``root`` (e.g. a read-only bind mount of it). ``tools``: also run ``verify``
    and ``describe`` (which must exit 0: no error for what a truncation past the high watermark rewrote or left, nor
    for an append begun while they look). ``hook``: every ``consume --to-log-end`` has the broker truncate the
    partition it reads while it reads it (:func:`hooked`). ``options``: the broker's (:func:`main`). Returns
    (problems, stats)."""
    import subprocess
    import threading

    import kafkaseg

    root = Path(root)
    broker = subprocess.Popen([sys.executable, __file__, str(root), str(seconds), str(seed), *options])
    while not (root / "started").exists():
        if broker.poll() is not None:
            raise RuntimeError(f"broker exited with {broker.returncode}")
        time.sleep(0.05)
    dirs = log_dirs(root if read_as is None else read_as)
    # retention deletes segments a read planned: failOnDataLoss=false reads on (the default raises
    # DataLossError, as Spark's source does); what each read lacks is judged against what was removed when
    lenient = {"failOnDataLoss": "false"} if "--retention" in options else {}
    committed_opt = {"kafka.isolation.level": "read_committed", **lenient}
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
    cli_ops = [("verify", ["verify", "--no-progress", *dirs]),  # (both tools and the hooked consume among the
               ("consume to log end", consume + ["--to-log-end"]),  # first 3: a loaded run may do no more)
               ("describe", ["describe", *dirs]),
               ("offsets committed", ["offsets", *cli_args, "--time", "-1", "--isolation", "read_committed"]),
               ("consume committed", consume + ["--isolation-level", "read_committed"])]
    if not tools:
        cli_ops = [op for op in cli_ops if op[0] not in ("verify", "describe")]

    def cli():
        j = 0
        while broker.poll() is None:
            what, args = cli_ops[j % len(cli_ops)]
            j += 1
            began = time.time()
            run = [sys.executable, "-m", "kafkaseg"]
            if hook and what == "consume to log end":
                run = [sys.executable, __file__, "hook", str(root)]
            r = subprocess.run(run + args, capture_output=True, text=True, timeout=120)
            cli_runs.append((what, r.returncode, r.stdout, r.stderr, began, time.time()))

    follow_began = time.time()
    follower = threading.Thread(target=follow)
    follower.start()
    clier = threading.Thread(target=cli)
    clier.start()
    ops = [("read_arrow", lenient), ("read_arrow committed", committed_opt),
           ("iter_batches committed", committed_opt), ("read_arrow to log end", {"upperBound": "logEndOffset", **lenient})]
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
            reads.append((what, rows, "kafka.isolation.level" in opts, time.time(), began))
        except Exception:  # noqa: BLE001
            import traceback
            reads.append((what, traceback.format_exc(), began, time.time()))
    if broker.returncode != 0:
        raise RuntimeError(f"broker exited with {broker.returncode}")
    finals = []
    for what, opts in ops[:2]:
        began = time.time()
        finals.append((what + " final", rows_of(kafkaseg.read_arrow(dirs, **opts)), "kafka.isolation.level" in opts, time.time(), began))
    follower.join()
    clier.join()
    truth = Truth(root)
    problems = []
    for k, r in enumerate(reads):
        if isinstance(r[1], str):  # (what, traceback, began, ended)
            found = [f"{r[0]} raised: {r[1]}"]
        elif r[0].endswith("to log end"):
            found = check_past_watermark(truth, r[1], what=r[0], began=r[4], ended=r[3])
        else:
            found = check_rows(truth, r[1], committed=r[2], read_end=r[3], began=r[4], what=r[0])
        if found and not isinstance(r[1], str):  # the read's rows kept beside the run, for a diagnosis
            (root / f"failed-read-{k}.json").write_text(json.dumps(
                {"what": r[0], "began": r[4], "ended": r[3], "problems": found,
                 "rows": [(p, o, v.decode(errors="replace")) for _, p, o, _, v, _ in r[1]]}))
        problems += found
    for k, (what, rc, out, err, began, end) in enumerate(cli_runs):
        if rc != 0 or "Traceback" in err:
            # (kept whole beside the run: the problem below quotes the end of it only)
            (root / f"failed-cli-{k}.txt").write_text(f"{what} rc={rc} began={began} ended={end}\n{out}\n{err}")
            said = [line for line in out.splitlines() if line.startswith("ERROR")]  # verify's errors
            problems.append(f"kafkaseg {what}: exit {rc}: {' '.join(said)[:1500] or out[-800:]} {err[-1500:]}")
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
                problems += check_past_watermark(truth, rows, what=what, began=began, ended=end)
            else:
                problems += check_rows(truth, rows, committed=True, read_end=end, began=began, what=what)
    for what, rows, committed, end, began in finals:
        problems += check_rows(truth, rows, committed=committed, read_end=end, began=began, final=True, what=what)
    problems += [f"follow raised: {e}" for e in follow_errors]
    problems += check_rows(truth, followed, committed=True, read_end=time.time(), began=follow_began, final=True,
                           what="follow")
    stats = {"reads": len(reads), "followed": len(followed), "cli runs": len(cli_runs),
             "tool runs": {what: sum(1 for run in cli_runs if run[0] == what) for what in ("verify", "describe")},
             "truncations": len(truth.truncations),
             "hooked truncations": sum(1 for what, rc, out, err, *_ in cli_runs
                                       if "live_broker hook" in err and '"target": null' not in err
                                       and "no answer" not in err),
             "removed": {p: len(r) for p, r in truth.removed.items()},
             "records": {p: len(d) for p, d in truth.data.items()},
             "aborted": {p: sum(1 for v in d.values() if v[3] == "A") for p, d in truth.data.items()},
             "segments": {p: sum(len(list(Path(d).glob(f"{TOPIC}-{p}/*.log"))) for d in dirs) for p, _, _ in LAYOUT},
             "moved": (root / "moved.json").exists()}
    return problems, stats


def check_past_watermark(truth, rows, *, what, began, ended):
    """A read to the log end, past the high watermark (records a truncation may replace), read_uncommitted from
    the log start: each record as written at its offset by some generation, offsets strictly increasing per
    partition, no gap, and every offset up to the log end as it stood when the read began:

    - between two offsets returned one after the other (generations g1 and g2; before the first, from offset 0
      and generation 0) every offset skipped held a transaction marker in some generation from g1 to g2 (the log
      the reader went through was of those generations: a marker it skipped may have been replaced since by a
      truncation, and a truncation at or below the last offset returned goes on at the next one, so it explains
      no gap), or retention or the cleaner removed it before the read ended;
    - after the last offset returned, up to the partition's log end when the read began (lower: the lowest
      target of a truncation of it while the read ran, which may end the read there), every offset held a marker
      in a generation at or after the last one returned, or was removed before the read ended.
    """
    problems = []
    last = {}
    for topic, p, o, k, v, ts in rows:
        if topic != TOPIC or k != key_of(p, o) or ts != ts_of(o) * 1000 or parse_value(v)[:2] != (p, o):
            problems.append(f"{what}: {topic}-{p}@{o}: not the record written there: {k!r} {v[:40]!r} {ts}")
            continue
        gen = parse_value(v)[2]
        before, before_gen = last.get(p, (-1, 0))
        if o <= before:
            problems.append(f"{what}: partition {p}: offset {o} after {before}")
        else:
            gens = range(min(before_gen, gen), max(before_gen, gen) + 1)
            markers = truth.controls.get(p, {})
            skipped = [x for x in range(before + 1, o) if not markers.get(x, set()).intersection(gens)
                       and not truth.may_lack(p, x, ended)]
            if skipped:
                problems.append(f"{what}: partition {p}: gap: offsets {skipped[:10]}{'...' if len(skipped) > 10 else ''}"
                                f" ({len(skipped)}) skipped between {before} (generation {before_gen}) and {o} "
                                f"(generation {gen}), no marker there in those generations, not removed")
        last[p] = (o, gen)
        if len(problems) > 20:
            return problems
    for p in truth.data:
        before, before_gen = last.get(p, (-1, 0))
        cut = [target for q, target, t in truth.truncations if q == p and began <= t <= ended + TRUNCATION_SLACK]
        end = min([truth.end_at(p, began)] + cut)
        markers = truth.controls.get(p, {})
        short = [x for x in range(before + 1, end) if not any(g >= before_gen for g in markers.get(x, ()))
                 and not truth.may_lack(p, x, ended)]
        if short:
            problems.append(f"{what}: partition {p}: ended short: offsets {short[:10]}"
                            f"{'...' if len(short) > 10 else ''} ({len(short)}) after the last returned, "
                            f"{before} (generation {before_gen}), below the log end {end} when the read began "
                            f"(or a truncation's target while it ran), no marker there, not removed")
    return problems


#: how long before its recorded time a truncation may have begun cutting files
TRUNCATION_SLACK = 0.5


def rows_of_batch(batch):
    import pyarrow as pa
    return rows_of(pa.Table.from_batches([batch]))


if __name__ == "__main__":
    if sys.argv[1] == "hook":  # live_broker.py hook ROOT KAFKASEG-ARGS...
        hooked(sys.argv[2], sys.argv[3:])
    elif "check" not in sys.argv:  # the broker: live_broker.py ROOT SECONDS SEED [OPTIONS]
        main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:  # by hand: live_broker.py ROOT SECONDS SEED check [--read-as DIR] [--hook] [OPTIONS]
        rest = sys.argv[5:]
        read_as = rest[rest.index("--read-as") + 1] if "--read-as" in rest else None
        found, seen = run_live(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), read_as=read_as,
                               hook="--hook" in rest, options=[o for o in rest if o in OPTIONS])
        print(json.dumps(seen))
        print("\n".join(found[:60]) or "no problems")
