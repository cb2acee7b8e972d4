import re, sys, json
from numba import cuda
from gpulab import compilecheck as cc
from gpulab.subset import kernels_numba as kn
out = {}
for tag, (warp, q_in) in {"shared": (False, "shared"), "warp": (True, "shared"), "global": (False, "global")}.items():
    kern = kn.incremental_kernel(5, warp, q_in)
    with cc._pretend_device():
        ptx, _ = cuda.compile_ptx(kern.py_func, kn.SIG_INCREMENTAL, cc=(9, 0))
    open(f"/tmp/sg_{sys.argv[1]}_{tag}.ptx", "w").write(ptx)
    loads = {k: len(re.findall(r"\b" + re.escape(k) + r"\.(?:f64|u64|b64|u32|s32|b32)", ptx)) for k in ("ld.shared", "ld.global.nc", "ld.global", "ld.local", "ld")}
    try:
        res = cc.link_report(ptx)
    except Exception as e:
        res = str(e)
    out[tag] = (loads, res)
print(json.dumps(out, indent=0))
