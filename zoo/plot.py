"""Plots for people who would rather look than read (matplotlib, an optional dependency:
pip install "zoo[plot]"): TFLOP/s against problem size, zoo and torch one line each."""

from __future__ import annotations

from pathlib import Path

from .cuda import ZooError


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ZooError("--plot needs matplotlib: pip install matplotlib (or pip install \"zoo[plot]\")") from exc
    return plt


def _save(plt, fig, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    # the saved area grows to hold every title and label: a title centred over axes that long
    # tick labels push right ran past the figure's edge
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    return path


def bench_plot(rows: list[dict], title: str, path: str | Path) -> Path:
    """One line per kernel of the zoo that ran and one for torch.mm: TFLOP/s against the
    problem's FLOP count (log scale), per suite a marker style; `rows` as `zoo bench --json`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    ordered = sorted(rows, key=lambda r: 2 * r["m"] * r["n"] * r["k"])
    lines = {"torch.mm": [(2 * r["m"] * r["n"] * r["k"], r["torch_tflops"]) for r in ordered]}
    for r in ordered:
        lines.setdefault(f"zoo: {r['kernel']}", []).append((2 * r["m"] * r["n"] * r["k"], r["tflops"]))
    for name, points in lines.items():
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o" if name == "torch.mm" else "s", linestyle="--" if name == "torch.mm" else "-",
                label=name, color="black" if name == "torch.mm" else None)
    ax.set_xscale("log")
    ax.set_xlabel("problem size, FLOP (2 M N K)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(plt, fig, path)


def timeline_plot(spans: list[tuple[str, int, float, float]], lanes: list[str], title: str,
                  path: str | Path) -> Path:
    """The pipeline demo's copy-in / GEMM / copy-out timeline: one row per engine, a bar per
    step (spans: lane, GEMM index, start us, end us)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 2 + 0.5 * len(lanes)))
    for lane, i, start, end in spans:
        row = lanes.index(lane)
        ax.barh(row, end - start, left=start, height=0.6, color=f"C{i % 10}", edgecolor="black", linewidth=0.5)
        ax.text((start + end) / 2, row, str(i), ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set_xlabel("us from the first step")
    ax.set_title(title, fontsize=10)
    return _save(plt, fig, path)


def models_plot(rows: list[dict], title: str, path: str | Path) -> Path:
    """`zoo bench --model`: for each model and way of running it, torch's time over the zoo's
    (above 1: the zoo is faster), one horizontal bar each; rows as its --json."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(rows)))
    labels = [f"{r['model']}: {r['case']}" for r in rows]
    values = [r["torch_ms"] / r["zoo_ms"] for r in rows]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in values]
    ax.barh(range(len(rows)), values, color=colors)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}x", va="center", fontsize=8)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("torch's time / the zoo's time (above 1: the zoo is faster)")
    ax.set_title(title, fontsize=10)
    return _save(plt, fig, path)
