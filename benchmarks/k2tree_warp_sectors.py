"""What the k2+F leaves kernel's warps touch of x and y, on the host (no GPU): the level of
4 x 4 blocks in Z-order (the nodes the leaves take, 32 consecutive ones per warp), per order
of the vertices (input, full degree order, degree_order(g, head=F)). Per warp: the distinct
32-byte sectors of a float32 x (right product: the blocks' columns) and y (rows), and 128-byte
lines of x. Also where in the level the top-left corner of the hubs lies: the fraction of
the blocks (a prefix of the Z-order) with both block row and column below 2^k / 4 for the
largest 2^k <= hubs. The question: does the degree order's slower right product come from
its warps touching more memory (it does not, on kron:20), or from its hub rows' atomics
coming all at once (the corner is one contiguous range of the level)?

    python benchmarks/k2tree_warp_sectors.py --graphs kron:20 --out benchmarks/results/k2tree_warp_sectors.json
"""
import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import commit, dirty  # noqa: E402


def _spread(v):
    v = v.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    for sh, m in ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
                  (2, 0x3333333333333333), (1, 0x5555555555555555)):
        v = (v | (v << np.uint64(sh))) & np.uint64(m)
    return v


def _per_warp_distinct(v, nw):
    W = np.sort(v[: nw * 32].reshape(nw, 32), axis=1)
    return int((1 + (np.diff(W, axis=1) != 0).sum(1)).sum())


def warp_stats(rows, cols, hubs):
    code = np.unique((_spread(rows >> 2) << np.uint64(1)) | _spread(cols >> 2))
    br = np.zeros(code.size, np.int64)
    bc = np.zeros(code.size, np.int64)
    for b in range(32):
        br |= ((code >> np.uint64(2 * b + 1)) & np.uint64(1)).astype(np.int64) << b
        bc |= ((code >> np.uint64(2 * b)) & np.uint64(1)).astype(np.int64) << b
    nw = code.size // 32
    side = 1 << max(int(np.log2(max(hubs, 4))) - 2, 0)  # the corner, in 4 x 4 blocks
    corner = (br < side) & (bc < side)
    first_out = int(np.argmin(corner)) if not corner.all() else code.size
    return {"blocks": int(code.size), "warps": nw,
            "x_sectors_per_warp": _per_warp_distinct(bc // 2, nw) / nw,
            "y_sectors_per_warp": _per_warp_distinct(br // 2, nw) / nw,
            "x_lines_per_warp": _per_warp_distinct(bc // 8, nw) / nw,
            "corner_side_vertices": 4 * side, "corner_blocks_share": float(corner.mean()),
            "corner_is_prefix": bool(not corner[first_out:].any())}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", nargs="+", default=["kron:20"])
    ap.add_argument("--heads", nargs="+", type=float, default=[0.003, 0.01])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    from distgraph.formats.reorder import degree_order
    from distgraph.generators import from_spec

    res = {"benchmark": "k2tree_warp_sectors", "commit": commit(), "dirty": dirty(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "rows": []}
    for spec in a.graphs:
        g = from_spec(spec)
        rows = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(g.indptr))
        cols = np.asarray(g.indices, np.int64)
        orders = [("none", None, int(0.01 * g.n)), ("degree", degree_order(g), int(0.01 * g.n))]
        orders += [(f"head{h:g}", degree_order(g, head=h), int(np.ceil(h * g.n))) for h in a.heads]
        for name, nid, hubs in orders:
            r, c = (rows, cols) if nid is None else (nid[rows], nid[cols])
            row = {"graph": spec, "order": name, **warp_stats(r, c, hubs)}
            res["rows"].append(row)
            print(json.dumps(row), flush=True)
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
