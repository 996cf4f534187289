// The block-style YAML reader (common/block_yaml.hpp) against yaml-cpp, the reader it stands in
// for: on every document it takes, the same tree; on every document yaml-cpp refuses, nothing.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/block_yaml.hpp"

using gpupool::detail::load_block_yaml;

namespace {

/// The tree as text (yaml-cpp's aliases can make it cyclic: cut at a depth no kubeconfig has).
std::string describe(const YAML::Node& n, int depth = 0) {
  if (depth > 40) return "...";
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "~";
    case YAML::NodeType::Scalar:
      return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: {
      std::string s = "[";
      for (const auto& i : n) s += describe(i, depth + 1) + ",";
      return s + "]";
    }
    case YAML::NodeType::Map: {
      std::string s = "{";
      for (const auto& kv : n) s += describe(kv.first, depth + 1) + ":" + describe(kv.second, depth + 1) + ",";
      return s + "}";
    }
    default:
      return "?";
  }
}

/// "taken" when the fast reader took it (and agreed with yaml-cpp), "handed back" otherwise.
/// A disagreement fails the test case.
bool check_against_yaml_cpp(const std::string& text) {
  CAPTURE(text);
  const auto fast = load_block_yaml(text);
  if (!fast) return false;
  // Described only when taken: a document with aliases (never taken) can be a large graph.
  std::string reference;
  try {
    reference = describe(YAML::Load(text));
  } catch (const YAML::Exception&) {
    FAIL_CHECK("taken, but yaml-cpp refuses it");
    return true;
  }
  CHECK(describe(*fast) == reference);
  return true;
}

const std::vector<std::string> kScalars{"https://127.0.0.1:6443",
                                        "https://[::1]:6443",
                                        "kind-kind",
                                        "a,b",
                                        "x[1]",
                                        "{a}",
                                        "value # a comment",
                                        "'single'",
                                        "'it''s'",
                                        "'a: b'",
                                        "\"double\"",
                                        "\"a #b\"",
                                        "\"x\\ny\"",
                                        "null",
                                        "~",
                                        "Null",
                                        "NULL",
                                        "''",
                                        "\"\"",
                                        "true",
                                        "0123",
                                        "1.5",
                                        "a:b",
                                        "a: b",
                                        "-dash",
                                        "- dash",
                                        "?q",
                                        ": c",
                                        "[]",
                                        "{}",
                                        "[a]",
                                        "{a: b}",
                                        "#start",
                                        "@at",
                                        "`tick",
                                        "%pct",
                                        "!tag x",
                                        "&anchor x",
                                        "*alias",
                                        "|",
                                        ">",
                                        "über",
                                        "trailing   ",
                                        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=",
                                        "'unclosed",
                                        "\"unclosed",
                                        "a #b: c",
                                        "x:",
                                        "'q' tail",
                                        "\"q\"tail",
                                        "a\tb"};

const std::vector<std::string> kKeys{
    "server", "certificate-authority-data", "name", "'quoted key'", "\"dq key\"", "a b", "x:y", "~", "-k", "key ", "#k",
    "[k]"};

/// A kubeconfig-like document, from `rng`: mappings and sequences (aligned under their key or
/// indented), scalars and keys from the lists above, comments and blank lines.
std::string generate(std::mt19937& rng) {
  // Three picks in four from the first entries (what real kubeconfigs hold), so that most
  // documents are taken; the rest from anywhere in the list.
  auto pick = [&](const std::vector<std::string>& v) {
    return v[rng() % (rng() % 4 ? std::min<std::size_t>(v.size(), 8) : v.size())];
  };
  std::string out;
  const int top = 1 + static_cast<int>(rng() % 4);
  const int step = rng() % 4 == 0 ? 4 : 2;
  for (int t = 0; t < top; ++t) {
    if (rng() % 5 == 0) out += "# comment\n";
    if (rng() % 6 == 0) out += "\n";
    const std::string key = pick(kKeys) + (t ? std::to_string(t) : "");
    switch (rng() % 3) {
      case 0:
        out += key + ": " + pick(kScalars) + "\n";
        break;
      case 1: {  // a list of {name, body} entries, as kubeconfigs have
        out += key + ":\n";
        const std::string dash = std::string(rng() % 2 ? step : 0, ' ');
        const int n = static_cast<int>(rng() % 3);
        for (int i = 0; i < n; ++i) {
          const std::string in = dash + std::string(2, ' ');
          out += dash + "- cluster:\n";
          out += in + std::string(step, ' ') + "server: " + pick(kScalars) + "\n";
          if (rng() % 2) out += in + std::string(step, ' ') + pick(kKeys) + ": " + pick(kScalars) + "\n";
          out += in + "name: " + pick(kScalars) + "\n";
          if (rng() % 4 == 0) out += dash + "- " + pick(kScalars) + "\n";
        }
        if (n == 0) out += dash + "- " + pick(kScalars) + "\n";
        break;
      }
      default: {
        out += key + ":" + (rng() % 4 == 0 ? "   # note" : "") + "\n";
        out += std::string(step, ' ') + pick(kKeys) + ": " + pick(kScalars) + "\n";
        if (rng() % 2)
          out += std::string(step, ' ') + "args:\n" + std::string(step, ' ') + "- " + pick(kScalars) + "\n";
        if (rng() % 3 == 0) out += std::string(step, ' ') + "empty:\n";
      }
    }
  }
  return out;
}

/// `text` with one random edit: a character dropped, or one of YAML's indicators put in.
std::string mutate(std::string text, std::mt19937& rng) {
  if (text.empty()) return text;
  static const std::string inserts = ":#-'\" \n{}[],&*!|>?";
  const std::size_t at = rng() % text.size();
  if (rng() % 2)
    text.erase(at, 1);
  else
    text.insert(at, 1, inserts[rng() % inserts.size()]);
  return text;
}

}  // namespace

TEST_CASE("block YAML: kubeconfigs as kubectl and kind write them are read, as yaml-cpp reads them") {
  const std::string kubectl_style = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
    namespace: "team-a"
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args:
      - eks
      - get-token
      env: []
      provideClusterInfo: false
    token: 'abc''def'   # a comment
)";
  CHECK(check_against_yaml_cpp(kubectl_style));
  const std::string indented = "clusters:\n  - name: a\n    cluster:\n      server: https://x:1\n  - name: b\n";
  CHECK(check_against_yaml_cpp(indented));
  // Handed back: what the subset leaves out.
  for (const std::string text :
       {"", "# only a comment\n", "---\na: b\n", "a: &x b\nc: *x\n", "a: |\n  text\n", "a: [b, c]\n", "a: \"x\\ny\"\n",
        "a: b\n  continued\n", "a: b\na: c\n", "a:\tb\n", "a: b\r\n", "  a: b\n", "- - x\n", "plain\n", "~: v\n"})
    CHECK_FALSE(check_against_yaml_cpp(text));
}

TEST_CASE("block YAML: generated and mutated documents read as yaml-cpp reads them, or are handed back") {
  std::mt19937 rng(20261126);
  int taken = 0, handed_back = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string doc = generate(rng);
    (check_against_yaml_cpp(doc) ? taken : handed_back)++;
    for (int m = 0; m < 3; ++m) (check_against_yaml_cpp(mutate(doc, rng)) ? taken : handed_back)++;
  }
  // Both sides exercised: most plain documents are taken, many mutated ones handed back.
  CHECK(taken > 2000);
  CHECK(handed_back > 1000);
}

TEST_CASE("block YAML: the project's own kubeconfig and YAML files read as yaml-cpp reads them") {
  int taken = 0;
  for (const auto& dir : {GPUPOOL_SOURCE_DIR "/data", GPUPOOL_SOURCE_DIR "/tests", GPUPOOL_SOURCE_DIR "/examples"}) {
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      const auto ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".yaml" && ext != ".yml" && ext != ".kubeconfig")) continue;
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      if (check_against_yaml_cpp(ss.str())) ++taken;
    }
  }
  CHECK(taken > 0);
}
