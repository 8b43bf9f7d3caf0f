"""Record logs under real processes: a writer killed with SIGKILL mid-append, and two writers at once."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

from ansorc.measure.record import Record, RecordLog, load, steps_key

REPO = Path(__file__).resolve().parents[2]

# Appends batches of records numbered "<writer>:<seq>" until killed or done. Long error messages make each
# batch a large write, so that a kill has a chance to land inside one.
WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from ansorc.measure.record import Record, RecordLog, steps_key
    log, name = RecordLog(sys.argv[2]), sys.argv[3]
    batches, per_batch, pad = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    seq = 0
    for _ in range(batches):
        batch = []
        for _ in range(per_batch):
            batch.append(Record("wk", "cpu", steps_key([["SP", "C", "i", [seq + 1]]]), (1e-3, 2e-3), 0, "x" * pad,
                                note=f"{name}:{seq}"))
            seq += 1
        log.append(batch)
""")


def start_writer(tmp_path, log_path, name, batches, per_batch, pad):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen([sys.executable, str(script), str(REPO), str(log_path), name, str(batches),
                             str(per_batch), str(pad)])


def seqs_of(records, name):
    return [int(r.note.split(":")[1]) for r in records if r.note.split(":")[0] == name]


def load_with_warnings(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = load(path)
    return records, [str(w.message) for w in caught]


def kill_writer_midway(tmp_path, path):
    """Start a writer of 16 MB batches and SIGKILL it once the log passes 20 MB: often inside a write."""
    writer = start_writer(tmp_path, path, "w", batches=1000, per_batch=4, pad=4_000_000)
    deadline = time.monotonic() + 20
    while (not path.exists() or path.stat().st_size < 20_000_000) and time.monotonic() < deadline:
        time.sleep(0.002)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()


def test_kill_during_append_loses_only_the_partial_line(tmp_path):
    saw_partial_write = False
    for attempt in range(5):  # the kill lands inside a write only some of the time
        path = tmp_path / f"log{attempt}.jsonl"
        kill_writer_midway(tmp_path, path)
        records, messages = load_with_warnings(path)
        seqs = seqs_of(records, "w")
        assert len(seqs) >= 4 and seqs == list(range(len(seqs)))  # every complete line is there, in order
        assert len(messages) <= 1  # at most the line the kill cut short, and it is named
        if messages:
            last_line = path.read_bytes().count(b"\n") + 1
            assert messages[0].startswith(f"{path}:{last_line}: skipped corrupt record")
            saw_partial_write = True
            break
        if attempt < 4:
            path.unlink()  # 20+ MB each
    # Then the next append must not glue its first record onto the broken line. When no kill landed inside a
    # write, make the broken line by hand.
    if not saw_partial_write:
        with open(path, "ab") as f:
            f.write(Record("wk", "cpu", steps_key([]), (1.0,), 0, note="w:broken").to_json().encode()[:50])
    broken_line = path.read_bytes().count(b"\n") + 1
    RecordLog(path).append([Record("wk", "cpu", steps_key([["CI", "after"]]), (1.0,), 0, note="after:0")])
    records, messages = load_with_warnings(path)
    assert seqs_of(records, "w") == seqs and seqs_of(records, "after") == [0]
    assert [m.split(": ")[0] for m in messages] == [f"{path}:{broken_line}"]


def test_two_writers_never_interleave(tmp_path):
    path = tmp_path / "log.jsonl"
    batches, per_batch = 150, 7
    writers = [start_writer(tmp_path, path, name, batches, per_batch, pad=3000) for name in ("a", "b")]
    for w in writers:
        assert w.wait(timeout=60) == 0
    records, messages = load_with_warnings(path)
    assert messages == []
    assert len(records) == 2 * batches * per_batch
    for name in ("a", "b"):
        assert seqs_of(records, name) == list(range(batches * per_batch))
    # A batch is contiguous in the file: one write under the lock.
    names = [r.note.split(":")[0] for r in records]
    runs = [names[i:i + per_batch] for i in range(0, len(names), per_batch)]
    assert all(len(set(run)) == 1 for run in runs)
