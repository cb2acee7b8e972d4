"""The GP run Nsight Compute profiles for the breeding kernels' memory throughput (issue 29):
`gp.evolve` at the paper's scale (25,000 individuals, synthetic market of `gpulab gp evolve`),
CUDA C, GPU breeding, ``GENERATIONS`` generations (argv[1], default 30: the programs have grown
by then), ``POPULATION`` individuals (argv[2], default 25,000). The ``ncu`` stages of
scripts/gpu_session12.sh (25,000) and scripts/gpu_session18.sh (25,000 and 500,000) profile one
late generation's breeding kernels in it (--launch-skip)."""
import sys

from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve

G = int(sys.argv[1]) if len(sys.argv) > 1 else 30
P = int(sys.argv[2]) if len(sys.argv) > 2 else 25_000
r = evolve(market_from("synthetic", 32, 768, 256, 0), train_days=768, params=GPParams(population=P, generations=G),
           backend="cuda-c", breeding="gpu", seed=0, progress=None)
print("mean nodes at the last generation:", r.history[-1]["mean_nodes"])
