"""Device check (session 19 review): the GPU rounds with float64 weights on Kronecker 22 (4M vertices:
the prefaulted host array path), one source and three, equal to the CPU backend."""
import numpy as np, time
from distgraph.generators import kronecker, uniform_weights
from distgraph.graph import Graph
from distgraph.algorithms.bellman_ford import bellman_ford
g = uniform_weights(kronecker(22, seed=1), seed=1)
g = Graph(g.indptr, g.indices, g.weights.astype(np.float64) / 4, directed=g.directed)
s = int(np.argmax(np.diff(g.indptr)))
ok = True
for mode in ("rounds", "auto"):
    t = time.perf_counter(); r = bellman_ford(g, s, backend="gpu", mode=mode); t = time.perf_counter() - t
    c = bellman_ford(g, s, backend="cpu") if mode == "rounds" else c
    same = np.array_equal(r.distance, c.distance); ok &= same
    print("float64 kron:22 one source", mode, r.stats.get("mode"), f"{t:.3f} s", "same as cpu:", same, flush=True)
rm = bellman_ford(g, [s, 5, s], backend="gpu")
print("float64 kron:22 three sources same:", all(np.array_equal(rm.distance[i], c.distance) for i in (0, 2)), flush=True)
print("FLOATCHECK", "ok" if ok else "FAILED")
