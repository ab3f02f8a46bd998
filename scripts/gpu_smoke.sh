#!/usr/bin/env bash
# The GPU path on a machine with one GPU, in a few minutes: the trainer's update loop, veRL's
# FSDP step with checkpoint export, and vllm serve when a vllm CLI is there. Figures go to
# $OUT/gpu_smoke.json when OUT is set, else .openforge/gpu-smoke/gpu_smoke.json.
#
#   bash scripts/gpu_smoke.sh [--steps N] [--tasks N] [--skip verl_trainer] [--skip vllm_serve]
#
# PYTHON        the interpreter whose torch sees the GPU (default python3)
# GPU_SMOKE_VLLM=1  pip-install vLLM into its own venv when no vllm CLI is on PATH (GBs)
# PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR   install from a local wheelhouse (pip reads these itself)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WORK=.openforge/gpu-smoke
RESULT=${OUT:-$WORK}/gpu_smoke.json
mkdir -p "$WORK" "$(dirname "$RESULT")"

# An interpreter that already has veRL next to its CUDA torch runs as it is (a venv made from
# a venv's python would not see that venv's packages). Otherwise: a venv that sees the
# machine's CUDA torch, and a constraint that keeps pip from replacing it.
if "$PYTHON" -c 'import torch, verl, pydantic, yaml, orjson' 2>/dev/null; then
  PY=$PYTHON
else
  VENV=$WORK/venv
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv --system-site-packages "$VENV"
  PY=$VENV/bin/python
fi
"$PY" -c 'import torch; print("torch==" + torch.__version__)' > "$WORK/constraints.txt"
if ! "$PY" -c 'import verl, pydantic, yaml, orjson' 2>/dev/null; then
  echo "[gpu-smoke] installing veRL 0.9.1 and our runtime dependencies next to torch $(cut -d= -f3 "$WORK/constraints.txt")"
  "$PY" -m pip install --quiet --disable-pip-version-check -c "$WORK/constraints.txt" \
    "verl==0.9.1" "transformers>=5.5,<5.11" "pydantic>=2.10,<3" pyyaml orjson typer rich aiohttp
fi

if [ "${GPU_SMOKE_VLLM:-0}" = 1 ] && ! command -v vllm >/dev/null; then
  # vLLM pins its own torch build: it gets a venv of its own, only its CLI is used.
  [ -x "$WORK/vllm-venv/bin/vllm" ] || { "$PYTHON" -m venv "$WORK/vllm-venv" && "$WORK/vllm-venv/bin/pip" install --quiet vllm; }
  export PATH="$PWD/$WORK/vllm-venv/bin:$PATH"
fi

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
exec "$PY" scripts/gpu_smoke.py --out "$RESULT" --work "$WORK" "$@"
