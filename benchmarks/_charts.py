"""Line charts as SVG for the docs, written by the benchmarks that measure them.

matplotlib (the ``bench`` extra) is imported only here, when a chart is asked for.
The output is deterministic (no date, fixed ids), so re-running a benchmark on the
same figures leaves the checked-in file unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def line_chart(
    path: str | Path,
    *,
    title: str,
    x_label: str,
    y_label: str,
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    note: str = "",
    log_y: bool = False,
) -> None:
    """One line per ``series`` entry (label -> (xs, ys)), written to ``path`` as SVG."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise SystemExit("charts need matplotlib: pip install -e '.[bench]'") from exc
    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "convo-engine"  # stable ids from run to run
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for label, (xs, ys) in series.items():
        axes.plot(xs, ys, label=label, linewidth=1.6)
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    if log_y:
        axes.set_yscale("log")
    axes.grid(True, alpha=0.3)
    axes.legend(frameon=False)
    if note:
        figure.text(0.01, 0.01, note, fontsize=7, color="#555555")
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
