"""How the GPUs of this machine reach each other: ``nvidia-smi topo -m`` and the bandwidth of a
device-to-device copy and of a CuPy kernel reading the peer's memory (the distributed rounds'
pull reads peers this way). Writes OUT/p2p.json. ``python benchmarks/p2p_check.py OUT``."""

import json
import subprocess
import sys
import time
from pathlib import Path


def main(out):
    import cupy as cp

    res = {"topo": subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout}
    ndev = cp.cuda.runtime.getDeviceCount()
    res["devices"] = ndev
    if ndev > 1:
        res["can_access_peer"] = bool(cp.cuda.runtime.deviceCanAccessPeer(0, 1))
        nbytes = 256 << 20
        with cp.cuda.Device(1):
            src = cp.ones(nbytes // 8, cp.int64)
        with cp.cuda.Device(0):
            try:
                cp.cuda.runtime.deviceEnablePeerAccess(1)
            except cp.cuda.runtime.CUDARuntimeError:
                pass
            dst = cp.empty_like(src)
            for name, fn in (("memcpy_peer", lambda: cp.cuda.runtime.memcpyPeer(dst.data.ptr, 0, src.data.ptr, 1,
                                                                                    nbytes)),
                             ("kernel_read", lambda: cp.add(src, 0, out=dst))):
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - recorded
                    res[name + "_error"] = repr(e)
                    continue
                cp.cuda.Device(0).synchronize()
                t0 = time.perf_counter()
                for _ in range(5):
                    fn()
                cp.cuda.Device(0).synchronize()
                res[name + "_GBps"] = 5 * nbytes / (time.perf_counter() - t0) / 1e9
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "p2p.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
