#!/usr/bin/env bash
# GPU smoke test: run one preset over the bundled sample (offline judge) and print turns/second.
#
#   benchmarks/gpu_smoke.sh PRESET [MODEL_DIR] [--frames N] [--limit N] [--max-tokens N] [--out DIR]
#
#   benchmarks/gpu_smoke.sh qwen3-vl-8b-instruct /models/Qwen3-VL-8B-Instruct
#   benchmarks/gpu_smoke.sh qwen3-vl-8b-instruct@vllm /models/Qwen3-VL-8B-Instruct --frames 32
#
# Needs a CUDA GPU and `pip install -e '.[hf]'` (or '.[vllm]' for @vllm presets). MODEL_DIR is a
# local copy of the preset's checkpoint (GPU machines are often offline); without it the hub id
# is used (downloads on first use). MTVBENCH_SMOKE_ALLOW_CPU=1 skips the GPU check (plumbing only).
# Prints one JSON object: turns, wall time, generation time, turns/second, tokens/second.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
preset="${1:?usage: gpu_smoke.sh PRESET [MODEL_DIR] [options]}"
shift
ckpt=()
if [[ $# -gt 0 && "${1}" != --* ]]; then
  ckpt=(--checkpoint "$1")
  shift
fi
if [[ "${MTVBENCH_SMOKE_ALLOW_CPU:-0}" != 1 ]]; then
  python - <<'PY'
import sys
try:
    import torch
except ImportError:
    sys.exit("torch is missing: pip install -e '.[hf]'")
if not torch.cuda.is_available():
    sys.exit("no CUDA GPU visible: this smoke test measures GPU throughput (MTVBENCH_SMOKE_ALLOW_CPU=1 to force)")
print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", file=sys.stderr)
PY
fi
export PYTHONPATH="${here}/../src${PYTHONPATH:+:$PYTHONPATH}"
exec python - "$preset" "${ckpt[@]}" "$@" <<'PY'
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(prog="gpu_smoke.sh")
    ap.add_argument("preset")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--frames", type=int, default=None, help="override the preset's frame count")
    ap.add_argument("--limit", type=int, default=None, help="dialogues per task")
    ap.add_argument("--max-tokens", type=int, default=None, help="override the preset's max new tokens")
    ap.add_argument("--out", type=Path, default=Path("gpu-smoke"))
    args = ap.parse_args()

    from mtvbench.config import RoleSettings, RunConfig
    from mtvbench.data.sample import materialize
    from mtvbench.models.presets import resolve_model
    from mtvbench.run.evaluate import evaluate
    from mtvbench.run.store import RunStore

    spec, options, frames = resolve_model(args.preset, args.checkpoint)
    if args.max_tokens:
        options.max_tokens = args.max_tokens
    fs = frames.apply() if frames is not None else None
    data = materialize(args.out / "sample")
    run_dir = args.out / "runs" / args.preset.replace("/", "_")
    cfg = RunConfig(data=data, model=spec, judge="offline", out=run_dir, judge_runs=1, bootstrap=0,
                    frames=args.frames or (fs.num_frames if fs else 128),
                    max_side=fs.max_side if fs else 720, frame_size=fs.size if fs else None,
                    limit=args.limit, cache_dir=args.out / "frame-cache",
                    model_settings=RoleSettings(**options.model_dump()))
    t0 = time.perf_counter()
    scores, summary = evaluate(cfg)
    wall = time.perf_counter() - t0
    store = RunStore(run_dir, create=False)
    try:
        responses = store.responses()
    finally:
        store.close()
    gen_s = sum(r["latency_s"] or 0.0 for r in responses.values())
    completion = sum(r["usage"]["completion_tokens"] for r in responses.values())
    report = {
        "preset": args.preset, "spec": spec, "frames": cfg.frame_settings().key(), "turns": summary.calls,
        "errors": summary.call_errors, "wall_s": round(wall, 2), "generation_s": round(gen_s, 2),
        "turns_per_s_wall": round(summary.calls / wall, 3) if wall else None,
        "turns_per_s_generation": round(summary.calls / gen_s, 3) if gen_s else None,
        "completion_tokens_per_s": round(completion / gen_s, 1) if gen_s else None,
        "overall_offline_judge": scores.overall,
    }
    print(json.dumps(report, indent=2))


main()
PY
