// gpupool's client-side checks give the verdict kube-apiserver v1.32 gives, no stricter and no more
// lenient (issue #20): each row is a value gpupool checks before sending, and the fidelity scenario
// `badinput` holds the real server's answer to the same value (tests/fidelity/golden/badinput.txt,
// recorded from ../shared/oracle). The row names the object whose creation the golden records.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/workload.hpp"

#include <fstream>
#include <functional>
#include <sstream>

using namespace gpupool;

namespace {

std::string golden() {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/fidelity/golden/badinput.txt");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the real server did with the object: "accepted" when the golden shows `<kind>/<name> created`,
// "refused" when an error names it, "" when the golden does not mention it.
std::string real_verdict(const std::string& text, const std::string& kind, const std::string& name) {
  if (text.find("\n" + kind + "/" + name + " created\n") != std::string::npos) return "accepted";
  if (text.find("\"" + name + "\" is invalid") != std::string::npos) return "refused";
  return "";
}

Workload pod_with(const std::function<void(Workload&)>& change) {
  Workload w;
  w.name = "checks";
  w.kind = WorkloadKind::Pod;
  w.image = "busybox";
  change(w);
  return w;
}

std::string client_verdict(const Workload& w) {
  try {
    render(w, Profile::builtin("generic"));
    return "accepted";
  } catch (const ValidationError&) {
    return "refused";
  }
}

}  // namespace

TEST_CASE("client-side checks agree with kube-apiserver's recorded verdicts (badinput golden)") {
  const std::string text = golden();
  REQUIRE_FALSE(text.empty());
  struct Row {
    const char* what;
    const char* kind;
    const char* name;  // the object of the golden step
    std::function<void(Workload&)> change;
  };
  const Row rows[] = {
      {"env name outside printable ASCII", "pod", "env",
       [](Workload& w) {
         w.env = {{"é", "1", ""}};
       }},
      {"env name starting with a digit", "pod", "envok",
       [](Workload& w) {
         w.env = {{"1X", "1", ""}};
       }},
      {"env name with a space", "pod", "envok",
       [](Workload& w) {
         w.env = {{"A B", "2", ""}};
       }},
      {"relative working directory", "pod", "envok", [](Workload& w) { w.working_dir = "relative/dir"; }},
      {"storage class that is no DNS subdomain", "persistentvolumeclaim", "badclass",
       [](Workload& w) {
         PvcRequest p;
         p.name = "v";
         p.storage_class = "Bad_Class";
         w.pvcs = {p};
       }},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    const std::string real = real_verdict(text, row.kind, row.name);
    REQUIRE_MESSAGE(!real.empty(), "the golden has no answer for " << row.kind << "/" << row.name);
    CHECK(client_verdict(pod_with(row.change)) == real);
  }
}
