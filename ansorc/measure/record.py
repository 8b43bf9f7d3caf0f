"""Tuning records: one JSON object per line, appended under a file lock, loaded tolerantly.

A line looks like
  {"v": 1, "workload_key": "...", "target": "...", "steps": [...], "costs": [1.2e-3, ...], "error_code": 0,
   "error_msg": "", "all_cost": 0.41, "timestamp": 1732600000.0, "lower_bound": false, "flop": 2.1e9, "note": "",
   "isa": "avx2"}
("isa": for target "native", the ISA of the machine that measured it; records of another ISA are not that
target's here, older records without it are.)
`steps` is whatever the schedule's to_json produced, kept as canonical JSON text (`steps_json`), which is also
the key used to skip already-measured schedules. A log is untrusted input (copied between machines, edited by
hand, written by older versions): `load` checks each line's fields and step types and skips a bad line with a
file:line warning, so one record can never break show/tune/compile or distort `best` (NaN or negative costs,
a timestamp in the future that would outrank every later re-timing).

A log whose name ends in .gz (`x.jsonl.gz`, how logs are committed) is read transparently; appending to one is
refused, since a tuner resuming it must write an uncompressed working copy (see bench/peers.py).
"""
from __future__ import annotations

import fcntl
import gzip
import json
import math
import os
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Union

from ansorc.errors import AnsorcError
from ansorc.ir.schedule.steps import steps_from_json
from ansorc.measure.errors import MeasureErrorNo

if TYPE_CHECKING:
    from ansorc.measure.runner import MeasureResult

RECORD_FORMAT_VERSION = 1
MAX_RECORD_ERROR_CHARS = 2000  # keep logs small; the full message is in the MeasureResult
MAX_SIGNATURE_CHARS = 400     # a workload's signature as read back (ComputeDAG.signature writes at most 200)
FUTURE_SLACK_S = 3600.0        # clock skew tolerated between the machines that share a log


class LogError(AnsorcError, ValueError):
    """A log cannot be written (a compressed one) or read (not gzip data)."""


def steps_key(steps: Any) -> str:
    """Canonical JSON text of a step list: equal schedules give equal strings."""
    return json.dumps(steps, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Record:
    workload_key: str
    target: str
    steps_json: str                 # canonical JSON of the steps, see steps_key()
    costs: tuple[float, ...]        # seconds, one mean per repeat; empty on error
    error_code: int
    error_msg: str = ""
    all_cost: float = 0.0           # wall seconds for build + run of this candidate
    timestamp: float = 0.0
    lower_bound: bool = False       # measurement cut early; the candidate is at least this slow
    flop: float | None = None       # floating-point operations of the workload, for GFLOP/s reports
    note: str = ""
    v: int = RECORD_FORMAT_VERSION
    # the compiler's resource report of a GPU program: ((kernel, registers, shared bytes, spill bytes), ...)
    resources: tuple = ()
    isa: str = ""                   # target "native": the ISA it resolved to where measured ("" in older logs)
    signature: str = ""             # the workload's arguments for people (ComputeDAG.signature; "" in older logs)
    structure: str = ""             # its structure without extents (search/seeding.py; "" in older logs)

    @property
    def steps(self) -> Any:
        """A fresh copy of the steps (the record itself stays immutable)."""
        return json.loads(self.steps_json)

    @property
    def ok(self) -> bool:
        return self.error_code == MeasureErrorNo.NO_ERROR and bool(self.costs)

    @property
    def median(self) -> float:
        return statistics.median(self.costs) if self.ok else math.inf

    @classmethod
    def from_measure(cls, workload_key: str, target: str, steps: Any, result: "MeasureResult",
                     flop: float | None = None, note: str = "", signature: str = "", structure: str = "") -> "Record":
        return cls(workload_key, str(target), steps_key(steps), tuple(float(c) for c in result.costs),
                   int(result.error_code), result.error_msg[:MAX_RECORD_ERROR_CHARS], float(result.all_cost),
                   float(result.timestamp), bool(result.lower_bound), flop, note,
                   isa=native_isa() if str(target) == "native" else "", signature=signature, structure=structure)

    def to_json(self) -> str:
        """One line of JSON, without the newline."""
        obj = {"v": self.v, "workload_key": self.workload_key, "target": self.target, "steps": None,
               "costs": list(self.costs), "error_code": self.error_code, "error_msg": self.error_msg,
               "all_cost": self.all_cost, "timestamp": self.timestamp, "lower_bound": self.lower_bound}
        if self.flop is not None:
            obj["flop"] = self.flop
        if self.note:
            obj["note"] = self.note
        if self.resources:
            obj["resources"] = [list(r) for r in self.resources]
        if self.isa:
            obj["isa"] = self.isa
        if self.signature:
            obj["signature"] = self.signature
        if self.structure:
            obj["structure"] = self.structure
        text = json.dumps(obj, separators=(",", ":"))
        # Splice the canonical steps text in as is, so it is never re-encoded differently.
        return text.replace('"steps":null', '"steps":' + self.steps_json, 1)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        """Parse one line; ValueError on anything malformed."""
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        version = obj.get("v")
        if not isinstance(version, int) or version > RECORD_FORMAT_VERSION:
            raise ValueError(f"unsupported record format version {version!r}")
        for name, kind in (("workload_key", str), ("target", str), ("steps", list), ("costs", list),
                           ("error_code", int)):
            if not isinstance(obj.get(name), kind) or isinstance(obj[name], bool):
                raise ValueError(f"field {name!r} missing or not a {kind.__name__}")
        for name, kind in (("error_msg", str), ("note", str), ("lower_bound", bool), ("isa", str),
                           ("signature", str), ("structure", str)):  # optional
            if not isinstance(obj.get(name, kind()), kind):
                raise ValueError(f"field {name!r} is not a {kind.__name__}")
        steps_from_json(obj["steps"])  # ScheduleError (a ValueError) on a step of the wrong shape or types
        costs = tuple(_number(c, "costs") for c in obj["costs"])
        flop = obj.get("flop")
        timestamp = _number(obj.get("timestamp", 0.0), "timestamp")
        if timestamp > time.time() + FUTURE_SLACK_S:
            raise ValueError(f"timestamp {timestamp} is in the future")
        return cls(obj["workload_key"], obj["target"], steps_key(obj["steps"]), costs, obj["error_code"],
                   obj.get("error_msg", ""), _number(obj.get("all_cost", 0.0), "all_cost"), timestamp,
                   obj.get("lower_bound", False), None if flop is None else _number(flop, "flop"),
                   obj.get("note", ""), version, _resources(obj.get("resources")), obj.get("isa", ""),
                   obj.get("signature", "")[:MAX_SIGNATURE_CHARS], obj.get("structure", "")[:MAX_SIGNATURE_CHARS])


def _number(x, name: str) -> float:
    """A finite, non-negative number (JSON allows NaN and Infinity; a negative cost would win every ranking)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise ValueError(f"field {name!r}: {x!r} is not a finite non-negative number")
    return float(x)


def _resources(data) -> tuple:
    """The "resources" field: [[kernel, registers, shared bytes, spill bytes], ...]; anything else is dropped."""
    if not isinstance(data, list):
        return ()
    ok = [r for r in data if isinstance(r, list) and len(r) == 4 and isinstance(r[0], str)
          and all(isinstance(x, int) and not isinstance(x, bool) for x in r[1:])]
    return tuple(tuple(r) for r in ok)


def resources_of(build) -> tuple:
    """((kernel, registers, shared bytes, spill bytes), ...) from a CUDA build's ptxas report (else ())."""
    report = getattr(build, "resources", None) or {}
    return tuple((k, int(r.get("registers", 0)), int(r.get("shared_bytes", 0)),
                  int(r.get("spill_stores", 0)) + int(r.get("spill_loads", 0))) for k, r in sorted(report.items()))


class RecordLog:
    """An append-only JSON-lines file of Records, safe for concurrent writers on one machine."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def append(self, records: Iterable[Record]) -> None:
        """Write a batch with one os.write under an exclusive flock, then fsync."""
        self.append_lines(r.to_json() for r in records)

    def append_lines(self, lines: Iterable[str]) -> None:
        """Write lines of JSON (Records' or another kind's) as one batch: one os.write under an exclusive flock,
        then fsync."""
        if self.path.suffix == ".gz":
            raise LogError(f"{self.path}: cannot append to a compressed log; tune into an uncompressed copy "
                           f"(gunzip -k {self.path.name}) and compress it again afterwards")
        data = "".join(line + "\n" for line in lines).encode()
        if not data:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            # A writer killed mid-write leaves a line without its newline; start ours on a fresh line.
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            written = os.write(fd, data)
            while written < len(data):  # short writes are rare (disk full, signals); we still hold the lock
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)  # also releases the lock

    def load(self) -> list[Record]:
        return load(self.path)

    def __iter__(self):
        return iter(self.load())


def log_lines(path: str | os.PathLike) -> list[tuple[int, bytes]]:
    """(line number, text) of each non-blank line of a log, read under a shared lock (a batch half-written by a
    live writer is not read); a missing file has none; a .gz file is decompressed."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    finally:
        os.close(fd)
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:  # not gzip data, or cut short
            raise LogError(f"{path}: not a readable gzip file ({exc})") from None
    return [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]


def other_kind(raw: bytes) -> bool:
    """Whether a log line is not a measurement: it names its "kind" (net/in_model.py's verdicts)."""
    return raw.lstrip().startswith(b'{"kind":')


def load(path: str | os.PathLike) -> list[Record]:
    """All measurement records of a log, in file order. A corrupt or truncated line is skipped with a warning
    naming file:line; a missing file is an empty log; a .gz file is decompressed; lines of another kind
    (other_kind) are left to their readers."""
    records = []
    for lineno, raw in log_lines(path):
        if other_kind(raw):
            continue
        try:
            records.append(Record.from_json(raw.decode("utf-8")))
        except (ValueError, TypeError, UnicodeDecodeError, RecursionError, OverflowError) as exc:
            # RecursionError: JSON nested thousands deep; OverflowError: an integer too large for a float
            warnings.warn(f"{path}:{lineno}: skipped corrupt record ({str(exc)[:200]})", stacklevel=2)
    return records


RecordSource = Union[str, os.PathLike, RecordLog, Iterable[Record]]


def _records(source: RecordSource) -> Iterable[Record]:
    if isinstance(source, (str, os.PathLike)):
        return load(source)
    if isinstance(source, RecordLog):
        return source.load()
    return source


def native_isa() -> str:
    """The ISA that target "native" resolves to on this machine."""
    from ansorc.codegen.target import host_isas   # measure <- codegen; imported late, as codegen is heavier
    return host_isas()[0]


def for_target(target: str | None):
    """Whether a record was measured for `target` (any, when None), as a predicate. A "native" record from a
    machine with another ISA was not: a log copied from an AVX-512 machine would otherwise rank this one's
    programs by timings made there."""
    if target is None:
        return lambda r: True
    here = native_isa() if target == "native" else None
    return lambda r: r.target == target and not (here and r.isa and r.isa != here)


def records_for(source: RecordSource, workload_key: str, target: str | None = None) -> list[Record]:
    """Records of one workload (and target, when given), in file order."""
    mine = for_target(target)
    return [r for r in _records(source) if r.workload_key == workload_key and mine(r)]


RETIME_NOTE = "retime"  # Record.note of a side-by-side re-timing of the top programs at the end of tuning


def best(source: RecordSource, workload_key: str, target: str | None = None, k: int = 1) -> list[Record]:
    """The k fastest distinct schedules by median cost, among error-free, fully measured records.

    Re-timings (note "retime", one timestamp per session) outrank single timings: a schedule re-timed in the
    latest session is ranked by that re-timing, and a schedule whose every timing predates that session and
    which was not in it ranks after the session's programs. It lost to them on single timings already, and a
    single timing on a noisy machine is often a lucky one; comparing it with careful medians would undo the
    re-timing. Timings newer than the session compete on their medians."""
    fastest: dict[str, Record] = {}
    retimed: dict[str, Record] = {}
    newest: dict[str, float] = {}  # latest single timing (any outcome) of each schedule
    for r in records_for(source, workload_key, target):
        if r.note != RETIME_NOTE:
            newest[r.steps_json] = max(newest.get(r.steps_json, -math.inf), r.timestamp)
        if not r.ok or r.lower_bound:
            continue
        if r.note == RETIME_NOTE:
            if r.steps_json not in retimed or r.timestamp >= retimed[r.steps_json].timestamp:
                retimed[r.steps_json] = r
        elif r.steps_json not in fastest or r.median < fastest[r.steps_json].median:
            fastest[r.steps_json] = r
    if not retimed:
        return sorted(fastest.values(), key=lambda r: r.median)[:k]
    session = max(r.timestamp for r in retimed.values())

    def rank(key: str) -> tuple:
        in_session = key in retimed and retimed[key].timestamp == session
        record = retimed[key] if key in retimed else fastest[key]
        return (0 if in_session or newest.get(key, -math.inf) > session else 1, record.median)
    keys = sorted(set(fastest) | set(retimed), key=rank)
    return [retimed[key] if key in retimed else fastest[key] for key in keys[:k]]


def measured_steps(source: RecordSource, workload_key: str | None = None, target: str | None = None) -> set[str]:
    """steps_key() strings of every schedule already measured (any outcome), to skip re-measuring them."""
    mine = for_target(target)
    return {r.steps_json for r in _records(source)
            if (workload_key is None or r.workload_key == workload_key) and mine(r)}
