"""`ansorc profile`'s output: the result of profile.profile as a markdown-ish table for the terminal, and as a PNG
of horizontal bars (ansorc per task beside onnxruntime per op type, one time axis). matplotlib is optional: without
it no PNG is written and a NoChartWarning says so."""
from __future__ import annotations

import warnings


class NoChartWarning(UserWarning):
    """matplotlib is not installed: the profile's bar chart was not written."""


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n != 1 else f"1 {what[:-1]}"   # what: a plural in -s


def _ms(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _rate(r: dict) -> str:
    """G-operations a second in the task's own unit: GOP/s for an integer task, GFLOP/s otherwise."""
    return "-" if r["gflops"] is None else f"{r['gflops']:.1f}" + (" GOP/s" if r.get("unit") == "GOP/s" else "")


def task_table(result: dict, top: int) -> list:
    """The lines of the per-task table: the `top` slowest tasks, then the rest in one line and the total."""
    rows = result["tasks"]
    logged = any(r["alone_ms"] is not None for r in rows)
    alone = " alone (log) ms |" if logged else ""
    out = [f"| task | weight | ms in the model | share | GFLOP/s |{alone} program |",
           "| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if logged else "") + " --- |"]
    for r in rows[:top]:
        cell = f" {_ms(r['alone_ms'])} |" if logged else ""
        out.append(f"| {r['task']} | {r['weight']} | {r['ms']:.3f} | {r['share']:.1f}% | {_rate(r)} "
                   f"|{cell} {r['source']} |")
    out += _rest(rows[top:], "tasks", 2 + logged)
    weights = sum(r["weight"] for r in rows)
    est = sum(r["alone_ms"] for r in rows if r["alone_ms"] is not None)
    cell = f" {est:.3f} |" if logged else ""
    out.append(f"| all {len(rows)} tasks | {weights} | {result['ansorc']['kernels_ms']:.3f} | 100% | |{cell} "
               f"{sum(r['source'] == 'log' for r in rows)} from the log |")
    return out


def _rest(rows: list, what: str, blanks: int) -> list:
    if not rows:
        return []
    ms, share = sum(r["ms"] for r in rows), sum(r["share"] for r in rows)
    return [f"| {_count(len(rows), 'more ' + what)} | | {ms:.3f} | {share:.1f}% |" + " |" * blanks]


def ort_tables(ort: dict, top: int) -> list:
    """onnxruntime's node times by op type and its slowest nodes, or the line saying why there are none."""
    if not ort["available"]:
        return [ort["note"]]
    out = ["| onnxruntime op | nodes | ms | share |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {r['op']} | {r['nodes']} | {r['ms']:.3f} | {r['share']:.1f}% |" for r in ort["by_op"][:top]]
    rest = ort["by_op"][top:]
    if rest:
        out.append(f"| {_count(len(rest), 'more op types')} | {sum(r['nodes'] for r in rest)} | "
                   f"{sum(r['ms'] for r in rest):.3f} | {sum(r['share'] for r in rest):.1f}% |")
    out.append(f"| all {len(ort['by_op'])} op types | {len(ort['nodes'])} | {ort['nodes_ms']:.3f} | 100% |")
    out += ["", "| onnxruntime node | op | ms |", "| --- | --- | ---: |"]
    out += [f"| {r['node']} | {r['op']} | {r['ms']:.3f} |" for r in ort["nodes"][:top]]
    rest = ort["nodes"][top:]
    if rest:
        out.append(f"| {_count(len(rest), 'more nodes')} | | {sum(r['ms'] for r in rest):.3f} |")
    return out


def totals(result: dict) -> list:
    """The end-to-end lines: both runs' medians with profiling off, and what the kernels / nodes sum to."""
    ours, ort = result["ansorc"], result["onnxruntime"]
    n = result["threads"]
    line = f"end to end (median of {result['rounds']} runs, {n} thread{'s' * (n != 1)}, profiling off): " \
           f"ansorc {ours['run_ms']:.3f} ms"
    if ort["available"]:
        line += f", onnxruntime {ort['run_ms']:.3f} ms (speedup {ort['run_ms'] / ours['run_ms']:.2f}x)"
    sums = f"kernels sum to {ours['kernels_ms']:.3f} ms"
    if ort["available"]:
        sums += f"; onnxruntime's nodes to {ort['nodes_ms']:.3f} ms"
    return [line, sums]


def table(result: dict, top: int) -> str:
    """The whole terminal report."""
    head = f"{result['model']}: {len(result['tasks'])} tasks, each call timed inside the model " \
           f"(median of {result['rounds']} runs, alternating with onnxruntime)"
    lines = [head, "", *task_table(result, top), "", *ort_tables(result["onnxruntime"], top), "", *totals(result)]
    if result.get("png"):
        lines.append(f"chart: {result['png']}")
    return "\n".join(lines)


def _bars(rows: list, key: str, top: int) -> list:
    """(label, ms) of the `top` first rows, and one bar for the rest."""
    bars = [(r[key], r["ms"]) for r in rows[:top]]
    if rows[top:]:
        bars.append((f"{len(rows) - top} more", sum(r["ms"] for r in rows[top:])))
    return bars


def chart(result: dict, path: str, top: int) -> str | None:
    """A PNG of horizontal bars: the `top` slowest tasks of ansorc and op types of onnxruntime (and a bar for the
    rest of each), in ms on one axis.
    Returns the path, or None (with a NoChartWarning) without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        warnings.warn(f"matplotlib is not installed: no chart written to {path} (pip install matplotlib)",
                      NoChartWarning, stacklevel=2)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ort = result["onnxruntime"]
    panels = [("ansorc, per task", _bars(result["tasks"], "task", top), result["ansorc"]["kernels_ms"])]
    if ort["available"]:
        panels.append(("onnxruntime, per op type", _bars(ort["by_op"], "op", top), ort["nodes_ms"]))
    height = 1.2 + 0.28 * max(len(p[1]) for p in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), height), sharex=True, squeeze=False)
    for ax, (title, bars, total) in zip(axes[0], panels):
        ax.barh([name for name, _ in bars][::-1], [ms for _, ms in bars][::-1],
                color="tab:blue" if title.startswith("ansorc") else "tab:orange")
        ax.set_title(f"{title} (sum {total:.3f} ms)", fontsize=10)
        ax.set_xlabel("ms per run")
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(f"{result['model']}: where the time goes", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


__all__ = ["table", "chart", "NoChartWarning"]
