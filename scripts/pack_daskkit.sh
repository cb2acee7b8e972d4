#!/usr/bin/env bash
# Builds .daskkit/ (run from the project root, on the development machine): Dask's wheels for the GPU
# machine's Python 3.12 (the version pinned below, the one the appendix's runs used) and install.sh,
# which the GPU stage scripts source after .gpukit/env.sh (scripts/gpu_session20.sh dask). The GPU
# machines have no network and no Dask; carry the folder: carry [".gpukit", ".daskkit"].
set -euo pipefail
VERSION="${DASK_VERSION:-2026.8.0}"
mkdir -p .daskkit/wheels
python3 -m pip download -q -d .daskkit/wheels --python-version 3.12 --only-binary=:all: \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  "dask[distributed]==$VERSION"
cat > .daskkit/install.sh <<SH
# Sourced on the GPU machine after .gpukit/env.sh: installs Dask (the wheels beside this file, for
# the image's Python 3.12) into /tmp/daskkit-site and puts it on PYTHONPATH.
_dk="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -d /tmp/daskkit-site/distributed ]]; then
  python3 -m pip install -q --no-index --find-links "\$_dk/wheels" --target /tmp/daskkit-site "dask[distributed]==$VERSION" 2>&1 | tail -2
fi
export PYTHONPATH="\${PYTHONPATH:+\$PYTHONPATH:}/tmp/daskkit-site"
python3 -c "import dask, distributed; print('dask', dask.__version__, 'distributed', distributed.__version__)"
SH
grep -qx "/.daskkit/" .git/info/exclude 2>/dev/null || echo "/.daskkit/" >> .git/info/exclude
echo "kit ready in .daskkit/ ($(du -sh .daskkit | cut -f1)); carry it with carry: [\".gpukit\", \".daskkit\"]"
