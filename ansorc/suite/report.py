"""The table's outputs (suite/table.py): markdown and chart. float32 rows first, in the paper's table; the
low-precision rows (workloads.LOW_PRECISION) in one of their own, set against their own instruction's peak."""
from __future__ import annotations

import math
from pathlib import Path

PEAK_NAMES = {"fp32": ("fp32 FMA", "GFLOP/s"), "int8": ("int8 dot-product (suite/peak_dot.py)", "GOP/s"),
              "bf16": ("bf16 dot-product (suite/peak_dot.py)", "GFLOP/s")}


def kind_of(row: dict) -> str:
    """The peak a row is set against: fp32 unless the row says (rows of tables from before int8 say nothing)."""
    return row.get("peak_kind", "fp32")


def _us(s) -> str:
    return "-" if s is None else f"{s * 1e6:.1f}"


def geomean(rs: list) -> float | None:
    rs = [r for r in rs if r]
    return math.exp(sum(math.log(r) for r in rs) / len(rs)) if rs else None


def _pct(r: dict, peak) -> str:
    slow = r.get("row_peak_gflops") and peak and r["row_peak_gflops"] < 0.9 * peak
    return "-" if r["peak_pct"] is None else f"{r['peak_pct']:.0f}%" + ("*" if slow else "")


def _ratio(r: dict) -> str:
    return "-" if r["ratio"] is None else f"{r['ratio']:.2f}"


def _differs(r: dict) -> str:
    return f" (differs: {', '.join(r['mismatch'])})" if r["mismatch"] else ""


def _float_rows(results: list, peak) -> list:
    head = "| op | shape | ours us | numpy us | PyTorch us | onnxruntime us | best peer / ours | % peak | trials | " \
           "tuning s |"
    lines = [head, "|" + " --- |" * 10]
    for r in results:
        torch_s = _us(r["peers_s"]["torch"]) + (" (cl)" if r["torch_layout"] == "torch_cl" else "")
        lines.append(f"| {r['op']} | {tuple(r['args'])} | {_us(r['ours_s'])} | {_us(r['peers_s']['numpy'])} | "
                     f"{torch_s} | {_us(r['peers_s']['onnxruntime'])}{_differs(r)} | {_ratio(r)} | {_pct(r, peak)} | "
                     f"{r['trials']} | {r['tuning_s']:.0f} |")
    return lines


def _lowp_rows(results: list, peaks: dict) -> list:
    lines = ["| op | shape | ours us | PyTorch bf16 us | onnxruntime int8 us | best peer / ours | ours G/s | % peak | "
             "trials | tuning s |", "|" + " --- |" * 10]
    for r in results:
        lines.append(f"| {r['op']} | {tuple(r['args'])} | {_us(r['ours_s'])} | {_us(r['peers_s']['torch'])} | "
                     f"{_us(r['peers_s']['onnxruntime'])}{_differs(r)} | {_ratio(r)} | {r['gflops']:.0f} | "
                     f"{_pct(r, peaks.get(kind_of(r)))} | {r['trials']} | {r['tuning_s']:.0f} |")
    return lines


def _summary(results: list) -> str:
    g = geomean([r["ratio"] for r in results])
    at_least = sum(1 for r in results if r["ratio"] and r["ratio"] >= 1.0)
    return (f"\nGeometric mean of best peer / ours: {g:.2f}; {at_least} of {len(results)} rows at or above 1.0."
            if g else "\nNo peer ran.")


def _peak_line(kind: str, rs: list, peak) -> str:
    name, unit = PEAK_NAMES[kind]
    own = [r["row_peak_gflops"] for r in rs if r.get("row_peak_gflops") and r["peak_pct"] is not None]
    return f"{name} peak: {peak:.0f} {unit} (2 threads), the highest the peak loop measured" + (
        f"; timed in each compute-bound row's rounds it ran {min(own):.0f}-{max(own):.0f}; *: below 90% of the "
        "peak in that row's rounds (a degraded stretch of the VM)." if own else ".")


def markdown(results: list, peaks: dict) -> str:
    floats = [r for r in results if kind_of(r) == "fp32"]
    lowp = [r for r in results if kind_of(r) != "fp32"]
    lines = []
    if floats:
        lines += _float_rows(floats, peaks.get("fp32")) + [_summary(floats)]
        if peaks.get("fp32"):
            lines.append(_peak_line("fp32", floats, peaks["fp32"]))
            lines.append("% peak counts useful FLOPs (a conv's taps on its zero padding excluded). (cl): PyTorch "
                         "channels-last was faster.")
    if lowp:
        lines += ["", "## Low precision", "", "u8 x s8 -> int32 and bf16 x bf16 -> float32; weights constant for "
                  "every contender (onnxruntime's initializers); integer results equal, bf16 within 2^-7.", ""]
        lines += _lowp_rows(lowp, peaks) + [_summary(lowp)]
        lines += [_peak_line(k, [r for r in lowp if kind_of(r) == k], peaks[k])
                  for k in dict.fromkeys(map(kind_of, lowp)) if peaks.get(k)]
        lines.append("G/s: G-operations a second (a multiply-add is 2), GOP/s for int8, GFLOP/s for bf16.")
    return "\n".join(lines) + "\n"


def chart(results: list, path: Path) -> bool:
    """Ratios per operator and shape on a log scale with 1.0 marked; False when matplotlib is missing."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rs = [r for r in results if r["ratio"]]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(rs)), 4))
    ratios = [r["ratio"] for r in rs]
    # bars grow from 1.0: up is faster than the best peer, down is slower
    ax.bar(range(len(rs)), [x - 1 for x in ratios], bottom=1.0,
           color=["tab:green" if x >= 1 else "tab:red" for x in ratios])
    ax.set_yscale("log")
    ax.set_ylim(min(ratios + [1.0]) / 1.3, max(ratios + [1.0]) * 1.3)
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    # a range within one decade has only minor ticks: label 2, 3, 5 of each decade
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:e}"[0] in "235" else ""))
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_xticks(range(len(rs)), [f"{r['op']} {','.join(map(str, r['args']))}" for r in rs], rotation=90,
                  fontsize=6)
    ax.set_ylabel("best peer time / ansorc time")
    ax.set_title(f"ansorc vs best peer (geomean {geomean([r['ratio'] for r in rs]) or 0:.2f})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
