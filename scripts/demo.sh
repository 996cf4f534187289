#!/usr/bin/env bash
# Installs what is missing, builds gpupool, and runs the main job on the embedded cluster:
#  1. the seed's Arena walkthrough with the `gpupool` command (list nodes, taint .228/.229 with
#     gpu_node and .230 with ssd_node, submit the MPI job with --toleration ssd_node and see it
#     RUNNING on 192.168.3.230, then again with both tolerations);
#  2. the university guide's flow from Python (NFS PVC + a GPU Deployment with SSDs, the NFS share,
#     the PVC, and SSD staging), on an embedded cluster shaped like the guide's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building (first time: a few minutes)"
scripts/build.sh gcc -DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null

# The embedded cluster keeps its state here between commands; start afresh.
export GPUPOOL_STATE_DIR="${GPUPOOL_STATE_DIR:-$(mktemp -d)}"
export GPUPOOL_EMBEDDED=seed
gpupool() { printf '$ gpupool'; printf ' %q' "$@"; echo; build/gcc/gpupool "$@"; echo; }

HOROVOD=registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5
BENCH="mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101 --batch_size 64 --variable_update horovod --train_dir=/training_logs --summary_verbosity=3 --save_summaries_steps=10"

echo "== 1. the seed: Arena's --toleration walkthrough (embedded cluster: $GPUPOOL_EMBEDDED)"
gpupool nodes
gpupool taint cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule
gpupool taint cn-beijing.192.168.3.229 gpu_node=invalid:NoSchedule
gpupool taint cn-beijing.192.168.3.230 ssd_node=invalid:NoSchedule
gpupool nodes -o wide
gpupool submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node --image=$HOROVOD \
  --tensorboard --loglevel debug "$BENCH"
gpupool wait mpi-dist --for Running --timeout 1m
gpupool get mpi-dist
gpupool delete mpi-dist
gpupool submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node --toleration gpu_node \
  --image=$HOROVOD --tensorboard --loglevel debug "$BENCH"
gpupool wait mpi-dist --for Running --timeout 1m
gpupool get mpi-dist
gpupool top node
echo "A job that tolerates nothing stays Pending, and explain says why:"
gpupool submit mpi --name=no-toleration --gpus=1 --workers=1 --image=$HOROVOD "$BENCH"
gpupool explain no-toleration

echo "== 2. the guide's flow from Python (examples/python/guide_flow.py)"
PYTHONPATH="$PWD/build/gcc/bindings/python" /usr/bin/python3 examples/python/guide_flow.py
