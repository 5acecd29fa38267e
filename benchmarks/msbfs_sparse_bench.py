"""Stage 1's sparse path of the GPU MS-BFS (``GpuMSBFS(sparse=...)``, DG_MS_SPARSE) against the
default build: closeness of every vertex on the block schedule, as
``benchmarks/gpu_closeness.py --block-sweep`` times it (same rows, same checks: each order's first
row checks its first batch against the CPU backend, every later row's totals must equal the
first row's bit for bit), with variant labels that also set the path: ``<label>+on``,
``<label>+off`` or ``<label>+auto`` (e.g. ``b1024+off``, ``b1024+on``, ``b1024+on+sdb``).  Each
row also records ``sparse`` (the path the runner was built with) and ``sparse_share`` (its
VSSs with at most 32 slices).  Run by ``benchmarks/device_h1_closeness.sh``::

    python benchmarks/msbfs_sparse_bench.py OUTDIR road-NY:ball,cond-mat-2005:input,email-Enron:input \\
        b1024+off,b1024+on,b1024+on+sdb
    -> OUTDIR/gpu_closeness_sparse.json
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gpu_closeness as gc  # noqa: E402


def main(argv):
    outdir, graphs, variants = argv[0], argv[1], argv[2]
    from distgraph.backends.gpu import msbfs

    made = []

    class Recorded(msbfs.GpuMSBFS):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self)

    msbfs.GpuMSBFS = Recorded   # bench_gpu imports it from the module at call time
    base_kwargs = gc.variant_kwargs

    def variant_kwargs(label):
        kw = {}
        for part in label.split("+"):
            if part in ("on", "off", "auto"):
                kw["sparse"] = part
                continue
            k = base_kwargs(part)
            if k is None:
                return None
            kw.update(k)
        return kw

    base_bench = gc.bench_gpu

    def bench_gpu(*a, **kw):
        first = len(made)
        res = base_bench(*a, **kw)
        r = made[first]   # the timed runner (a grid-schedule companion, if any, comes later)
        res["sparse"] = bool(r.sparse)
        res["sparse_share"] = float(r.sparse_share)
        return res

    gc.variant_kwargs = variant_kwargs
    gc.bench_gpu = bench_gpu
    gc.SWEEP_KEYS = tuple(gc.SWEEP_KEYS) + ("sparse", "sparse_share")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    merged = {}
    for item in [s for s in graphs.split(",") if s]:
        spec, _, order = item.partition(":")
        sub = out / f"sparse_{spec}"
        gc.main(["--outdir", str(sub), "--block-sweep", spec, "--sweep-variants", variants,
                 "--sweep-orders", order or "input"])
        res = json.loads((sub / "gpu_closeness_block_sweep.json").read_text())
        if not merged:
            merged = {"env": res["env"], "sweep": {"variants": variants, "graphs": graphs}, "graphs": {}}
        merged["graphs"].update(res["graphs"])
        (out / "gpu_closeness_sparse.json").write_text(json.dumps(merged, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [os.environ.get("OUTDIR", "out"), "road-NY:ball", "b1024+off,b1024+on"]))
