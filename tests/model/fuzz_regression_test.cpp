// Bad input (issue 8 item 4) and fuzz regressions: every user-facing mini-syntax of `gpupool submit`
// and every decoder of server objects answers malformed values with exactly one gpupool error that
// names the offending option/field, and never with a crash, a foreign exception or a half-built
// result. Regression inputs found by the fuzz targets (fuzz/) are replayed from
// tests/fuzz_regressions/<target>/ by the last test case.
#include "gpupool/error.hpp"
#include "gpupool/image.hpp"
#include "gpupool/node.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/submit_options.hpp"
#include "gpupool/taint.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace gpupool;

namespace {

SubmitOptions valid_options() {
  SubmitOptions o;
  o.kind = "job";
  o.name = "ok";
  o.image = "ubuntu:20.04";
  o.command = "true";
  return o;
}

struct BadOption {
  const char* what;                         ///< the case, for the report
  std::function<void(SubmitOptions&)> set;  ///< applies the malformed value
  const char* field;                        ///< the option the error must name (prefix)
};

}  // namespace

TEST_CASE("the valid baseline of the bad-option table is accepted") { CHECK_NOTHROW(to_workload(valid_options())); }

TEST_CASE("malformed submit options give one ValidationError naming the option") {
  const std::string long_name(64, 'a');
  const std::vector<BadOption> rows = {
      {"name with capitals and underscore", [](SubmitOptions& o) { o.name = "Bad_Name"; }, "name"},
      {"name starting with a dash", [](SubmitOptions& o) { o.name = "-job"; }, "name"},
      {"name too long for a DNS label", [&](SubmitOptions& o) { o.name = long_name; }, "name"},
      {"empty name", [](SubmitOptions& o) { o.name = ""; }, "name"},
      {"namespace with a dot", [](SubmitOptions& o) { o.namespace_ = "a.b"; }, "namespace"},
      {"cpu not a quantity", [](SubmitOptions& o) { o.cpu = "lots"; }, "cpu"},
      {"cpu with two dots", [](SubmitOptions& o) { o.cpu = "1.2.3"; }, "cpu"},
      {"memory with a non-Kubernetes suffix", [](SubmitOptions& o) { o.memory = "16GB"; }, "memory"},
      {"memory lower-case binary suffix", [](SubmitOptions& o) { o.memory = "16gi"; }, "memory"},
      {"memory with a space", [](SubmitOptions& o) { o.memory = "16 Gi"; }, "memory"},
      {"shm not a quantity", [](SubmitOptions& o) { o.shm = "big"; }, "shm"},
      {"negative gpus", [](SubmitOptions& o) { o.gpus = -1; }, "gpus"},
      {"toleration with empty key", [](SubmitOptions& o) { o.tolerations = {"=v:NoSchedule"}; }, "toleration"},
      {"toleration with unknown effect", [](SubmitOptions& o) { o.tolerations = {"key:Sometimes"}; }, "toleration"},
      {"toleration with unknown operator", [](SubmitOptions& o) { o.tolerations = {"k=v:NoSchedule,Maybe"}; },
       "toleration"},
      {"toleration key with spaces", [](SubmitOptions& o) { o.tolerations = {"a key"}; }, "toleration"},
      {"selector without value", [](SubmitOptions& o) { o.selectors = {"novalue"}; }, "selector"},
      {"selector with empty key", [](SubmitOptions& o) { o.selectors = {"=x"}; }, "selector"},
      {"data without mount path", [](SubmitOptions& o) { o.data = {"pvc"}; }, "data"},
      {"data with relative mount path", [](SubmitOptions& o) { o.data = {"pvc:relative/path"}; }, "data"},
      {"data with invalid claim name", [](SubmitOptions& o) { o.data = {"PVC_Bad:/data"}; }, "data"},
      {"data with unknown mode", [](SubmitOptions& o) { o.data = {"pvc:/data:rx"}; }, "data"},
      {"data-dir with relative host path", [](SubmitOptions& o) { o.data_dirs = {"relative:/x"}; }, "data"},
      {"data-dir without mount path", [](SubmitOptions& o) { o.data_dirs = {"/host"}; }, "data"},
      {"pvc-create without size", [](SubmitOptions& o) { o.pvc_create = {"n:sc"}; }, "pvc"},
      {"pvc-create with bad size", [](SubmitOptions& o) { o.pvc_create = {"n:sc:lots"}; }, "pvc"},
      {"env without '='", [](SubmitOptions& o) { o.env = {"NOEQ"}; }, "env"},
      {"env with empty name", [](SubmitOptions& o) { o.env = {"=v"}; }, "env"},
      {"image with upper-case repository", [](SubmitOptions& o) { o.image = "Ubuntu/TF"; }, "image"},
      {"image with a space", [](SubmitOptions& o) { o.image = "ubuntu 20.04"; }, "image"},
      {"image with empty tag", [](SubmitOptions& o) { o.image = "ubuntu:"; }, "image"},
      {"image with short digest", [](SubmitOptions& o) { o.image = "ubuntu@sha256:abc"; }, "image"},
      {"stage-in without target", [](SubmitOptions& o) { o.stage_in = {"nocolon"}; }, "stage"},
      {"unknown MPI API version",
       [](SubmitOptions& o) {
         o.mpi_api = "v3";
         o.kind = "mpi";
       },
       "mpi"},
      {"unknown kind", [](SubmitOptions& o) { o.kind = "cronjob"; }, "kind"},
      {"command and argv both", [](SubmitOptions& o) { o.argv = {"echo"}; }, "command"},
  };
  for (const auto& row : rows) {
    const std::string what = row.what;
    CAPTURE(what);
    SubmitOptions o = valid_options();
    row.set(o);
    bool thrown = false;
    try {
      (void)to_workload(o);
    } catch (const ValidationError& e) {
      thrown = true;
      std::string field = e.field();
      for (auto& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::string message = e.what();
      CAPTURE(message);
      CHECK(field.find(row.field) != std::string::npos);
      CHECK(std::string(e.what()).find("invalid value") != std::string::npos);
    }
    CHECK(thrown);
  }
}

TEST_CASE("decoding server objects of the wrong shape gives a gpupool error, never a crash") {
  // Truncated, not JSON at all is the transport's business; here: JSON of the wrong types.
  const std::vector<const char*> docs = {
      R"([])",
      R"("node")",
      R"(42)",
      R"(null)",
      R"({"metadata":[]})",
      R"({"metadata":{"name":7}})",
      R"({"metadata":{"name":"n","labels":[1,2]}})",
      R"({"metadata":{"name":"n","labels":{"a":1}}})",
      R"({"metadata":{"name":"n"},"spec":{"taints":{}}})",
      R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":1}]}})",
      R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}})",
      R"({"metadata":{"name":"n"},"status":{"capacity":{"cpu":"lots"}}})",
      R"({"metadata":{"name":"n"},"status":{"capacity":{"cpu":8}}})",
      R"({"metadata":{"name":"n"},"status":{"capacity":[]}})",
      R"({"metadata":{"name":"n"},"status":{"conditions":"Ready"}})",
      R"({"metadata":{"name":"n"},"status":{"conditions":[{"type":1}]}})",
      R"({"metadata":{"name":"n"},"status":{"addresses":[null]}})",
      R"({"metadata":{"name":"n","creationTimestamp":"yesterday"}})",
      R"({"spec":{"containers":{}}})",
      R"({"spec":{"containers":[{"resources":{"requests":{"cpu":"-"}}}]}})",
      R"({"spec":{"containers":[{"resources":{"requests":[]}}]}})",
      R"({"spec":{"containers":[null]}})",
      R"({"spec":{"tolerations":[{"operator":"Sometimes"}]}})",
      R"({"spec":{"tolerations":[{"tolerationSeconds":"x"}]}})",
      R"({"spec":{"nodeSelector":{"a":[]}}})",
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"operator":"Near"}]}]}}}}})",
  };
  for (const char* doc : docs) {
    const std::string text = doc;
    CAPTURE(text);
    const boost::json::value v = boost::json::parse(doc);
    // Either decoder may accept a document (fields are optional); what it must not do is throw
    // anything but a gpupool::Error.
    for (int which = 0; which < 2; ++which) {
      try {
        if (which == 0)
          (void)Node::from_json(v);
        else
          (void)PodRequirements::from_pod_json(v);
      } catch (const gpupool::Error&) {
      } catch (const std::exception& e) {
        FAIL_CHECK("foreign exception: " << e.what());
      }
    }
  }
}

TEST_CASE("fuzz regression inputs replay without crash or foreign exception") {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(GPUPOOL_SOURCE_DIR) / "tests" / "fuzz_regressions";
  if (!fs::exists(root)) return;
  const std::map<std::string, std::function<void(const std::string&)>> parsers = {
      {"quantity", [](const std::string& t) { (void)Quantity::parse(Quantity::parse(t).to_string()); }},
      {"taint", [](const std::string& t) { (void)parse_taint_change(t); }},
      {"toleration", [](const std::string& t) { (void)parse_toleration(t); }},
      {"image", [](const std::string& t) { (void)ImageRef::parse(ImageRef::parse(t).to_string()); }},
      {"profile", [](const std::string& t) { (void)Profile::parse(t); }},
  };
  for (const auto& [name, parse] : parsers) {
    if (!fs::exists(root / name)) continue;
    for (const auto& entry : fs::directory_iterator(root / name)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      CAPTURE(entry.path().string());
      try {
        parse(ss.str());
      } catch (const gpupool::Error&) {
      } catch (const std::exception& e) {
        FAIL_CHECK("foreign exception: " << e.what());
      }
    }
  }
}
