"""The k2-tree issue's bars, from the summaries of one or more device_k2tree.sh runs.

For every graph measured both in its input order (reorder "none") and renumbered
(``--order``, default degree), per configuration (default k2F_auto, the library's
defaults): the tree's size against the FP32 and Boolean CSR, and the right and left
product times against cuSPARSE, with the renumbered tree timed against cuSPARSE on the
input numbering plus the two gathers a product in the caller's ids adds (what a user who
asks for reorder="degree" gets) and against cuSPARSE on the renumbered matrix. The bars
(Tosoni & Mencagli's GB10 ratios): tree 2.3-27x smaller than the FP32 CSR, k2+F at most
2.4x cuSPARSE's time on the right and 2.6x on the left.

    python benchmarks/k2tree_bars.py OUT.json SUMMARY.json [SUMMARY.json ...] [--order degree]
"""

import argparse
import json
import os

BARS = {"size_min": 2.3, "right_max": 2.4, "left_max": 2.6}


def _hub_outputs(summary_path, group, graph):
    """The padded hub outputs of each configuration of ``graph``: from the summary's row, or
    (summaries written before device_k2tree.sh copied them) from the group's own results file."""
    src = os.path.join(os.path.dirname(summary_path), group.get("source", ""))
    if os.path.isfile(src):
        with open(src) as f:
            for r in json.load(f).get("graphs", []):
                if r.get("graph") == graph and r.get("hub_outputs"):
                    return r["hub_outputs"]
    return {}


def rows(summaries, order, config):
    by = {}
    for path in summaries:
        with open(path) as f:
            s = json.load(f)
        for gr in s["groups"]:
            for g in gr["graphs"]:
                if "time_ms" not in g:
                    continue
                if "hub_outputs" not in g:
                    g["hub_outputs"] = _hub_outputs(path, gr, g["graph"])
                by.setdefault(g["graph"].split("+")[0], {})[gr["reorder"]] = (g, s["commit"], path)
    out = []
    for name, d in by.items():
        if "none" not in d:
            continue
        o, commit, src = d["none"]
        to = o["time_ms"]
        r = {"graph": name, "commit": commit, "source": src,
             "input_order": {"csr_fp32_over_tree": o["ratio_csr_fp32_over_tree"],
                             "right_vs_cusparse": to[f"{config}_right"] / to["cusparse_right"],
                             "left_vs_cusparse": to[f"{config}_left"] / to["cusparse_left"],
                             "ms": {k: to[k] for k in ("cusparse_right", "cusparse_left",
                                                       f"{config}_right", f"{config}_left")}}}
        if order in d:
            g, _, src2 = d[order]
            t, gat = g["time_ms"], g["perm_gather_ms"]["right"]
            r[order] = {"source": src2, "csr_fp32_over_tree": g["ratio_csr_fp32_over_tree"],
                        "hub_outputs": (g.get("hub_outputs") or {}).get(config, 0),
                        "gather_ms": gat,
                        "right_vs_input_cusparse_with_gathers": (t[f"{config}_right"] + gat) / to["cusparse_right"],
                        "left_vs_input_cusparse_with_gathers": (t[f"{config}_left"] + gat) / to["cusparse_left"],
                        "right_vs_renumbered_cusparse": t[f"{config}_right"] / t["cusparse_right"],
                        "left_vs_renumbered_cusparse": t[f"{config}_left"] / t["cusparse_left"],
                        "right_over_input_order_tree": t[f"{config}_right"] / to[f"{config}_right"],
                        "ms": {k: t[k] for k in ("cusparse_right", "cusparse_left",
                                                 f"{config}_right", f"{config}_left")}}
            ro = r[order]
            ro["meets_bars"] = (ro["csr_fp32_over_tree"] >= BARS["size_min"]
                                and ro["right_vs_input_cusparse_with_gathers"] <= BARS["right_max"]
                                and ro["left_vs_input_cusparse_with_gathers"] <= BARS["left_max"])
        io = r["input_order"]
        io["meets_bars"] = (io["csr_fp32_over_tree"] >= BARS["size_min"] and io["right_vs_cusparse"] <= BARS["right_max"]
                            and io["left_vs_cusparse"] <= BARS["left_max"])
        out.append(r)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("summaries", nargs="+")
    p.add_argument("--order", default="degree")
    p.add_argument("--config", default="k2F_auto")
    a = p.parse_args(argv)
    res = {"bars": BARS, "order": a.order, "config": a.config, "graphs": rows(a.summaries, a.order, a.config)}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    for r in res["graphs"]:
        io, ro = r["input_order"], r.get(a.order)
        line = (f"{r['graph']:22s} input order: tree {io['csr_fp32_over_tree']:.2f}x smaller, right "
                f"{io['right_vs_cusparse']:.2f}x, left {io['left_vs_cusparse']:.2f}x")
        if ro:
            line += (f" | {a.order}: tree {ro['csr_fp32_over_tree']:.2f}x, right "
                     f"{ro['right_vs_input_cusparse_with_gathers']:.2f}x, left "
                     f"{ro['left_vs_input_cusparse_with_gathers']:.2f}x (bars met: {ro['meets_bars']})")
        print(line)


if __name__ == "__main__":
    main()
