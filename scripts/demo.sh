#!/usr/bin/env bash
# Installs what is missing, builds gpupool, and runs the main job on the embedded cluster:
#  1. the seed's Arena walkthrough with the `gpupool` command (list nodes, taint .228/.229 with
#     gpu_node and .230 with ssd_node, submit the MPI job with --toleration ssd_node and see it
#     RUNNING on 192.168.3.230, then again with both tolerations);
#  2. the university guide's flow from Python (NFS PVC + a GPU Deployment with SSDs, the NFS share,
#     the PVC, and SSD staging), on an embedded cluster shaped like the guide's.
set -euo pipefail
cd "$(dirname "$0")/.."
# GPUPOOL_DEMO_BUILD=<build dir>: run with that tree's binaries, installing and building nothing
# (the test suite's `demo` test, so that this script, the README's first command, stays true).
BUILD=${GPUPOOL_DEMO_BUILD:-build/gcc}
if [ -z "${GPUPOOL_DEMO_BUILD:-}" ]; then
  scripts/setup.sh
  echo "== building (first time: a few minutes)"
  scripts/build.sh gcc -DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
fi

# The embedded cluster keeps its state here between commands; start afresh.
export GPUPOOL_STATE_DIR="${GPUPOOL_STATE_DIR:-$(mktemp -d)}"
export GPUPOOL_EMBEDDED=seed
gpupool() { printf '$ gpupool'; printf ' %q' "$@"; echo; "$BUILD/gpupool" "$@"; echo; }

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
PYTHONPATH="$(cd "$BUILD" && pwd)/bindings/python" /usr/bin/python3 examples/python/guide_flow.py

echo "== 3. run it here first: the same kind of job as local processes (--run local), then the manifest"
echo "   for the real cluster. \`cluster serve --run local\` keeps the processes running between commands"
echo "   (a one-shot \`gpupool --embedded seed --run local ...\` stops them when it exits)."
gpupool delete mpi-dist
gpupool delete no-toleration
"$BUILD/gpupool" cluster serve --topology seed --run local >"$GPUPOOL_STATE_DIR/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q 'press Ctrl-C' "$GPUPOOL_STATE_DIR/serve.log" 2>/dev/null && break; sleep 0.1; done
# The training script goes on the job's PVC; locally the PVC is a directory of the state dir.
CODE="$GPUPOOL_STATE_DIR/embedded-seed.local/volumes/default/code"
mkdir -p "$CODE" && cp examples/python/tiny_train.py "$CODE/"
TRAIN=(submit pytorch --name=tiny-train --workers=2 --gpus=1 --toleration ssd_node --image=python:3.11
       --pvc-create code:standard:1Gi:/code)
RUN=(-- python3 /code/tiny_train.py)  # after `--` everything is the command: the options go before it
gpupool "${TRAIN[@]}" "${RUN[@]}"
gpupool wait tiny-train --for Finished --timeout 2m
gpupool get tiny-train
echo "Its real logs (rank 0 and rank 1):"
gpupool logs tiny-train
gpupool logs tiny-train -i tiny-train-worker-0
echo "Exit codes:"
ADMIN=$(sed -n 's/^admin kubeconfig: //p' "$GPUPOOL_STATE_DIR/serve.log")
/usr/bin/kubectl --kubeconfig "$ADMIN" get pods -l training.kubeflow.org/job-name=tiny-train \
  -o 'custom-columns=POD:.metadata.name,NODE:.spec.nodeName,EXIT:.status.containerStatuses[0].state.terminated.exitCode'
echo "The identical manifest for the real cluster (same tolerations, storage, command):"
gpupool "${TRAIN[@]}" --dry-run=client -o yaml "${RUN[@]}"
kill $SERVE; wait $SERVE 2>/dev/null || true
