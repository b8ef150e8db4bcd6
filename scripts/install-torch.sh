#!/usr/bin/env bash
# Installs torch from PyPI for the torch backend (docs/pytorch.md), the smallest way that works
# on these machines: PyPI has only the CUDA build of torch for Linux, and its full dependency
# set pulls ~3 GB of CUDA wheels. The machines already carry the CUDA 13 toolkit (cudart,
# cuBLAS, cuDNN, ... in /usr/local/cuda), so torch goes in without its dependencies plus the
# four CUDA libraries the toolkit lacks or has too old (NCCL 2.28 < the 2.30 torch links
# against; cuSPARSELt, NVSHMEM, cuFile), about 1 GB in all. Where torch still does not import
# (no toolkit), the full `pip install torch` follows. The tests under tests/torch also need
# expecttest (torch.testing._internal imports it; torch does not depend on it), and
# `pip install --no-build-isolation .` (pyproject.toml, test wheel_build) needs the build
# backend scikit-build-core in this python, as no isolated build environment brings it. Does
# nothing when all three already import.
set -euo pipefail
TORCH_VERSION="${MIXCCL_TORCH_VERSION:-2.15.0}"
PY="${PYTHON:-python3}"

pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"; }
if ! "$PY" -c "import expecttest" >/dev/null 2>&1; then
  echo "install-torch: expecttest (torch's test helpers import it)"
  pip_install expecttest
fi
if ! "$PY" -c "import scikit_build_core" >/dev/null 2>&1; then
  echo "install-torch: scikit-build-core (the build backend of pyproject.toml)"
  pip_install "scikit-build-core>=0.10"
fi
if "$PY" -c "import torch" >/dev/null 2>&1; then exit 0; fi

echo "install-torch: torch $TORCH_VERSION without its CUDA wheels (the toolkit's libraries serve)"
pip_install --no-deps "torch==$TORCH_VERSION" "nvidia-nccl-cu13==2.30.7" \
  "nvidia-cusparselt-cu13==0.8.1" "nvidia-nvshmem-cu13==3.7.2" "nvidia-cufile==1.17.1.22.*"
pip_install filelock "typing-extensions>=4.13.0" "sympy>=1.13.3" "networkx>=2.5.1" jinja2 \
  "fsspec>=0.8.5" numpy
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "install-torch: torch does not import that way; installing it with all its dependencies"
  pip_install "torch==$TORCH_VERSION"
fi
"$PY" -c "import torch; print('install-torch: torch', torch.__version__)"
