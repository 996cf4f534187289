#!/usr/bin/env python3
"""The university guide's routine from Python, on an embedded cluster shaped like the guide's.

Each user works in its own namespace; images come from the Harbor catalog; a Deployment gets a
virtual GPU, the two local SSDs, the NFS share (datasets read-only, one's own directory
read-write) and an NFS PVC; data is staged into the SSD before the run and results are copied back
to the PVC after it. Against a real cluster, replace the EmbeddedCluster with
gpupool.connect(profile="iiis") (your kubeconfig and namespace).
"""
import gpupool


def main() -> None:
    with gpupool.EmbeddedCluster(topology="iiis", users=["zhangsan"], profile="iiis", manual_clock=False) as admin:
        cluster = admin.connect("zhangsan", profile="iiis")  # the guide's per-user namespace
        print(f"namespace: {cluster.namespace}")

        # An NFS PVC for code and results (nfs-pvc-example.yaml in the guide).
        cluster.create_pvc(gpupool.PvcRequest(name="zhangsan-results", storage_class="nfs", size="50Gi"))

        workload = gpupool.to_workload(
            kind="deployment",
            name="my-first-ubuntu-tf",
            image="ubuntu-tensorflow:2.3.0",  # resolved through the Harbor catalog
            gpus=1,
            cpu="4",
            memory="16Gi",
            ssd=True,                         # /mnt/data1 and /mnt/data2 (hostPath)
            nfs=True,                         # /share/datasets (ro) and /share/zhangsan (rw)
            data=["zhangsan-results:/results"],
            stage_in="/share/datasets/cifar10:/mnt/data1/cifar10",
            stage_out="/mnt/data1/out:/results/run-1",
            command="python train.py --data /mnt/data1/cifar10 --out /mnt/data1/out",
        )
        print(cluster.render(workload).to_yaml())
        cluster.submit(workload)
        info = cluster.wait("my-first-ubuntu-tf", "Running", timeout=60, progress=False)
        print(info.to_text())
        print(gpupool.pvcs_to_text(cluster.pvcs()))


if __name__ == "__main__":
    main()
