#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"

#include <string>

using namespace gpupool;

TEST_CASE("built-in profiles: iiis carries the guide's conventions, generic the plain ones") {
  CHECK(Profile::builtin_names() == std::vector<std::string>{"generic", "iiis"});

  Profile iiis = Profile::builtin("iiis");
  CHECK(iiis.name == "iiis");
  CHECK(iiis.catalog.prefix == "harbor.iiis.co/library");
  CHECK(iiis.catalog.resolve("ubuntu-pytorch:1.5.0") == "harbor.iiis.co/library/ubuntu-pytorch:1.5.0");
  REQUIRE(iiis.catalog.find("ubuntu-tensorflow") != nullptr);
  CHECK(iiis.catalog.find("ubuntu-tensorflow")->tags == std::vector<std::string>{"1.14.1", "2.3.0"});
  CHECK(iiis.storage_class("nfs") == "managed-nfs-storage");
  CHECK(iiis.storage_class("cephfs") == "cephfs");
  CHECK(iiis.storage_class("premium") == "premium");
  REQUIRE(iiis.nfs.has_value());
  CHECK(iiis.nfs->server == "172.16.112.175");
  CHECK(iiis.nfs->home.sub_path == "share/{namespace}");
  CHECK(iiis.local_ssds == std::vector<LocalSsd>{{"/data", "/mnt/data1"}, {"/data2", "/mnt/data2"}});
  CHECK(iiis.gpu.resource == "virtaitech.com/gpu");
  CHECK(iiis.gpu.scheduler_name == "orion-scheduler");
  REQUIRE(iiis.gpu.env.size() >= 6);
  CHECK(iiis.gpu.env.front() == EnvVar{"ORION_GMEM", "10000", ""});
  CHECK(iiis.gpu.env.back() == EnvVar{"ORION_K8S_POD_NS", "", "metadata.namespace"});
  CHECK(iiis.host_network);
  CHECK(iiis.host_ipc);

  Profile generic = Profile::builtin("generic");
  CHECK(generic.gpu.resource == "nvidia.com/gpu");
  CHECK(generic.gpu.scheduler_name.empty());
  CHECK(generic.gpu.env.empty());
  CHECK_FALSE(generic.host_network);
  CHECK_FALSE(generic.nfs.has_value());
  CHECK(generic.local_ssds.empty());
  CHECK(generic.catalog.resolve("ubuntu-pytorch:1.5.0") == "ubuntu-pytorch:1.5.0");

  CHECK_THROWS_WITH_AS(Profile::builtin("aliyun"), doctest::Contains("built-in profiles: generic, iiis"), ConfigError);
}

TEST_CASE("Profile::load reads a file; every field lands where it belongs") {
  std::string path = std::string(GPUPOOL_SOURCE_DIR) + "/tests/model/data/lab-profile.yaml";
  Profile p = Profile::load(path);
  CHECK(p.name == "lab");
  CHECK(p.default_namespace == "ml");
  CHECK(p.catalog.resolve("torch:2.2") == "registry.lab.example:5000/ml/torch:2.2");
  CHECK(p.catalog.images.at(0).cuda == "12.1");
  CHECK(p.storage_class("fast") == "ceph-rbd");
  CHECK(p.nfs->datasets == NfsMount{"datasets", "/datasets"});
  CHECK(p.nfs->home == NfsMount{"users/{namespace}", "/home/{namespace}"});
  CHECK(p.local_ssds == std::vector<LocalSsd>{{"/nvme0", "/scratch"}});
  CHECK(p.gpu.scheduler_name == "volcano");
  CHECK(p.gpu.env == std::vector<EnvVar>{{"NCCL_IB_DISABLE", "1", ""}});
  CHECK_FALSE(p.host_network);
  CHECK(p.host_ipc);
  CHECK(p.image_pull_policy == "IfNotPresent");
  CHECK(p.tensorboard_image == "torch:2.2");
  // parse() of the same text gives the same profile.
  CHECK(Profile::parse("name: lab\n", "x").name == "lab");

  CHECK_THROWS_WITH_AS(Profile::load("/nonexistent/profile.yaml"),
                       doctest::Contains("/nonexistent/profile.yaml: cannot read"), ConfigError);
}

TEST_CASE("Profile::resolve: empty is generic, a name is built in, a path or .yaml name is a file") {
  CHECK(Profile::resolve("") == Profile::builtin("generic"));
  CHECK(Profile::resolve("iiis") == Profile::builtin("iiis"));
  CHECK(Profile::resolve(std::string(GPUPOOL_SOURCE_DIR) + "/tests/model/data/lab-profile.yaml").name == "lab");
  // A bare file name is a file too (it would otherwise be an unknown built-in name).
  CHECK_THROWS_WITH_AS(Profile::resolve("my-lab.yaml"), doctest::Contains("my-lab.yaml: cannot read"), ConfigError);
  CHECK_THROWS_WITH_AS(Profile::resolve("nosuch"), doctest::Contains("iiis"), ConfigError);  // lists the known ones
}

TEST_CASE("a bad profile is a ConfigError naming the file, the line and the key") {
  struct Row {
    std::string text;
    int line;
    std::string key, message_part;
  };
  const Row rows[] = {
      {"name: x\nregistyr: a.b/c\n", 2, "registyr", "unknown key"},
      {"name: x\ngpu:\n  resource: nvidia.com/gpu\n  schedulr: s\n", 4, "gpu.schedulr", "unknown key"},
      {"description: no name\n", 1, "name", "Required value"},
      {"name: Bad_Name\n", 1, "name", "RFC 1123"},
      {"name: x\nnamespace: [a]\n", 2, "namespace", "must be a string"},
      {"name: x\npod:\n  host_network: maybe\n", 3, "pod.host_network", "true or false"},
      {"name: x\npod:\n  image_pull_policy: always\n", 3, "pod.image_pull_policy", "\"Always\""},
      {"name: x\ngpu:\n  resource: \"not a name!\"\n", 3, "gpu.resource", "invalid value"},
      {"name: x\ngpu:\n  env:\n    - {name: A, value: '1', field_path: metadata.uid}\n", 4, "gpu.env[0]",
       "exactly one"},
      {"name: x\ngpu:\n  env:\n    - {value: '1'}\n", 4, "gpu.env[0].name", "Required value"},
      {"name: x\nnfs:\n  path: /exports\n", 3, "nfs.server", "Required value"},
      {"name: x\nnfs:\n  server: s\n  path: exports\n", 4, "nfs.path", "absolute path"},
      {"name: x\nnfs:\n  server: s\n  path: /e\n  home: {sub_path: /abs, mount_path: /h}\n", 5, "nfs.home.sub_path",
       "relative"},
      {"name: x\nlocal_ssds:\n  - {host_path: /data}\n", 3, "local_ssds[0]", "both host_path and mount_path"},
      {"name: x\nlocal_ssds: /data\n", 2, "local_ssds", "must be a list"},
      {"name: x\nimages:\n  - name: torch\n    tags: [\"-bad\"]\n", 4, "images[0].tags[0]", "tag"},
      {"name: x\nimages:\n  - {name: t, tags: ['1']}\n  - {name: t}\n", 4, "images[1].name", "duplicate image"},
      {"name: x\nregistry: \"bad registry/x\"\n", 2, "registry", "invalid value"},
      {"name: x\nstorage_classes:\n  nfs: Bad_Class\n", 3, "storage_classes.nfs", "invalid value"},
      {"name: x\ntensorboard:\n  image: \"UPPER\"\n", 3, "tensorboard.image", "lowercase"},
      {"- just\n- a list\n", 1, "", "must be a mapping"},
      {"name: [unclosed\n", 2, "", "not valid YAML"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    try {
      (void)Profile::parse(r.text, "site.yaml");
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "site.yaml");
      CHECK(e.line() == r.line);
      CHECK(e.key() == r.key);
      CHECK(std::string(e.what()).find(r.message_part) != std::string::npos);
    }
  }
  CHECK_THROWS_WITH_AS(Profile::parse("", "empty.yaml"), doctest::Contains("empty.yaml: the profile is empty"),
                       ConfigError);
}
