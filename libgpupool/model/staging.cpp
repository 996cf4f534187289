#include "gpupool/staging.hpp"

#include "gpupool/error.hpp"

#include <fmt/format.h>

namespace gpupool {

void validate(const SsdStaging& s, std::string_view field) {
  auto absolute = [&](const std::string& path, std::string_view member, bool required) {
    if (path.empty() && !required) return;
    if (path.empty() || path.front() != '/')
      throw ValidationError(fmt::format("{}.{}", field, member), path, "must be an absolute path (start with '/')");
  };
  absolute(s.source, "source", true);
  absolute(s.cache, "cache", true);
  absolute(s.results, "results", false);
  absolute(s.results_target, "results_target", false);
  if (s.results.empty() != s.results_target.empty())
    throw ValidationError(fmt::format("{}.{}", field, s.results.empty() ? "results" : "results_target"), "",
                          "results and results_target go together: set both to copy results back, or neither");
}

std::string shell_quote(std::string_view text) {
  // Inside '...' nothing is special except ' itself, which is written as '\''.
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += "'";
  return out;
}

std::string copy_tree_command(std::string_view from, std::string_view to) {
  std::string src = shell_quote(from), dst = shell_quote(to);
  std::string src_slash = shell_quote(std::string(from) + "/"), dst_slash = shell_quote(std::string(to) + "/");
  std::string src_dot = shell_quote(std::string(from) + "/.");
  return fmt::format(
      "mkdir -p {dst} && if command -v rsync >/dev/null 2>&1; then rsync -a {src_slash} {dst_slash}; "
      "else cp -a {src_dot} {dst}; fi",
      fmt::arg("dst", dst), fmt::arg("src_slash", src_slash), fmt::arg("dst_slash", dst_slash),
      fmt::arg("src_dot", src_dot));
}

std::string stage_in_script(const SsdStaging& s) {
  return fmt::format("set -e\necho 'gpupool: staging data into the SSD cache' >&2\n{}\n",
                     copy_tree_command(s.source, s.cache));
}

std::string run_script(const SsdStaging& s) {
  std::string script = "\"$@\"\nstatus=$?\n";
  if (!s.results.empty()) {
    script += "echo 'gpupool: copying results back' >&2\n";
    script += fmt::format("if ! ( {} ); then\n  echo 'gpupool: copying results back failed' >&2\n", copy_tree_command(s.results, s.results_target));
    script += "  if [ \"$status\" -eq 0 ]; then status=1; fi\nfi\n";
  }
  script += "exit \"$status\"\n";
  return script;
}

std::vector<std::string> staged_command(const SsdStaging& s, const std::vector<std::string>& argv) {
  std::vector<std::string> out{"sh", "-c", run_script(s), "gpupool-staging"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace gpupool
