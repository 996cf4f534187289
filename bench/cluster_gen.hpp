// bench/cluster_gen.hpp — the deterministic cluster of the placement benchmarks, shared by bench_model
// (place()/explain(), decode) and bench_store (the embedded scheduler), so that both time the same mix.
//
// 5,000 nodes (60% GPU nodes with 8 GPUs, half of them tainted gpu_node=invalid:NoSchedule, 10%
// ssd_node=invalid:NoSchedule, 1/7 PreferNoSchedule, 1/97 cordoned) and 150,000 pods in owners of ten
// (GPU with a gpu_node toleration, gpu_node toleration only, nodeSelector, required node affinity,
// ssd toleration + selector, plain), shaped like what the API server returns.
#pragma once

#include <cstdio>
#include <random>
#include <string>

#include <boost/json.hpp>

namespace bench {
namespace json = boost::json;

constexpr int kNodes = 5000, kPods = 150000;

inline std::string ts(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2026-11-%02dT%02d:%02d:%02dZ", 1 + i % 20, i % 24, i % 60, (i * 7) % 60);
  return buf;
}

inline json::object make_node(int i, std::mt19937& rng) {
  const std::string name = "gpu-node-" + std::to_string(i);
  const bool gpu = i % 5 < 3;                // 60% GPU nodes
  const bool gpu_taint = gpu && i % 10 < 4;  // most GPU nodes keep non-GPU pods away
  const bool ssd = i % 10 == 9;              // 10% ssd_node=invalid:NoSchedule
  const bool prefer = i % 7 == 0;            // PreferNoSchedule on some
  const bool cordoned = i % 97 == 0;
  json::object labels{{"kubernetes.io/hostname", name},
                      {"kubernetes.io/os", "linux"},
                      {"kubernetes.io/arch", "amd64"},
                      {"beta.kubernetes.io/os", "linux"},
                      {"beta.kubernetes.io/arch", "amd64"},
                      {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 4)},
                      {"node.kubernetes.io/instance-type", gpu ? "gpu.8xa100" : "cpu.64c"},
                      {"pool", i % 3 == 0 ? "train" : (i % 3 == 1 ? "infer" : "batch")}};
  if (gpu) labels["accelerator"] = (i % 2 ? "nvidia-a100" : "nvidia-v100");
  if (ssd) labels["ssd"] = "true";
  json::array taints;
  if (gpu_taint) taints.push_back(json::object{{"key", "gpu_node"}, {"value", "invalid"}, {"effect", "NoSchedule"}});
  if (ssd) taints.push_back(json::object{{"key", "ssd_node"}, {"value", "invalid"}, {"effect", "NoSchedule"}});
  if (prefer) taints.push_back(json::object{{"key", "maintenance"}, {"value", "soon"}, {"effect", "PreferNoSchedule"}});
  if (cordoned)
    taints.push_back(
        json::object{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}, {"timeAdded", ts(i)}});
  json::object spec{{"podCIDR", "10.244." + std::to_string(i % 256) + ".0/24"},
                    {"podCIDRs", json::array{"10.244." + std::to_string(i % 256) + ".0/24"}}};
  if (!taints.empty()) spec["taints"] = std::move(taints);
  if (cordoned) spec["unschedulable"] = true;
  json::object cap{{"cpu", "64"},          {"memory", "528280524Ki"},
                   {"pods", "110"},        {"ephemeral-storage", "1870553636Ki"},
                   {"hugepages-1Gi", "0"}, {"hugepages-2Mi", "0"}};
  json::object alloc{{"cpu", "63500m"},      {"memory", "527768524Ki"},
                     {"pods", "110"},        {"ephemeral-storage", "1723899140157"},
                     {"hugepages-1Gi", "0"}, {"hugepages-2Mi", "0"}};
  if (gpu) cap["nvidia.com/gpu"] = "8", alloc["nvidia.com/gpu"] = "8";
  json::array conditions;
  for (const char* t : {"MemoryPressure", "DiskPressure", "PIDPressure"})
    conditions.push_back(json::object{{"type", t},
                                      {"status", "False"},
                                      {"lastHeartbeatTime", ts(i + 1)},
                                      {"lastTransitionTime", ts(i)},
                                      {"reason", std::string("KubeletHasNo") + t},
                                      {"message", "kubelet has no pressure"}});
  conditions.push_back(json::object{{"type", "Ready"},
                                    {"status", "True"},
                                    {"lastHeartbeatTime", ts(i + 1)},
                                    {"lastTransitionTime", ts(i)},
                                    {"reason", "KubeletReady"},
                                    {"message", "kubelet is posting ready status"}});
  json::array images;
  for (int k = 0; k < 4; ++k)
    images.push_back(json::object{
        {"names",
         json::array{"harbor.example.org/library/pytorch@sha256:" + std::to_string(rng()) + std::to_string(rng()),
                     "harbor.example.org/library/pytorch:2." + std::to_string(k) + ".0-cuda12"}},
        {"sizeBytes", 4000000000LL + k}});
  return json::object{
      {"metadata",
       json::object{{"name", name},
                    {"uid", "0f0c8a6e-" + std::to_string(100000 + i) + "-4b1e-9d7a-52c1e0d1a2b3"},
                    {"resourceVersion", std::to_string(1000 + i)},
                    {"creationTimestamp", ts(i)},
                    {"labels", std::move(labels)},
                    {"annotations", json::object{{"node.alpha.kubernetes.io/ttl", "0"},
                                                 {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}}}},
      {"spec", std::move(spec)},
      {"status", json::object{{"capacity", std::move(cap)},
                              {"allocatable", std::move(alloc)},
                              {"conditions", std::move(conditions)},
                              {"addresses", json::array{json::object{{"type", "InternalIP"},
                                                                     {"address", "192.168." + std::to_string(i / 256) +
                                                                                     "." + std::to_string(i % 256)}},
                                                        json::object{{"type", "Hostname"}, {"address", name}}}},
                              {"daemonEndpoints", json::object{{"kubeletEndpoint", json::object{{"Port", 10250}}}}},
                              {"nodeInfo", json::object{{"machineID", std::to_string(rng())},
                                                        {"systemUUID", std::to_string(rng())},
                                                        {"bootID", std::to_string(rng())},
                                                        {"kernelVersion", "5.15.0-91-generic"},
                                                        {"osImage", "Ubuntu 22.04.3 LTS"},
                                                        {"containerRuntimeVersion", "containerd://1.7.2"},
                                                        {"kubeletVersion", "v1.29.4"},
                                                        {"kubeProxyVersion", "v1.29.4"},
                                                        {"operatingSystem", "linux"},
                                                        {"architecture", "amd64"}}},
                              {"images", std::move(images)}}}};
}

inline json::object make_pod(int i) {
  const int job = i / 10;  // ten replicas per owner
  const std::string ns = "user-" + std::to_string(job % 200);
  const std::string owner = "train-" + std::to_string(job);
  const std::string name = owner + "-7d9f8c6b5-" + std::to_string(10000 + i);
  // 0 GPU, 1 tolerates gpu_node without GPUs, 2-3 nodeSelector, 4 affinity, 5 ssd toleration, 6-9 plain.
  // GPU demand is 15,000 pods x 1.25 = 18,750 GPUs, 79% of the ~23,750 on schedulable nodes, so that
  // every pod fits and the figure is for scheduling, not for FailedScheduling diagnostics.
  const int kind = job % 10;
  json::object requests{{"cpu", (i % 3 == 0) ? "500m" : "1"}, {"memory", (i % 2) ? "2Gi" : "1500Mi"}};
  json::object limits{{"cpu", "2"}, {"memory", "4Gi"}};
  json::array tolerations{json::object{{"key", "node.kubernetes.io/not-ready"},
                                       {"operator", "Exists"},
                                       {"effect", "NoExecute"},
                                       {"tolerationSeconds", 300}},
                          json::object{{"key", "node.kubernetes.io/unreachable"},
                                       {"operator", "Exists"},
                                       {"effect", "NoExecute"},
                                       {"tolerationSeconds", 300}}};
  json::object spec;
  if (kind <= 1) {
    if (kind == 0) {
      const std::string gpus = (job % 40 == 0) ? "2" : "1";
      requests["nvidia.com/gpu"] = gpus;
      limits["nvidia.com/gpu"] = gpus;
    }
    tolerations.push_back(
        json::object{{"key", "gpu_node"}, {"operator", "Equal"}, {"value", "invalid"}, {"effect", "NoSchedule"}});
  } else if (kind <= 3) {
    spec["nodeSelector"] = json::object{{"pool", kind == 2 ? "infer" : "batch"}, {"kubernetes.io/os", "linux"}};
  } else if (kind == 4) {
    json::array exprs{
        json::object{
            {"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", json::array{"zone-1", "zone-2"}}},
        json::object{{"key", "accelerator"}, {"operator", "DoesNotExist"}}};
    json::object term{{"matchExpressions", std::move(exprs)}};
    json::object required{{"nodeSelectorTerms", json::array{std::move(term)}}};
    json::object node_affinity{{"requiredDuringSchedulingIgnoredDuringExecution", std::move(required)}};
    spec["affinity"] = json::object{{"nodeAffinity", std::move(node_affinity)}};
  } else if (kind == 5) {
    tolerations.push_back(json::object{{"key", "ssd_node"}, {"operator", "Exists"}});
    spec["nodeSelector"] = json::object{{"ssd", "true"}};
  }
  spec["containers"] = json::array{json::object{
      {"name", "trainer"},
      {"image", "harbor.example.org/library/pytorch:2.1.0-cuda12"},
      {"command", json::array{"bash", "-c", "python train.py --epochs 90 --data /data"}},
      {"env", json::array{json::object{{"name", "NCCL_DEBUG"}, {"value", "INFO"}},
                          json::object{{"name", "JOB_NAME"}, {"value", owner}}}},
      {"resources", json::object{{"requests", std::move(requests)}, {"limits", std::move(limits)}}},
      {"volumeMounts", json::array{json::object{{"name", "data"}, {"mountPath", "/data"}},
                                   json::object{{"name", "kube-api-access-x"},
                                                {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                                                {"readOnly", true}}}},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
      {"imagePullPolicy", "IfNotPresent"}}};
  spec["volumes"] = json::array{
      json::object{{"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", "data-" + ns}}}},
      json::object{
          {"name", "kube-api-access-x"},
          {"projected", json::object{{"defaultMode", 420},
                                     {"sources", json::array{json::object{
                                                     {"serviceAccountToken", json::object{{"expirationSeconds", 3607},
                                                                                          {"path", "token"}}}}}}}}}};
  spec["tolerations"] = std::move(tolerations);
  spec["restartPolicy"] = "Always";
  spec["terminationGracePeriodSeconds"] = 30;
  spec["dnsPolicy"] = "ClusterFirst";
  spec["serviceAccountName"] = "default";
  spec["schedulerName"] = "default-scheduler";
  spec["priority"] = 0;
  spec["enableServiceLinks"] = true;
  spec["preemptionPolicy"] = "PreemptLowerPriority";
  return json::object{
      {"metadata", json::object{{"name", name},
                                {"generateName", owner + "-7d9f8c6b5-"},
                                {"namespace", ns},
                                {"uid", "5b2e7c1a-" + std::to_string(1000000 + i) + "-4c3d-8e9f-0a1b2c3d4e5f"},
                                {"resourceVersion", std::to_string(50000 + i)},
                                {"creationTimestamp", ts(i)},
                                {"labels", json::object{{"app", owner}, {"pod-template-hash", "7d9f8c6b5"}}},
                                {"ownerReferences", json::array{json::object{{"apiVersion", "apps/v1"},
                                                                             {"kind", "ReplicaSet"},
                                                                             {"name", owner + "-7d9f8c6b5"},
                                                                             {"uid", "9a8b7c6d-" + std::to_string(job)},
                                                                             {"controller", true},
                                                                             {"blockOwnerDeletion", true}}}}}},
      {"spec", std::move(spec)},
      {"status", json::object{{"phase", "Pending"},
                              {"conditions", json::array{json::object{{"type", "PodScheduled"},
                                                                      {"status", "False"},
                                                                      {"lastProbeTime", nullptr},
                                                                      {"lastTransitionTime", ts(i)},
                                                                      {"reason", "Unschedulable"}}}},
                              {"qosClass", "Burstable"}}}};
}

}  // namespace bench
