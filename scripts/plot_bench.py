#!/usr/bin/env python3
"""Plot infiniccl-bench --json output: one line per (file, mode).

    scripts/plot_bench.py run.json [more.json ...] -o out.png [--metric busbw|time|both]

x is the size in bytes (log2 scale, ticks on the measured sizes, K/M/G
labels); y is the bus bandwidth in GB/s (busbw, the default), the time per
call in microseconds (time, log scale), or both side by side. Rows the
benchmark could not measure, zero-byte rows, and busbw at 1 rank (its factor
is 0 there, so it says nothing) are left out. With several files, each line
is labelled by what differs between them (dtype, ranks, device, op), else by
the file name. Reads the {"metadata", "rows"} object infiniccl-bench writes
(and the bare row array of older versions). Needs matplotlib (Debian:
python3-matplotlib); exits 2 with a message when it is missing or an input
is unusable.
"""

import argparse
import json
import os
import sys

EXIT_USAGE = 2


def fail(message):
    print(f"plot_bench.py: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def size_label(nbytes):
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    if nbytes >= 1 << 10:
        return f"{nbytes / (1 << 10):.3g}K" if nbytes < 1 << 20 else f"{nbytes / (1 << 20):.3g}M"
    return str(int(nbytes))


def load(path):
    """The rows of one file (with its metadata, if any, in each row's reach)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not JSON: {e}")
    rows = doc.get("rows") if isinstance(doc, dict) else doc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        fail(f"{path}: expected the {{\"metadata\", \"rows\"}} object (or the array of "
             "row objects) that infiniccl-bench --json writes")
    for key in ("mode", "bytes"):
        if rows and key not in rows[0]:
            fail(f"{path}: rows lack the key '{key}'")
    return rows


# Row fields that tell runs apart, in the order they go into a label.
DISTINGUISHING = (("dtype", "{}"), ("nranks", "{} ranks"), ("device", "{}"), ("op", "op {}"))


def series(paths):
    """[(label, [row...])] in file order, then mode order of appearance."""
    files = [(path, load(path)) for path in paths]

    def first_value(rows, key):
        return rows[0].get(key) if rows else None

    differing = [(key, fmt) for key, fmt in DISTINGUISHING
                 if len({str(first_value(rows, key)) for _, rows in files}) > 1]
    out = []
    for path, rows in files:
        by_mode = {}
        for row in rows:
            by_mode.setdefault(row["mode"], []).append(row)
        for mode, mode_rows in by_mode.items():
            label = mode
            if len(files) > 1:
                parts = [fmt.format(mode_rows[0].get(key, "?")) for key, fmt in differing]
                label += f" ({', '.join(parts) if parts else os.path.basename(path)})"
            out.append((label, sorted(mode_rows, key=lambda r: r["bytes"])))
    return out


def describe(paths):
    """Title text: the devices, rank counts and dtypes found in the inputs."""
    devices, nranks, dtypes = set(), set(), set()
    for path in paths:
        for row in load(path):
            devices.add(str(row.get("device", "?")))
            nranks.add(str(row.get("nranks", "?")))
            dtypes.add(str(row.get("dtype", "?")))
    dev = ", ".join(sorted(devices))
    if "sim" in devices:
        dev += " (sim = emulated device)"
    return (f"infiniccl-bench: device {dev}; ranks {', '.join(sorted(nranks, key=str))}; "
            f"dtype {', '.join(sorted(dtypes))}")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", metavar="FILE.json")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png")
    parser.add_argument("--metric", choices=("busbw", "time", "both"), default="busbw")
    args = parser.parse_args(argv)

    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        # Name the interpreter: a venv or pyenv python3 may lack matplotlib
        # while the system one (where Debian's package installs) has it.
        fail(f"matplotlib is missing for {sys.executable} (Python "
             f"{sys.version.split()[0]}): install it there (pip install matplotlib), "
             "or run this script with an interpreter that has it (Debian's "
             "/usr/bin/python3 after apt-get install python3-matplotlib)")
    from matplotlib.ticker import FixedLocator, NullLocator

    lines = series(args.inputs)
    metrics = ["busbw", "time"] if args.metric == "both" else [args.metric]
    fig, axes = plt.subplots(1, len(metrics), figsize=(7.5 * len(metrics), 5.5),
                             squeeze=False)
    plotted = 0
    one_rank_left_out = False
    for ax, metric in zip(axes[0], metrics):
        key = "busbw_gbps" if metric == "busbw" else "time_us"
        sizes = set()
        for label, rows in lines:
            pts = [(r["bytes"], r.get(key)) for r in rows
                   if r["bytes"] > 0 and r.get(key) is not None]
            if metric == "busbw" and any(r.get("nranks") == 1 for r in rows):
                one_rank_left_out = one_rank_left_out or bool(pts)
                pts = []
            if metric == "time":
                pts = [(x, y) for x, y in pts if y > 0]
            if not pts:
                continue
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o",
                    markersize=3, label=label)
            sizes.update(x for x, _ in pts)
            plotted += 1
        ax.set_xscale("log", base=2)
        # Ticks on the sizes measured (thinned to about a dozen), never
        # between them.
        ticks = sorted(sizes)
        step = max(1, (len(ticks) + 11) // 12)
        ax.xaxis.set_major_locator(FixedLocator(ticks[::step]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: size_label(int(x))))
        print(f"plot_bench.py: {metric}: x ticks at "
              f"{','.join(size_label(t) for t in ticks[::step])}")
        ax.set_xlabel("size (bytes)")
        if metric == "busbw":
            ax.set_ylabel("busbw (GB/s, GB = 1e9 B)")
            ax.set_ylim(bottom=0)
        else:
            ax.set_yscale("log")
            ax.set_ylabel("time per call (us)")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    if one_rank_left_out:
        print("plot_bench.py: busbw at 1 rank left out (its factor is 0 there)")
    if plotted == 0 and one_rank_left_out:
        fail("only 1-rank busbw, which is 0 by definition: use --metric time")
    if plotted == 0:
        fail("no measured rows with a non-zero size to plot")
    for label, _ in lines:
        print(f"plot_bench.py: line {label}")
    fig.suptitle(describe(args.inputs), fontsize="medium")
    fig.tight_layout()
    try:
        fig.savefig(args.output, format="png", dpi=110)
    except OSError as e:
        fail(f"cannot write {args.output}: {e.strerror}")
    print(f"plot_bench.py: wrote {args.output} ({plotted} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
