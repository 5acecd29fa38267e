#!/usr/bin/env bash
# Every k2-tree SpMV device call, on one GPU (an H200 and its 16 host cores), in one script:
# (1) GPU tests (TESTS), split into T_JOBS pytest processes run at once, while the host
#     prepares every graph of the plan in the background (niced);
# (2) then, one group after another, benchmarks/gpu_k2tree_bench.py --prepared: configurations
#     against cuSPARSE on prepared graphs (a group: graphs, configurations, products, ordering);
# (3) OUTDIR/k2tree_summary.json: commit, device, date, the timeline, the tests (passed, failed,
#     those the limit left unrun) and per group and graph the times (ms), the ratios to cuSPARSE,
#     each configuration over k2F (k2 for tree-only rows) and the leaves kernel each product ran.
# It replaces device_h2_k2tree.sh, device_h5_k2tree_auto.sh and device_k2tree_agg.sh (retired;
# their calls are written below as the environment of this one).
#
#   DISTGRAPH_COMMIT=$(git rev-parse HEAD) [VAR=... ...] bash benchmarks/device_k2tree.sh OUTDIR [LIMIT]
#
# LIMIT (seconds, default 150) bounds the whole call; groups the limit leaves no time for are
# skipped (listed in the summary), so put the most valuable group first. Environment:
#   TESTS     pytest arguments, run first (default: tests/test_gpu_k2tree_prefetch.py
#             tests/test_gpu_k2tree.py, the whole files); empty: no tests
#   T_TESTS   seconds for the tests (default 100; then SIGINT, so each part still writes its
#             results); T_JOBS pytest processes (default 6; the tests are dealt out in turn)
#   GRAPHS, CONFIGS, PRODUCTS, REORDER   one group (defaults: kron:21 kron:22 kron:23 | k2F k2F_auto |
#             right left | none); configurations as in gpu_k2tree_bench.py (cuSPARSE always runs)
#   PLAN      several groups instead, separated by ';', each NAME|REORDER|GRAPHS|CONFIGS|PRODUCTS[|CAP]
#             (lists space-separated; an empty field takes the variable above; CAP: at most CAP
#             seconds for the group's graphs to start); results in OUTDIR/NAME/
#   PREP_JOBS processes per ordering preparing its graphs (default 3), PREP_THREADS numba
#             threads each (default 3); one --prepare per ordering, graphs in plan order
#   GRAPH_S   a group starts no graph later than GRAPH_S seconds (default 30) before the end
# The configurations (k2F, k2F_auto, tree-only k2*, aggregated *_agg, ...) are gpu_k2tree_bench.py's;
# a tree of 2**32 nodes or more (kron:24) takes the 64-bit directory by itself. A carried
# .cache/k2data gives the real-graph tests their files (DISTGRAPH_DATA).
# Host preparation on the device (--jobs 3, beside the tests): kron:21/22/23 ready after
# 19/34/68 s (benchmarks/results/session6_x2/call6/h2/prepare.log), degree-reordered 29/46/84 s
# (benchmarks/results/session4_x2/k2tree_reorder_degree_prepare.log).
#
# The retired scripts' calls:
#   device_h2_k2tree.sh OUTDIR:      TESTS='tests/test_gpu_k2tree_prefetch.py -x -k "not 64bit"' T_TESTS=80
#                                    CONFIGS="k2F k2F_pre k2F_pre_lanes k2F_k2 k2F_k2_pre"
#   device_h5_k2tree_auto.sh OUTDIR: TESTS='-m gpu tests/test_gpu_k2tree_prefetch.py tests/test_gpu_k2tree.py
#                                    -k "not 64bit and not aggregated and not real_graphs"' T_TESTS=95
#                                    CONFIGS="k2F k2F_pre_lanes k2F_auto k2 k2_pre k2_pre_lanes"
#   device_k2tree_agg.sh OUTDIR 160: TESTS= CONFIGS="k2F k2F_k2 k2F_agg k2F_k2_agg k2F_k8_agg k2F_agg_s64"
# (with OUTDIR LIMIT as given; T_JOBS=1 runs the tests in one process, as they did).
set -uo pipefail
OUTDIR=${1:?usage: device_k2tree.sh OUTDIR [LIMIT]}; LIMIT=${2:-150}
cd "$(dirname "$0")/.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p "$OUTDIR"; OUTDIR=$(cd "$OUTDIR" && pwd)
. benchmarks/gpu_env.sh "$OUTDIR" || exit 1
[ -d .cache/k2data ] && export DISTGRAPH_DATA=$PWD/.cache/k2data
log() { echo "$(el) s: $*" | tee -a "$OUTDIR/timeline.txt"; }

# ---- the plan: one group from GRAPHS/CONFIGS/PRODUCTS/REORDER, or PLAN's groups
D_GRAPHS=${GRAPHS:-kron:21 kron:22 kron:23}; D_CONFIGS=${CONFIGS:-k2F k2F_auto}
D_PRODUCTS=${PRODUCTS:-right left}; D_REORDER=${REORDER:-none}
NAMES=(); REORD=(); GRS=(); CFS=(); PRS=(); CAPS=()
IFS=';' read -r -a GROUPS_ <<< "${PLAN:-main|||||}"
for grp in "${GROUPS_[@]}"; do
  [ -z "${grp// /}" ] && continue
  IFS='|' read -r name reorder graphs configs products cap <<< "$grp"
  name=$(echo "$name" | tr -d ' '); reorder=$(echo "$reorder" | tr -d ' ')
  NAMES+=("${name:-g${#NAMES[@]}}"); REORD+=("${reorder:-$D_REORDER}")
  GRS+=("${graphs:-$D_GRAPHS}"); CFS+=("${configs:-$D_CONFIGS}"); PRS+=("${products:-$D_PRODUCTS}")
  CAPS+=("$(echo "${cap:-0}" | tr -d ' ')")
done
for i in "${!NAMES[@]}"; do
  log "group ${NAMES[$i]}: reorder=${REORD[$i]} graphs=[${GRS[$i]}] configs=[${CFS[$i]}] products=[${PRS[$i]}] cap=${CAPS[$i]}"
done

# ---- background preparation: one --prepare per ordering, its graphs in plan order
W=${K2_WORK:-/tmp/distgraph_k2tree_$$}; rm -rf "$W"; mkdir -p "$W"  # the prepared graphs, removed at the end
PREPS=()
for r in $(printf '%s\n' "${REORD[@]}" | awk '!seen[$0]++'); do
  gl=()
  for i in "${!NAMES[@]}"; do [ "${REORD[$i]}" = "$r" ] && read -r -a g <<< "${GRS[$i]}" && gl+=("${g[@]}"); done
  mapfile -t gl < <(printf '%s\n' "${gl[@]}" | awk '!seen[$0]++')
  jobs=${PREP_JOBS:-3}; [ "$jobs" -gt "${#gl[@]}" ] && jobs=${#gl[@]}
  mkdir -p "$W/$r"
  CUDA_VISIBLE_DEVICES='' NUMBA_NUM_THREADS=${PREP_THREADS:-3} nice -n 15 "$PY" benchmarks/gpu_k2tree_bench.py \
    --prepare "$W/$r" --reorder "$r" --graphs "${gl[@]}" --jobs "$jobs" > "$OUTDIR/prepare-$r.log" 2>&1 &
  PREPS+=("$!")
  log "preparing (reorder=$r, $jobs processes): ${gl[*]}"
done

# ---- (1) the tests, dealt out to T_JOBS processes
TESTS=${TESTS-tests/test_gpu_k2tree_prefetch.py tests/test_gpu_k2tree.py}
TW=$W/tests; mkdir -p "$TW"
if [ -n "$TESTS" ]; then
  eval "targs=($TESTS)"  # TESTS may quote a -k expression
  # shellcheck disable=SC2154  # targs is set by the eval
  "$PY" -m pytest --collect-only -q -p no:cacheprovider "${targs[@]}" 2> "$TW/collect.err" | grep '::' > "$TW/ids.txt"
  J=${T_JOBS:-6}; n=$(wc -l < "$TW/ids.txt")
  opts=(); for a in "${targs[@]}"; do case $a in *.py|*.py::*|tests|tests/) ;; *) opts+=("$a") ;; esac; done
  log "tests: $n collected, $J processes, ${T_TESTS:-100} s"
  tp=()
  for ((i = 0; i < J; i++)); do
    mapfile -t ids < <(awk -v j="$J" -v i="$i" '(NR - 1) % j == i' "$TW/ids.txt")
    [ "${#ids[@]}" -eq 0 ] && continue
    timeout -s INT -k 15 "${T_TESTS:-100}" "$PY" -m pytest -q -rfEs -p no:cacheprovider "${opts[@]}" \
      --junitxml="$TW/junit-$i.xml" "${ids[@]}" > "$TW/pytest-$i.log" 2>&1 &
    tp+=("$!")
  done
  for p in "${tp[@]}"; do wait "$p"; done
  for f in "$TW"/pytest-*.log; do echo "=== ${f##*/}"; cat "$f"; done > "$OUTDIR/pytest-tests.log"
  log "tests done"
fi

# ---- (2) the groups, one after another
if "$PY" -c 'import cupy, sys; sys.exit(cupy.cuda.runtime.getDeviceCount() == 0)' 2>/dev/null; then GPU=1; else GPU=0; fi
[ "$GPU" = 1 ] || log "no GPU visible (a dry run): each group stops at its first use of CuPy, after its arguments are checked"
for i in "${!NAMES[@]}"; do
  left=$(( LIMIT - $(el) - 10 ))  # 10 s kept for the summary
  budget=$(( left - ${GRAPH_S:-30} )); [ "${CAPS[$i]}" -gt 0 ] && [ "${CAPS[$i]}" -lt "$budget" ] && budget=${CAPS[$i]}
  if [ "$budget" -lt 10 ]; then
    log "group ${NAMES[$i]} skipped (budget ${budget} s)"; continue
  fi
  read -r -a g <<< "${GRS[$i]}"; read -r -a c <<< "${CFS[$i]}"; read -r -a pr <<< "${PRS[$i]}"
  mkdir -p "$OUTDIR/${NAMES[$i]}"
  log "group ${NAMES[$i]} starts (budget $budget s)"
  timeout -k 5 "$left" "$PY" benchmarks/gpu_k2tree_bench.py --prepared "$W/${REORD[$i]}" --reorder "${REORD[$i]}" \
    --graphs "${g[@]}" --configs "${c[@]}" --big-configs "${c[@]}" --products "${pr[@]}" --budget "$budget" \
    --outdir "$OUTDIR/${NAMES[$i]}" > "$OUTDIR/${NAMES[$i]}/bench.log" 2>&1
  log "group ${NAMES[$i]} rc $?: $(tail -n 1 "$OUTDIR/${NAMES[$i]}/bench.log")"
done
if [ "$GPU" = 0 ]; then  # a dry run still checks the preparation, within the limit
  for p in "${PREPS[@]}"; do while kill -0 "$p" 2>/dev/null && [ "$(el)" -lt $(( LIMIT - 10 )) ]; do sleep 1; done; done
fi
for p in "${PREPS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done

# ---- (3) the summary
printf '%s\n' "${NAMES[@]}" > "$TW/names.txt"
"$PY" - "$OUTDIR" "$TW" "$LIMIT" "${TESTS:-}" <<'PYEOF' >> "$OUTDIR/timeline.txt" 2>&1
import glob, json, os, sys
import xml.etree.ElementTree as ET
out, tw, limit, tests = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
env = json.load(open(os.path.join(out, "env.json")))
summ = {"benchmark": "device_k2tree", "commit": env["commit"], "device": env["device"], "date": env["date"],
        "limit_s": limit, "timeline": open(os.path.join(out, "timeline.txt")).read().splitlines()}
# tests: every part's junit merged into OUTDIR/junit-tests.xml; collected ids without a result are unrun
if tests:
    ids = [l.strip() for l in open(os.path.join(tw, "ids.txt")) if l.strip()]
    suite = ET.Element("testsuite", name="device_k2tree")
    res = {}
    for f in sorted(glob.glob(os.path.join(tw, "junit-*.xml"))):
        for case in ET.parse(f).getroot().iter("testcase"):
            suite.append(case)
            cls, name = case.get("classname", ""), case.get("name", "")
            if not name:  # the test a SIGINT stopped: no result
                continue
            kind = ("failed" if case.find("failure") is not None else "error" if case.find("error") is not None
                    else "skipped" if case.find("skipped") is not None else "passed")
            parts = cls.split(".")  # tests.test_x or tests.test_x.TestClass
            if parts[-1].startswith("Test"):
                res["/".join(parts[:-1]) + ".py::" + parts[-1] + "::" + name] = kind
            else:
                res["/".join(parts) + ".py::" + name] = kind
    ET.ElementTree(suite).write(os.path.join(out, "junit-tests.xml"))
    t = {"selection": tests, "collected": len(ids)}
    for kind in ("passed", "failed", "error", "skipped"):
        t[kind] = sum(v == kind for v in res.values())
    t["failed_ids"] = sorted(k for k, v in res.items() if v in ("failed", "error"))
    t["not_run"] = [i for i in ids if i not in res]
    summ["tests"] = t
# the groups
summ["groups"] = []
for name in [l.strip() for l in open(os.path.join(tw, "names.txt")) if l.strip()]:
    files = sorted(glob.glob(os.path.join(out, name, "k2tree_gpu*.json")))
    grp = {"name": name, "source": os.path.relpath(files[0], out) if files else None, "graphs": []}
    if not files:
        grp["note"] = "no results (skipped, or failed: see bench.log)"
        summ["groups"].append(grp)
        continue
    src = json.load(open(files[0]))
    grp.update({k: src.get(k) for k in ("commit", "date", "reorder", "products", "skipped")})
    for g in src.get("graphs", []):
        t = g.get("time_ms", {})
        cs = t.get("cusparse", {})
        row = {"graph": g.get("graph"), "time_ms": {}, "ratio_vs_cusparse": {}, "over_k2F": {}, "over_k2": {},
               "leaves": {}}
        for c, v in t.items():
            if not isinstance(v, dict):
                continue
            for d in ("right", "left", "batch"):
                if isinstance(v.get(d), float):
                    row["time_ms"][f"{c}_{d}"] = v[d]
                    if c != "cusparse" and cs.get(d):
                        row["ratio_vs_cusparse"][f"{c}_{d}"] = v[d] / cs[d]
                if v.get(d + "_leaves"):
                    row["leaves"][f"{c}_{d}"] = v[d + "_leaves"]
        for c in t:  # each configuration over k2F (tree-only ones over k2), same product
            base = "k2F" if c.startswith("k2F") else "k2" if c.startswith("k2") else None
            for d in ("right", "left", "batch"):
                a, b = row["time_ms"].get(f"{c}_{d}"), row["time_ms"].get(f"{base}_{d}")
                if base and c != base and a and b:
                    row[f"over_{base}"][f"{c}/{base}_{d}"] = a / b
        for k in ("arcs", "bits_per_edge", "ratio_csr_fp32_over_tree", "ratio_csr_fp32_over_k2F_compact",
                  "perm_gather_ms", "reorder_s", "read_s", "build_s", "frontier_s", "elapsed_s", "error",
                  "hub_outputs"):
            if g.get(k) is not None:
                row[k] = g[k]
        row["errors"] = {k: v for k, v in t.items() if isinstance(v, dict) and "error" in v}
        row["max_rel_error_vs_cusparse"] = g.get("max_rel_error_vs_cusparse", {})
        grp["graphs"].append(row)
    summ["groups"].append(grp)
# "prepared G at S s": S seconds from the start of that ordering's --prepare
summ["prepared"] = [l.strip() for f in sorted(glob.glob(os.path.join(out, "prepare-*.log")))
                    for l in open(f) if l.startswith(("prepared", "failed"))]
json.dump(summ, open(os.path.join(out, "k2tree_summary.json"), "w"), indent=1)
print("summary written")
PYEOF
rm -rf "$W"
exit 0
