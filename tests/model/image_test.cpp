#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/image.hpp"
#include "model/image_grammar.hpp"

#include <random>
#include <regex>
#include <string>
#include <vector>

using gpupool::ImageCatalog;
using gpupool::ImageRef;
using gpupool::ValidationError;

namespace {
const std::string kSha = "sha256:" + std::string(64, 'a');
}

TEST_CASE("ImageRef::parse splits domain, path, tag and digest and applies Docker Hub defaults") {
  struct Row {
    std::string text, domain, path, tag, digest, normalized;
  };
  const Row rows[] = {
      {"ubuntu", "", "ubuntu", "", "", "docker.io/library/ubuntu:latest"},
      {"ubuntu:20.04", "", "ubuntu", "20.04", "", "docker.io/library/ubuntu:20.04"},
      {"tensorflow/tensorflow:2.3.0-gpu", "", "tensorflow/tensorflow", "2.3.0-gpu", "",
       "docker.io/tensorflow/tensorflow:2.3.0-gpu"},
      {"docker.io/ubuntu", "docker.io", "ubuntu", "", "", "docker.io/library/ubuntu:latest"},
      {"index.docker.io/library/ubuntu:1", "index.docker.io", "library/ubuntu", "1", "", "docker.io/library/ubuntu:1"},
      {"harbor.iiis.co/library/ubuntu-pytorch:1.5.0", "harbor.iiis.co", "library/ubuntu-pytorch", "1.5.0", "",
       "harbor.iiis.co/library/ubuntu-pytorch:1.5.0"},
      {"172.16.112.220:30006/library/orion-client:2.8.2-tf1.15.3", "172.16.112.220:30006", "library/orion-client",
       "2.8.2-tf1.15.3", "", "172.16.112.220:30006/library/orion-client:2.8.2-tf1.15.3"},
      {"localhost/app", "localhost", "app", "", "", "localhost/app:latest"},
      {"localhost:5000/a/b__c.d-e", "localhost:5000", "a/b__c.d-e", "", "", "localhost:5000/a/b__c.d-e:latest"},
      {"registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5",
       "registry.cn-hangzhou.aliyuncs.com", "tensorflow-samples/horovod", "0.13.11-tf1.10.0-torch0.4.0-py3.5", "",
       "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5"},
      {"ubuntu@" + kSha, "", "ubuntu", "", kSha, "docker.io/library/ubuntu@" + kSha},
      {"ubuntu:1@" + kSha, "", "ubuntu", "1", kSha, "docker.io/library/ubuntu:1@" + kSha},
      {"[::1]:5000/app:v1", "[::1]:5000", "app", "v1", "", "[::1]:5000/app:v1"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    ImageRef ref = ImageRef::parse(r.text);
    CHECK(ref.domain == r.domain);
    CHECK(ref.path == r.path);
    CHECK(ref.tag == r.tag);
    CHECK(ref.digest == r.digest);
    CHECK(ref.normalized() == r.normalized);
    CHECK(ref.to_string() == r.text);
  }
}

TEST_CASE("ImageRef::parse rejects malformed references, naming the rule") {
  struct Row {
    std::string text, rule_part;
  };
  const Row rows[] = {
      {"", "must not be empty"},
      {"ubuntu 20.04", "whitespace"},
      {"team/App", "lowercase"},
      {"ubuntu:", "tag \"\""},
      {"ubuntu:-x", "tag \"-x\""},
      {"ubuntu:" + std::string(129, 'a'), "1 to 128"},
      {"ubuntu@sha256:abc", "digest"},
      {"ubuntu@sha256:" + std::string(64, 'A'), "64 lowercase hex"},
      {"ubuntu@sha256:" + std::string(63, 'a'), "64 lowercase hex"},
      {":tag", "repository name is missing"},
      {"a//b", "path component \"\""},
      {"a/-b", "path component \"-b\""},
      {"a/b_", "path component \"b_\""},
      {"a/b___c", "path component \"b___c\""},
      {"exa mple.com/x", "whitespace"},
      {"-bad.com/x", "registry \"-bad.com\""},
      {std::string(64, 'f'), "64-character hexadecimal"},
      {"example.com/" + std::string(250, 'a'), "255 characters"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    try {
      (void)ImageRef::parse(r.text, "spec.image");
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == "spec.image");
      CHECK(e.value() == r.text);
      CHECK(std::string(e.what()).find(r.rule_part) != std::string::npos);
    }
  }
}

TEST_CASE("ImageRef: a single upper-case component is read as a registry and then rejected by the path rule") {
  // "Ubuntu" has no slash, so it is a path; paths are lowercase.
  CHECK_THROWS_WITH_AS((void)ImageRef::parse("Ubuntu"), doctest::Contains("lowercase"), ValidationError);
}

TEST_CASE("ImageCatalog::resolve expands shorthand, checks tags and passes other images through") {
  ImageCatalog catalog{"harbor.iiis.co/library",
                       {{"ubuntu-pytorch", {"1.5.0"}, true, "10.1", "pytorch 1.5.0", ""},
                        {"ubuntu-tensorflow", {"1.14.1", "2.3.0"}, true, "10.1", "tensorflow", ""}}};
  struct Row {
    std::string text, resolved;
  };
  const Row rows[] = {
      {"ubuntu-pytorch:1.5.0", "harbor.iiis.co/library/ubuntu-pytorch:1.5.0"},
      {"ubuntu-tensorflow:1.14.1", "harbor.iiis.co/library/ubuntu-tensorflow:1.14.1"},
      {"harbor.iiis.co/library/ubuntu-tensorflow:2.3.0", "harbor.iiis.co/library/ubuntu-tensorflow:2.3.0"},
      {"ubuntu-pytorch@" + kSha, "harbor.iiis.co/library/ubuntu-pytorch@" + kSha},
      {"ubuntu:20.04", "ubuntu:20.04"},
      {"docker.io/library/ubuntu-pytorch:9", "docker.io/library/ubuntu-pytorch:9"},
      {"harbor.iiis.co/library/custom:1", "harbor.iiis.co/library/custom:1"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(catalog.resolve(r.text) == r.resolved);
  }
  REQUIRE(catalog.find("ubuntu-pytorch") != nullptr);
  CHECK(catalog.find("ubuntu-pytorch")->cuda == "10.1");
  CHECK(catalog.find("nope") == nullptr);
}

TEST_CASE("ImageCatalog::resolve rejects unknown tags of catalogued images, listing the existing tags") {
  ImageCatalog catalog{"harbor.iiis.co/library", {{"ubuntu-tensorflow", {"1.14.1", "2.3.0"}, true, "10.1", "", ""}}};
  struct Row {
    std::string text, message_part;
  };
  const Row rows[] = {
      {"ubuntu-tensorflow:2.4.0", "has no tag \"2.4.0\"; available tags: 1.14.1, 2.3.0"},
      {"ubuntu-tensorflow", "needs a tag; available tags: 1.14.1, 2.3.0"},
      {"harbor.iiis.co/library/ubuntu-tensorflow:1.15", "has no tag \"1.15\""},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK_THROWS_WITH_AS((void)catalog.resolve(r.text, "image"), doctest::Contains(r.message_part.c_str()),
                         ValidationError);
  }
}

TEST_CASE("image grammar: the hand-written matchers accept exactly what distribution/reference's expressions do") {
  // regexp.go's expressions, anchored as ImageRef::parse applies them (the whole part must match).
  const std::regex path_component("[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*");
  const std::regex domain(
      "(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))"
      "*"
      "|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?");
  const std::regex tag("[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
  const std::regex digest("[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}");
  struct Part {
    const char* name;
    const std::regex& re;
    bool (*match)(std::string_view);
    std::vector<std::string> tokens;  // runs the rule accepts, its separators, and characters it refuses
    std::size_t max_tokens;
  };
  const std::string hex32(32, 'f');
  const Part parts[] = {
      {"path component",
       path_component,
       gpupool::image_grammar::path_component,
       {"a", "z9", "0", ".", "_", "__", "___", "-", "--", "._", "A", "/", "@"},
       6},
      {"domain",
       domain,
       gpupool::image_grammar::domain,
       {"a", "Z9", "-", "--", ".", "..", ":", ":80", "[", "]", "[::1]", "f:", "_"},
       6},
      {"tag", tag, gpupool::image_grammar::tag, {"a", "Z9", "_", ".", "-", ":", "/", std::string(60, 'v')}, 5},
      {"digest",
       digest,
       gpupool::image_grammar::digest,
       {"a", "Zb", "a9", "9", "-", "_", "+", ".", "++", ":", ":" + hex32, ":" + hex32, ":" + hex32.substr(1), "F0"},
       5},
  };
  std::mt19937 rng(20261126);
  for (const Part& p : parts) {
    const std::string name = p.name;
    CAPTURE(name);
    std::uniform_int_distribution<std::size_t> count(0, p.max_tokens), pick(0, p.tokens.size() - 1);
    int accepted = 0;
    for (int n = 0; n < 30000; ++n) {
      std::string s;
      for (std::size_t k = count(rng); k > 0; --k) s += p.tokens[pick(rng)];
      CAPTURE(s);
      const bool want = std::regex_match(s, p.re);
      REQUIRE(p.match(s) == want);
      accepted += want;
    }
    CHECK(accepted > 300);  // the strings reach the accepting side of each rule, not only the refusals
  }
  CHECK(gpupool::image_grammar::tag(std::string(128, 'a')));
  CHECK_FALSE(gpupool::image_grammar::tag(std::string(129, 'a')));
}
