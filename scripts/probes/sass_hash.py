"""Hash the SASS of every config of the sm90 kernels' builds (FP8 row x col; fp16 row x row and
row x col), to show a change leaves them byte-identical. Run with PYTHONPATH at a checkout."""
import hashlib, sys, json
from concurrent.futures import ThreadPoolExecutor
from zoo import cuda, sass
from zoo.specs.sm90_wgmma import SM90_FP8, SM90_GEMM
jobs = []
for spec, layouts in ((SM90_FP8, [(False, True)]), (SM90_GEMM, [(False, False), (False, True)])):
    for cfg in spec.configs:
        if sys.argv[1:] and cfg.name not in sys.argv[1:]:
            continue
        for a_col, b_col in layouts:
            jobs.append((spec, cfg, a_col, b_col))
def one(job):
    spec, cfg, a_col, b_col = job
    cub = cuda.compile_cubin(spec.source, "sm_90a", spec.defines(cfg, a_col, b_col), kernel=spec.name, config=cfg.name)
    text = sass._cuobjdump("-sass", cub.image)
    return f"{spec.name}/{cfg.name}/{int(a_col)}{int(b_col)}", hashlib.sha1(text.encode()).hexdigest()[:12]
with ThreadPoolExecutor(2) as ex:
    print(json.dumps(dict(ex.map(one, jobs)), indent=0))
