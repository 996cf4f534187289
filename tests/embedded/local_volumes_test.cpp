// RunMode::Local volumes: hostPath, PVC, NFS and emptyDir are local directories the command sees at
// their mountPath (a mount namespace, or rewritten paths), and the SSD staging routine copies for real.
#include <doctest/doctest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "embedded/service_account_tokens.hpp"
#include "embedded/tls.hpp"
#include "gpupool/staging.hpp"
#include "local_cluster.hpp"

using namespace local_test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kNode = "cn-beijing.192.168.3.230";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string json_array(const std::vector<std::string>& argv) {
  json::array a;
  for (const auto& s : argv) a.emplace_back(s);
  return json::serialize(a);
}

constexpr const char* kVolumes = R"("volumes":[
    {"name":"ssd","hostPath":{"path":"/data"}},
    {"name":"data","persistentVolumeClaim":{"claimName":"data"}},
    {"name":"share","nfs":{"server":"172.16.112.175","path":"/nfs_data"}},
    {"name":"scratch","emptyDir":{}}])";
constexpr const char* kMounts = R"("volumeMounts":[
    {"name":"ssd","mountPath":"/mnt/data1"},
    {"name":"data","mountPath":"/pvc"},
    {"name":"share","mountPath":"/share/datasets","subPath":"share/datasets","readOnly":true},
    {"name":"scratch","mountPath":"/scratch"}])";

void volumes_case(const char* method) {
  MountsEnv env(method);
  LocalCluster c;
  CHECK(to_string(c.kubelet.local_runtime()->mount_method()) == std::string(method));
  write_file(c.root + "/volumes/default/data/in.txt", "from the pvc\n");
  write_file(c.root + "/nfs/172.16.112.175/nfs_data/share/datasets/mnist.txt", "digits\n");
  const std::string script =
      "cat /pvc/in.txt /share/datasets/mnist.txt; echo ssd > /mnt/data1/x; echo tmp > /scratch/t; cat /scratch/t; "
      "echo out > /pvc/out.txt; if (echo no > /share/datasets/w) 2>/dev/null; then echo writable; fi; echo $OUT";
  c.run("vols", std::string(kVolumes) + "," +
                    container_spec(R"("command":["sh","-c",)" + json::serialize(json::string(script)) +
                                   R"(],"env":[{"name":"OUT","value":"/pvc/out.txt"}],)" + kMounts));
  REQUIRE(c.wait_phase("vols", "Succeeded"));
  const std::string uid = field_value(c.pod("vols"), "metadata.uid");
  // The paths as the command saw them: the mountPath in a namespace, the local directory otherwise.
  const std::string out_path =
      std::string(method) != "paths" ? "/pvc/out.txt" : c.root + "/volumes/default/data/out.txt";
  std::string expected = "from the pvc\ndigits\ntmp\n";
  if (std::string(method) == "paths") expected += "writable\n";  // readOnly is kept by a namespace only
  CHECK(c.log("vols") == expected + out_path + "\n");
  CHECK(read_file(c.root + "/nodes/" + kNode + "/data/x") == "ssd\n");
  CHECK(read_file(c.root + "/volumes/default/data/out.txt") == "out\n");
  CHECK(read_file(c.root + "/pods/default/vols." + uid + "/volumes/scratch/t") == "tmp\n");
}

}  // namespace

TEST_CASE("local volumes: hostPath, PVC, NFS and emptyDir as local directories, in a mount namespace") {
  if (resolve_mount_method(MountMethod::Auto) != MountMethod::Namespace && !std::getenv("GPUPOOL_LOCAL_MOUNTS")) {
    MESSAGE("this machine allows no mount namespace: the namespace case is skipped");
    return;
  }
  volumes_case("namespace");
}

TEST_CASE("local volumes: the same in a user namespace, as without CAP_SYS_ADMIN (GPUPOOL_LOCAL_MOUNTS=userns)") {
  if (!userns_allowed()) {
    MESSAGE("this machine allows no user namespace: the userns case is skipped");
    return;
  }
  volumes_case("userns");
}

TEST_CASE("local volumes: the same, with mountPaths rewritten to the local directories") { volumes_case("paths"); }

TEST_CASE("local volumes: paths are rewritten only where a mountPath starts a path") {
  const std::vector<LocalMount> mounts{
      {"/s/ssd", "/mnt/data1", false}, {"/s/pvc", "/pvc", false}, {"/s/deep", "/pvc/deep", false}};
  CHECK(rewrite_mount_paths("/pvc", mounts) == "/s/pvc");
  CHECK(rewrite_mount_paths("--in=/pvc/a --out=/mnt/data1/b", mounts) == "--in=/s/pvc/a --out=/s/ssd/b");
  CHECK(rewrite_mount_paths("/pvc/deep/x", mounts) == "/s/deep/x");  // the longest mountPath wins
  CHECK(rewrite_mount_paths("/pvcx /x/pvc /mnt/data10 'cp /pvc/'", mounts) == "/pvcx /x/pvc /mnt/data10 'cp /s/pvc/'");
}

TEST_CASE("local volumes: a PVC is shared by the pods that mount it") {
  LocalCluster c;
  const std::string vol = R"("volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"shared"}}])";
  const std::string mount = R"(,"volumeMounts":[{"name":"data","mountPath":"/work/data"}])";
  c.run("writer", vol + "," + container_spec(R"("command":["sh","-c","echo 42 > /work/data/answer"])" + mount));
  REQUIRE(c.wait_phase("writer", "Succeeded"));
  c.run("reader", vol + "," + container_spec(R"("command":["cat","/work/data/answer"])" + mount));
  REQUIRE(c.wait_phase("reader", "Succeeded"));
  CHECK(c.log("reader") == "42\n");
  CHECK(read_file(c.root + "/volumes/default/shared/answer") == "42\n");
}

TEST_CASE("local volumes: SSD staging copies the input in, runs, copies results back, keeps the exit code") {
  // Each way volumes are seen: as this machine allows (a mount namespace here), rewritten paths, and
  // a mount namespace inside a user namespace (the fallbacks of machines that allow less).
  for (const std::string method : {"", "paths", "userns"})
    for (const int code : {0, 3}) {
      CAPTURE(method);
      CAPTURE(code);
      if (method == "userns" && !userns_allowed()) continue;
      std::optional<MountsEnv> env;
      if (!method.empty()) env.emplace(method.c_str());
      LocalCluster c;
      if (!method.empty()) CHECK(to_string(c.kubelet.local_runtime()->mount_method()) == method);
      write_file(c.root + "/volumes/default/data/in/a.txt", "input\n");
      gpupool::SsdStaging staging;
      staging.inputs = {{"/pvc/in", "/mnt/data1/job/in"}};
      staging.results = "/mnt/data1/job/out";
      staging.results_target = "/pvc/out";
      staging.grace_period_seconds = 10;
      const auto command = gpupool::staged_command(
          staging, {"sh", "-c",
                    "mkdir -p /mnt/data1/job/out && tr a-z A-Z < /mnt/data1/job/in/a.txt > /mnt/data1/job/out/r.txt && "
                    "exit " +
                        std::to_string(code)});
      const std::string mounts =
          R"("volumeMounts":[{"name":"ssd","mountPath":"/mnt/data1"},{"name":"data","mountPath":"/pvc"}])";
      c.run("staged", R"("volumes":[{"name":"ssd","hostPath":{"path":"/data"}},
                                  {"name":"data","persistentVolumeClaim":{"claimName":"data"}}],
                       "initContainers":[{"name":"stage-in","image":"busybox","command":)" +
                          json_array({"sh", "-c", gpupool::stage_in_script(staging)}) + "," + mounts + R"(}],
                       "containers":[{"name":"main","image":"busybox","command":)" +
                          json_array(command) + "," + mounts + "}]");
      REQUIRE(c.wait_phase("staged", code == 0 ? "Succeeded" : "Failed"));
      const auto p = c.pod("staged");
      CHECK(p.at("status").at("containerStatuses").at(0).at("state").at("terminated").at("exitCode") == code);
      // Copied into the node's SSD directory, computed there, copied back into the PVC's directory.
      CHECK(read_file(c.root + "/nodes/" + kNode + "/data/job/in/a.txt") == "input\n");
      CHECK(read_file(c.root + "/nodes/" + kNode + "/data/job/out/r.txt") == "INPUT\n");
      CHECK(read_file(c.root + "/volumes/default/data/out/r.txt") == "INPUT\n");
      CHECK(c.log("staged").find("results copied back to") != std::string::npos);
    }
}

namespace {

void projected_case(const char* method) {
  MountsEnv env(method);
  // The token's mountPath lies below /var/run, a symlink to /run here: nothing of it may appear
  // on this machine (the mount namespace resolves it in the new root).
  const bool host_had = fs::exists("/run/secrets/kubernetes.io/serviceaccount");
  LocalCluster c;
  c.store.create(c.store.type("", "configmaps"), "default",
                 parse_obj(R"({"metadata":{"name":"kube-root-ca.crt"},"data":{"ca.crt":"-----PEM-----"}})"));
  c.store.create(c.store.type("", "serviceaccounts"), "default", parse_obj(R"({"metadata":{"name":"default"}})"));
  CertificateAuthority ca;
  ServiceAccountTokens tokens{c.store, ca.key_pem()};
  json::object asked;
  c.kubelet.local_runtime()->set_token_requester([&](const json::object& pod, const json::object& projection) {
    asked = projection;
    const std::string token(
        tokens
            .request("default", "default",
                     parse_obj(R"({"spec":{"expirationSeconds":3607,"boundObjectRef":{"kind":"Pod","apiVersion":"v1",)"
                               R"("name":")" +
                               field_value(pod, "metadata.name") + R"("}}})"),
                     c.clock.now())
            .at("status")
            .at("token")
            .as_string());
    return std::optional<std::string>(token);
  });
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  const std::string script = "cat " + dir + "/namespace; echo; cat " + dir + "/ca.crt; echo; ls " + dir;
  c.run(
      "sa",
      R"("serviceAccountName":"default","volumes":[{"name":"kube-api-access-x2b4c","projected":{"defaultMode":420,"sources":[
      {"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},
      {"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},
      {"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}]}}],)" +
          container_spec(R"("command":["sh","-c",)" + json::serialize(json::string(script)) +
                         R"(],"volumeMounts":[{"name":"kube-api-access-x2b4c","readOnly":true,"mountPath":")" + dir +
                         R"("}])"));
  REQUIRE(c.wait_phase("sa", "Succeeded"));
  CHECK(c.log("sa") == "default\n-----PEM-----\nca.crt\nnamespace\ntoken\n");
  CHECK(asked.at("path") == "token");
  const std::string uid = field_value(c.pod("sa"), "metadata.uid");
  const auto id = tokens.authenticate(
      read_file(c.root + "/pods/default/sa." + uid + "/volumes/kube-api-access-x2b4c/token"), c.clock.now());
  REQUIRE(id);  // (the token itself is never printed)
  CHECK(id->user == "system:serviceaccount:default:default");
  CHECK(id->extra.at("authentication.kubernetes.io/pod-name") == std::vector<std::string>{"sa"});
  if (!host_had) CHECK_FALSE(fs::exists("/run/secrets/kubernetes.io/serviceaccount"));
}

}  // namespace

TEST_CASE("local volumes: a projected volume (the ServiceAccount plugin's) holds the token, ca.crt, the namespace") {
  // What the kubelet projects: a configMap source's items, a downwardAPI source's fields, and a
  // token of the pod's account bound to the pod (its token manager's TokenRequest), which the API
  // server then takes as that account.
  projected_case("paths");
}

TEST_CASE("local volumes: the same in a mount namespace, below /var/run's symlink") {
  if (resolve_mount_method(MountMethod::Auto) != MountMethod::Namespace && !std::getenv("GPUPOOL_LOCAL_MOUNTS")) {
    MESSAGE("this machine allows no mount namespace: the namespace case is skipped");
    return;
  }
  projected_case("namespace");
}
