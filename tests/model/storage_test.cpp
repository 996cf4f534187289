#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/storage.hpp"

#include <string>

using namespace gpupool;

TEST_CASE("access modes and hostPath types parse their API names (and kubectl's short modes)") {
  struct Row {
    std::string text;
    AccessMode mode;
  };
  const Row rows[] = {{"ReadWriteOnce", AccessMode::ReadWriteOnce},      {"RWO", AccessMode::ReadWriteOnce},
                      {"ReadOnlyMany", AccessMode::ReadOnlyMany},        {"ROX", AccessMode::ReadOnlyMany},
                      {"ReadWriteMany", AccessMode::ReadWriteMany},      {"RWX", AccessMode::ReadWriteMany},
                      {"ReadWriteOncePod", AccessMode::ReadWriteOncePod}};
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(parse_access_mode(r.text) == r.mode);
    CHECK(parse_access_mode(to_string(r.mode)) == r.mode);
  }
  CHECK_THROWS_WITH_AS(parse_access_mode("rwx", "pvc.accessModes[0]"), doctest::Contains("pvc.accessModes[0]"),
                       ValidationError);
  CHECK(parse_host_path_type("DirectoryOrCreate") == HostPathType::DirectoryOrCreate);
  CHECK(to_string(parse_host_path_type("")) == "");
  CHECK_THROWS_AS(parse_host_path_type("Dir"), ValidationError);
}

TEST_CASE("PVC requests: name, access modes and size are checked") {
  struct Row {
    PvcRequest pvc;
    std::string field, rule_part;
  };
  const Row rows[] = {
      {{"My_PVC", "nfs", Quantity::parse("1Gi"), {AccessMode::ReadWriteMany}}, "pvc.metadata.name", "RFC 1123"},
      {{"data", "nfs", Quantity::parse("1Gi"), {}}, "pvc.spec.accessModes", "at least 1 access mode"},
      {{"data", "", Quantity::parse("1Gi"), {AccessMode::ReadWriteOncePod, AccessMode::ReadWriteMany}},
       "pvc.spec.accessModes",
       "ReadWriteOncePod with other"},
      {{"data", "", Quantity::parse("0"), {AccessMode::ReadWriteOnce}},
       "pvc.spec.resources.requests[storage]",
       "greater than zero"},
      {{"data", "", Quantity::parse("-1Gi"), {AccessMode::ReadWriteOnce}},
       "pvc.spec.resources.requests[storage]",
       "greater than zero"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    try {
      validate(r.pvc);
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(std::string(e.what()).find(r.rule_part) != std::string::npos);
    }
  }
  CHECK_NOTHROW(
      validate(PvcRequest{"my-pvc-demo", "managed-nfs-storage", Quantity::parse("1Gi"), {AccessMode::ReadWriteOnce}}));
}

TEST_CASE("volumes and mounts: the guide's combinations are valid") {
  std::vector<Volume> volumes{{"my-local-disk-1", HostPathSource{"/data", HostPathType::Unset}},
                              {"my-local-disk-2", HostPathSource{"/data2", HostPathType::Directory}},
                              {"my-pvc", PvcSource{"my-pvc-demo", false}},
                              {"share-nfs", NfsSource{"172.16.112.175", "/nfs_data/share", false}},
                              {"dshm", EmptyDirSource{true, Quantity::parse("8Gi")}}};
  std::vector<VolumeMount> mounts{{"my-local-disk-1", "/mnt/data1", "", false},
                                  {"my-local-disk-2", "/mnt/data2", "", false},
                                  {"my-pvc", "/pvc", "", false},
                                  {"share-nfs", "/share/datasets", "datasets", true},
                                  {"share-nfs", "/share/zhangsan", "zhangsan", false},
                                  {"dshm", "/dev/shm", "", false}};
  CHECK_NOTHROW(validate_volumes(volumes, mounts));
}

TEST_CASE("volumes and mounts: each kind of mistake is an error naming the field and the rule") {
  using Vols = std::vector<Volume>;
  using Mounts = std::vector<VolumeMount>;
  struct Row {
    Vols volumes;
    Mounts mounts;
    std::string field, rule_part;
  };
  const Vols one{{"data", PvcSource{"claim", false}}};
  const Row rows[] = {
      {{{"data", PvcSource{"a", false}}, {"data", PvcSource{"b", false}}},
       {},
       "spec.volumes[1].name",
       "Duplicate value"},
      {{{"Data", PvcSource{"a", false}}}, {}, "spec.volumes[0].name", "RFC 1123"},
      {one, {{"data", "/a", "", false}, {"data", "/a", "", false}}, "spec.volumeMounts[1].mountPath", "must be unique"},
      {one, {{"data", "", "", false}}, "spec.volumeMounts[0].mountPath", "Required value"},
      {one, {{"other", "/x", "", false}}, "spec.volumeMounts[0].name", "Not found"},
      {one, {{"data", "/x", "/abs", false}}, "spec.volumeMounts[0].subPath", "relative path"},
      {one, {{"data", "/x", "a/../../etc", false}}, "spec.volumeMounts[0].subPath", "'..'"},
      {{{"n", NfsSource{"", "/x", false}}}, {}, "spec.volumes[0].nfs.server", "Required value"},
      {{{"n", NfsSource{"srv", "x", false}}}, {}, "spec.volumes[0].nfs.path", "absolute path"},
      {{{"h", HostPathSource{"", HostPathType::Unset}}}, {}, "spec.volumes[0].hostPath.path", "Required value"},
      {{{"h", HostPathSource{"/data/../etc", HostPathType::Unset}}}, {}, "spec.volumes[0].hostPath.path", "'..'"},
      {{{"e", EmptyDirSource{true, Quantity::parse("-1Gi")}}},
       {},
       "spec.volumes[0].emptyDir.sizeLimit",
       "SizeLimit field"},
      {{{"p", PvcSource{"", false}}}, {}, "spec.volumes[0].persistentVolumeClaim.claimName", "Required value"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    try {
      validate_volumes(r.volumes, r.mounts, "spec.");
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(std::string(e.what()).find(r.rule_part) != std::string::npos);
    }
  }
}

TEST_CASE("resources: negative values, request above limit and fractional extended resources are errors") {
  struct Row {
    Resources r;
    std::string field, rule_part;
  };
  auto q = [](const char* s) { return Quantity::parse(s); };
  const Row rows[] = {
      {{q("-1"), std::nullopt, std::nullopt, std::nullopt, 0, {}},
       "resources.requests[cpu]",
       "greater than or equal to 0"},
      {{q("5"), q("4"), std::nullopt, std::nullopt, 0, {}},
       "resources.requests[cpu]",
       "less than or equal to cpu limit of 4"},
      {{std::nullopt, std::nullopt, q("12Gi"), q("10Gi"), 0, {}},
       "resources.requests[memory]",
       "less than or equal to memory limit of 10Gi"},
      {{std::nullopt, std::nullopt, std::nullopt, q("-1Mi"), 0, {}},
       "resources.limits[memory]",
       "greater than or equal to 0"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, -1, {}},
       "resources.gpus",
       "greater than or equal to 0"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"example.com/fpga", q("500m")}}},
       "resources.extra[example.com/fpga]",
       "must be an integer"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"cpu", q("1")}}},
       "resources.extra[cpu]",
       "own fields"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"bad key!", q("1")}}},
       "resources.extra[bad key!]",
       ""},
      // validateContainerResourceName (golden podvalues, pods "resname" and "resbadname").
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"foo", q("1")}}},
       "resources.extra[foo]",
       "must be a standard resource type or fully qualified"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"pods", q("1")}}},
       "resources.extra[pods]",
       "must be a standard resource for containers"},
      {{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"example.com/a b", q("1")}}},
       "resources.extra[example.com/a b]",
       "name part must consist of"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    try {
      validate(r.r);
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(std::string(e.what()).find(r.rule_part) != std::string::npos);
    }
  }
  CHECK_NOTHROW(validate(Resources{q("4"), q("4"), q("8Gi"), q("10Gi"), 1, {{"ephemeral-storage", q("500m")}}}));
  // A prefixed native resource is taken as v1.32 takes it (golden podvalues, pod "resnative").
  CHECK_NOTHROW(
      validate(Resources{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, {{"kubernetes.io/foo", q("1")}}}));
}

TEST_CASE("access_modes_column: kubectl's ACCESS MODES, fixed order, each once, unknown left out") {
  // pkg/apis/core/helper GetAccessModesAsString.
  CHECK(access_modes_column({"ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"}) == "RWO,RWX");
  CHECK(access_modes_column({"ReadWriteOncePod", "ReadOnlyMany"}) == "ROX,RWOP");
  CHECK(access_modes_column({"Sideways"}).empty());
  CHECK(access_modes_column({}).empty());
}
