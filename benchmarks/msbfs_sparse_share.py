"""What stage 1 of the GPU MS-BFS sees on a graph, computed on the host (no GPU): the share
of virtual slice sets with at most 32 slices (those ``GpuMSBFS(sparse=...)`` runs one slice
per lane, ``dg_ms_sparse_vss`` in kernels/msbfs.cu) and, with ``--levels``, a level-by-level
replay of kappa-source batches (the sources in compact BFS balls, as closeness() batches them
on road graphs) that counts, per queued VSS, what each stage-1 path does with it:

* ``nact`` active BFSs of the slice set (MMA-loop iterations), ``fverts`` frontier vertices
  (CUDA-core path iterations), which of the two the kernel takes (``tc_ratio`` 4);
* ``row_slots``: the flush rows (0-3) of the 128-slice layout in which some lane has new bits
  (each a dependent Vn round trip in the default build), against one for the sparse path;
* ``steps``: iterations of the sparse path (the largest ``popc(mask & frontier)`` of a slice).

From those counts and per-item instruction counts read from the SASS of nvcc 13.0 for sm_90
(``--instr``), it estimates warp instructions per VSS of both paths: an estimate of issue
work, not a measurement of time.  Writes JSON (commit, date) to ``--out``::

    python benchmarks/msbfs_sparse_share.py --graphs road-NY,cond-mat-2005,email-Enron \\
        --levels road-NY --batches 2 --out benchmarks/results/msbfs_sparse_share.json
"""

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: warp instructions per item, from the SASS of distgraph_msbfs_blocks (nvcc 13.0, sm_90,
#: DG_MS_BLOCK=1024, cuobjdump -sass): MMA loop per active BFS (FLO, VOTE, 2 BMMA, 4 ISETP,
#: 4 SEL, 4 LOP3, ...), CUDA-core path per frontier vertex (8 SHFL, 32 predicated LOP3, the 4
#: row predicates), a flushed row (2 LDG.128, 8 LOP3, 8 guarded REDs with their branches, the
#: mark: dirty-bit load, ATOM, list slot), one sparse-path step (8 SHFL, 8 LOP3, the
#: bit arithmetic and VOTE), the per-VSS base (queue entry, frontier/row/mask loads, ballots)
#: and the sparse path's extra set-up (5 SHFL and the selects), all rounded.
INSTR = {"mma_per_bfs": 28, "cuda_per_vertex": 46, "flush_row": 60, "sparse_step": 23, "base": 40,
         "sparse_setup": 12, "nact_popc": 16}


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def _prep(spec):
    from gpu_closeness import load

    from distgraph.backends.gpu.bfs import _cached_preprocess
    from distgraph.formats.reorder import permute_graph
    from distgraph.graph import Graph

    g = load(spec)
    g2, new_id, b, _udiv, info = _cached_preprocess(Graph(g.indptr, g.indices, None, directed=True), "auto", 16384,
                                                    None)
    if g2 is None:
        g2 = permute_graph(Graph(g.indptr, g.indices, None, directed=True), new_id) if new_id is not None else g
    return g, g2, new_id, b, info


def share_row(b, info):
    from distgraph.backends.gpu.msbfs import SPARSE_SHARE, sparse_share

    m = b.masks.reshape(-1, 128)
    cnt = (m != 0).sum(axis=1)
    sp = ~(m[:, 32:] != 0).any(axis=1)
    return {"reorder": info["method"], "vss": int(b.num_vss), "slice_sets": int(b.num_slice_sets),
            "slices_per_vss_median": float(np.median(cnt)), "slices_per_vss_mean": round(float(cnt.mean()), 2),
            "sparse_share": round(sparse_share(b), 4),
            "slices_in_sparse_vss": round(float(cnt[sp].sum() / cnt.sum()), 4),
            "auto_sparse": sparse_share(b) >= SPARSE_SHARE}


def _popc(a):
    """popcount of uint64 array (elementwise)."""
    v = a.view(np.uint8)
    return np.unpackbits(v, axis=-1).reshape(a.shape + (64,)).sum(axis=-1)


def replay(g, g2, new_id, b, batch_sources, tc_ratio=4):
    """Level-synchronous MS-BFS of one batch (<= 256 sources, vertex ids of g) on g2, counting
    per queued VSS what stage 1 does (see the module docstring)."""
    n = g2.n
    rho = (n + 7) // 8
    src = np.asarray(batch_sources, np.int64)
    if new_id is not None:
        src = np.asarray(new_id)[src]
    k = src.size
    Wd = 4  # 256 bits as 4 uint64
    F = np.zeros((rho * 8, Wd), np.uint64)
    V = np.zeros((rho * 8, Wd), np.uint64)
    for c, s in enumerate(src.tolist()):
        F[s, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    V |= F
    ip, ix = np.asarray(g2.indptr, np.int64), np.asarray(g2.indices, np.int64)
    masks = b.masks.reshape(-1, 128)
    rows = b.row_ids.reshape(-1, 128).astype(np.int64)
    rp = np.asarray(b.real_ptrs, np.int64)
    tot = {"levels": 0, "vss": 0, "sparse_vss": 0, "old_instr": 0, "new_instr": 0, "old_row_slots": 0,
           "new_row_slots": 0, "mma_vss": 0, "cuda_vss": 0, "nact_sum": 0, "fverts_sum": 0, "steps_sum": 0}
    I = INSTR
    while True:
        fv = np.flatnonzero(F.any(axis=1))
        if fv.size == 0:
            break
        tot["levels"] += 1
        sets = np.unique(fv >> 3)
        Fs = F.reshape(rho, 8, Wd)[sets]                        # (S, 8, Wd)
        fmask = (Fs.any(axis=2) * (1 << np.arange(8))).sum(axis=1)
        nact = _popc(np.bitwise_or.reduce(Fs, axis=1)).sum(axis=1)
        fverts = np.array([bin(int(x)).count("1") for x in fmask], np.int64)
        # every queued VSS of the level at once: vss ids, their set's index in `sets`
        cnt = rp[sets + 1] - rp[sets]
        si = np.repeat(np.arange(sets.size), cnt)
        vss = np.concatenate([np.arange(rp[s], rp[s + 1]) for s in sets.tolist()]) if cnt.sum() else \
            np.zeros(0, np.int64)
        if vss.size:
            mk = masks[vss].astype(np.int64) & fmask[si][:, None]                   # (Q, 128)
            M = np.zeros(mk.shape + (Wd,), np.uint64)
            for bb in range(8):
                on = ((mk >> bb) & 1).astype(bool)
                M |= np.where(on[:, :, None], Fs[si, bb][:, None, :], np.uint64(0))
            M &= ~V[rows[vss]]
            hit = M.any(axis=2)                                                      # rows with new bits
            slots = hit.reshape(-1, 32, 4).any(axis=1).sum(axis=1)                   # flush rows 0-3 used
            steps = np.zeros(mk.shape, np.int64)
            for bb in range(8):
                steps += (mk >> bb) & 1
            steps = steps.max(axis=1)
            sparse = ~(masks[vss, 32:] != 0).any(axis=1)
            a, f = nact[si], fverts[si]
            use_cuda = a > tc_ratio * f
            old = I["base"] + I["nact_popc"] + np.where(use_cuda, I["cuda_per_vertex"] * f, I["mma_per_bfs"] * a) \
                + I["flush_row"] * slots
            s1 = hit.any(axis=1).astype(np.int64)
            new = np.where(sparse, I["base"] + I["sparse_setup"] + I["sparse_step"] * steps + I["flush_row"] * s1,
                           old + 3)
            tot["vss"] += int(vss.size)
            tot["sparse_vss"] += int(sparse.sum())
            tot["cuda_vss"] += int(use_cuda.sum())
            tot["mma_vss"] += int((~use_cuda).sum())
            tot["old_instr"] += int(old.sum())
            tot["new_instr"] += int(new.sum())
            tot["old_row_slots"] += int(slots.sum())
            tot["new_row_slots"] += int(np.where(sparse, s1, slots).sum())
            tot["nact_sum"] += int(a.sum())
            tot["fverts_sum"] += int(f.sum())
            tot["steps_sum"] += int(steps[sparse].sum())
        # next level (exact): N[v] = OR of F[u] over arcs u -> v, new = N & ~V
        srcs = np.repeat(fv, ip[fv + 1] - ip[fv])
        dst = np.concatenate([ix[ip[u]:ip[u + 1]] for u in fv.tolist()]) if fv.size else np.zeros(0, np.int64)
        order = np.argsort(dst, kind="stable")
        dst, srcs = dst[order], srcs[order]
        uniq, start = np.unique(dst, return_index=True)
        N = np.bitwise_or.reduceat(F[srcs], start, axis=0) if uniq.size else np.zeros((0, Wd), np.uint64)
        N &= ~V[uniq]
        F[:] = 0
        F[uniq] = N
        V[uniq] |= N
    v = max(tot["vss"], 1)
    tot.update({"old_instr_per_vss": round(tot["old_instr"] / v, 1),
                "new_instr_per_vss": round(tot["new_instr"] / v, 1),
                "old_row_slots_per_vss": round(tot["old_row_slots"] / v, 3),
                "new_row_slots_per_vss": round(tot["new_row_slots"] / v, 3),
                "nact_mean": round(tot["nact_sum"] / v, 2), "frontier_vertices_mean": round(tot["fverts_sum"] / v, 2),
                "sparse_steps_mean": round(tot["steps_sum"] / max(tot["sparse_vss"], 1), 3),
                "stage1_instr_ratio_old_over_new": round(tot["old_instr"] / max(tot["new_instr"], 1), 2)})
    return tot


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="road-NY,cond-mat-2005,email-Enron")
    ap.add_argument("--levels", default="", help="graphs to replay level by level (comma separated)")
    ap.add_argument("--batches", type=int, default=1, help="ball batches of 256 replayed per graph")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    res = {"env": {"commit": _commit(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "note": "host computation (no GPU); instruction counts are estimates from SASS",
        "instr_per_item": INSTR}, "graphs": {}}
    replay_set = {s for s in a.levels.split(",") if s}
    for spec in [s for s in a.graphs.split(",") if s]:
        g, g2, new_id, b, info = _prep(spec)
        row = {"n": int(g.n), "m": int(g.m), **share_row(b, info)}
        if spec in replay_set:
            from distgraph.algorithms.msbfs import ball_sources

            tptr, tidx, _ = g.csc()
            srcs = np.flatnonzero(np.diff(g.indptr) > 0).astype(np.int64)
            t0 = time.perf_counter()
            ball = ball_sources(g.indptr, g.indices, tptr, tidx, srcs, 256)
            row["replay"] = []
            for bi in range(a.batches):
                t1 = time.perf_counter()
                r = replay(g, g2, new_id, b, ball[256 * bi:256 * (bi + 1)])
                r["batch"] = bi
                r["seconds"] = round(time.perf_counter() - t1, 1)
                row["replay"].append(r)
                print(spec, json.dumps(r), flush=True)
            row["ball_s"] = round(time.perf_counter() - t0, 1)
        res["graphs"][spec] = row
        print(spec, json.dumps({k: v for k, v in row.items() if k != "replay"}), flush=True)
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
