#!/usr/bin/env bash
# The wheels `cudasmith serve` needs on a machine with no package index whose Python has torch but not
# pydantic, FastAPI or uvicorn (the GPU machine: Python 3.12), at the versions installed here, so that the
# server there is the one tested here. benchmarks/gpu_session.py installs what OUT_DIR holds (default .whl).
#
#   scripts/serve_wheels.sh [OUT_DIR] [PYTHON_VERSION]     # default .whl and 3.12
#
# The list is what the GPU machine's image lacked (its package list): pydantic with its core and the two
# small packages it needs, FastAPI (with opentelemetry-api, which FastAPI imports from 0.16x), Starlette
# and uvicorn. Its other needs (anyio, click, h11, typing-extensions, annotated-doc) are in that image.
set -euo pipefail

out=${1:-.whl}
python_version=${2:-3.12}
names=(pydantic pydantic-core annotated-types typing-inspection fastapi starlette uvicorn opentelemetry-api)
mkdir -p "$out"
for name in "${names[@]}"; do
    version=$(python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")
    python -m pip download --quiet --no-deps --only-binary=:all: --python-version "$python_version" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$out" "$name==$version"
done
ls -1 "$out"
du -sh "$out"
