#!/usr/bin/env python3
"""A launcher a training script would use: submit this job to a GPU cluster and follow it.

    # against a real cluster (your kubeconfig, your namespace, the site's profile)
    python3 launch.py --profile iiis --name resnet --image ubuntu-pytorch:1.5.0 --gpus 1 --ssd \
        -- python train.py --epochs 10
    # against an in-process cluster with the seed walkthrough's nodes (no Kubernetes needed)
    python3 launch.py --embedded seed --kind mpi --name mpi-dist --gpus 1 --toleration ssd_node \
        --image registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5 \
        -- mpirun python /benchmarks/train.py

Every option is parsed by the library (gpupool.to_workload), exactly as `gpupool submit` parses it.
"""
import argparse
import sys

import gpupool


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", help="kubeconfig path(s); default: KUBECONFIG or ~/.kube/config")
    where.add_argument("--embedded", metavar="TOPOLOGY", help="run on an embedded cluster (seed, iiis or a file)")
    p.add_argument("--context")
    p.add_argument("-n", "--namespace")
    p.add_argument("--profile", help="site profile: a built-in name (generic, iiis) or a file")
    p.add_argument("--kind", default="pytorch", help="mpi | tf | pytorch | job | deployment")
    p.add_argument("--name", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--toleration", action="append", default=[], dest="tolerations")
    p.add_argument("--data", action="append", default=[], help="pvc-name:/mount/path[:ro]")
    p.add_argument("--env", action="append", default=[], help="KEY=VALUE")
    p.add_argument("--ssd", action="store_true")
    p.add_argument("--nfs", action="store_true")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for the job to run")
    p.add_argument("--dry-run", action="store_true", help="print the manifests and exit")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="-- the training command")
    args = p.parse_args(argv)
    if args.argv[:1] == ["--"]:
        args.argv = args.argv[1:]
    return args


def launch(cluster, args):
    workload = gpupool.to_workload(kind=args.kind, name=args.name, image=args.image, gpus=args.gpus,
                                   workers=args.workers, tolerations=args.tolerations, data=args.data, env=args.env,
                                   ssd=args.ssd, nfs=args.nfs, argv=args.argv)
    if args.dry_run:
        print(cluster.render(workload).to_yaml())
        return 0
    result = cluster.submit(workload)
    print(f"submitted {result.name} in {result.namespace}: {', '.join(result.created)}")
    if isinstance(cluster, gpupool.EmbeddedCluster):
        cluster.advance(5)  # the embedded cluster's clock moves only when told to
    info = cluster.wait(result.name, "Running", timeout=args.timeout)
    print(info)
    for line in cluster.logs(result.name, tail_lines=20):
        print(line)
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.embedded:
            with gpupool.EmbeddedCluster(topology=args.embedded, profile=args.profile) as cluster:
                if args.embedded == "seed":  # the walkthrough's taints
                    for n in (228, 229):
                        cluster.taint(f"cn-beijing.192.168.3.{n}", "gpu_node=invalid:NoSchedule")
                    cluster.taint("cn-beijing.192.168.3.230", "ssd_node=invalid:NoSchedule")
                return launch(cluster, args)
        cluster = gpupool.connect(kubeconfig=args.kubeconfig, context=args.context, namespace=args.namespace,
                                  profile=args.profile)
        return launch(cluster, args)
    except gpupool.Error as e:
        print(f"launch: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
