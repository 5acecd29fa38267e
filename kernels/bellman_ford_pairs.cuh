// bellman_ford_pairs.cuh: the (key, tail) claims of the GPU Bellman-Ford's batch mode
// (remote="batch", kernels/bellman_ford.cuh): for each remote head t, the smallest key this PE
// claimed for it and the tail of that claim, 16 bytes changed together. The batch kernels'
// ghost array holds pair t at ghost[2t] (key) and ghost[2t + 1] (tail), +inf keys at a run's
// start. A claim is a CAS loop on the whole pair, so a pair always holds one claim's key with the
// same claim's tail: with a minimum on the key and the tail written apart (session 6), two claims
// could leave the smaller key with the other claim's tail (a predecessor that is not the key's,
// seen by the owner's negative-cycle checks). sm_90 has a 16-byte CAS (atom.global.cas.b128;
// CUDA 12.4+ atomicCAS on a 16-byte aligned trivially copyable type: compiled with CUDA 13.0);
// older GPUs fall back to the two-word claim. Included by the NVSHMEM build only (the one-PE
// build has no batch mode); tests/test_nvshmem_bellman_ford.py hammers it on a GPU.
#ifndef DISTGRAPH_BELLMAN_FORD_PAIRS_CUH
#define DISTGRAPH_BELLMAN_FORD_PAIRS_CUH

namespace dgbf {

struct __align__(16) KeyTail {
    long long key, tail;
};

// Claims key ck with tail ug on pair g if ck is below its key; true if it did.
__device__ __forceinline__ bool claim_pair(KeyTail* g, long long ck, long long ug) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    if (!(ck < *(volatile long long*)&g->key) || !(ck < atomicMin(&g->key, ck))) return false;
    *(volatile long long*)&g->tail = ug;  // apart from the key: see the header
    return true;
#else
    // a guess (two loads, maybe of two claims): a failing CAS returns the pair as it is
    KeyTail cur{*(volatile long long*)&g->key, *(volatile long long*)&g->tail};
    const KeyTail nw{ck, ug};
    while (ck < cur.key) {
        const KeyTail seen = atomicCAS(g, cur, nw);
        if (seen.key == cur.key && seen.tail == cur.tail) return true;
        cur = seen;  // keys only decrease: no ABA
    }
    return false;
#endif
}

// The pair as one claim left it: a 16-byte CAS that finds {0, 0} writes {0, 0} back (no change),
// any other pair is returned untouched (two 8-byte loads could mix two claims).
__device__ __forceinline__ KeyTail read_pair(KeyTail* g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    return KeyTail{*(volatile long long*)&g->key, *(volatile long long*)&g->tail};
#else
    const KeyTail z{0, 0};
    return atomicCAS(g, z, z);
#endif
}

}  // namespace dgbf

#endif  // DISTGRAPH_BELLMAN_FORD_PAIRS_CUH
