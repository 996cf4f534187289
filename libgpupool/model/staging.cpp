#include "gpupool/staging.hpp"

#include "gpupool/error.hpp"

#include <fmt/format.h>

namespace gpupool {

void validate(const SsdStaging& s, std::string_view field) {
  auto absolute = [&](const std::string& path, const std::string& member, bool required) {
    if (path.empty() && !required) return;
    if (path.empty() || path.front() != '/')
      throw ValidationError(fmt::format("{}.{}", field, member), path, "must be an absolute path (start with '/')");
  };
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    absolute(s.inputs[i].source, fmt::format("inputs[{}].source", i), true);
    absolute(s.inputs[i].cache, fmt::format("inputs[{}].cache", i), true);
  }
  absolute(s.results, "results", false);
  absolute(s.results_target, "results_target", false);
  if (s.results.empty() != s.results_target.empty())
    throw ValidationError(fmt::format("{}.{}", field, s.results.empty() ? "results" : "results_target"), "",
                          "results and results_target go together: set both to copy results back, or neither");
  if (s.inputs.empty() && s.results.empty())
    throw ValidationError(std::string(field), "", "nothing to stage: give inputs to copy in, or results to copy back");
  if (s.grace_period_seconds < kMinStageOutGraceSeconds)
    throw ValidationError(fmt::format("{}.grace_period_seconds", field), std::to_string(s.grace_period_seconds),
                          fmt::format("must be at least {} seconds: after SIGTERM, half of it lets the command stop "
                                      "and half copies the results back",
                                      kMinStageOutGraceSeconds));
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
  std::string script = "set -e\n";
  for (const auto& in : s.inputs) {
    script += fmt::format("printf 'gpupool: staging %s into the SSD cache %s\\n' {} {} >&2\n", shell_quote(in.source),
                          shell_quote(in.cache));
    script += copy_tree_command(in.source, in.cache) + "\n";
  }
  return script;
}

std::string run_script(const SsdStaging& s) {
  if (s.results.empty()) return "\"$@\"\n";  // nothing to copy back: the script only runs the command
  // The kubelet sends SIGTERM to PID 1 (this shell), then SIGKILL to every process of the container
  // after terminationGracePeriodSeconds. The command runs in the background so that the trap runs
  // at once (a shell runs traps only between commands); `wait` returns early (status > 128) when
  // the trap runs, and is called again for the command's own status. stdin is passed on (an
  // asynchronous command's stdin is /dev/null otherwise).
  const std::int64_t stop_seconds = s.grace_period_seconds / 2;
  std::string script = fmt::format(
      "term=0 woke=0 pid= watchdog=\n"
      "stop() {{\n"
      "  echo 'gpupool: SIGTERM: stopping the command (SIGKILL after {stop}s), then copying results back' >&2\n"
      "  kill -TERM \"$pid\" 2>/dev/null\n"
      "  ( trap 'kill \"$s\" 2>/dev/null; exit 0' TERM\n"
      "    sleep {stop} & s=$!\n"
      "    wait \"$s\" && kill -KILL \"$pid\" ) </dev/null >/dev/null 2>&1 &\n"
      "  watchdog=$!\n"
      "}}\n"
      "on_term() {{\n"
      "  woke=1\n"
      "  if [ \"$term\" = 0 ]; then term=1; if [ -n \"$pid\" ]; then stop; fi; fi\n"
      "}}\n"
      "trap on_term TERM\n"
      "{{ command exec 3<&0; }} 2>/dev/null || exec 3</dev/null  # (stdin may be closed)\n"
      "\"$@\" <&3 3<&- &\n"
      "pid=$!\n"
      "exec 3<&-\n"
      "if [ \"$term\" = 1 ]; then stop; fi\n"
      "wait \"$pid\"; status=$?\n"
      "while [ \"$woke\" = 1 ]; do\n"
      "  woke=0\n"
      "  wait \"$pid\"; again=$?\n"
      "  if [ \"$again\" -ne 127 ]; then status=$again; fi  # 127: the status was collected already\n"
      "done\n"
      "if [ -n \"$watchdog\" ]; then kill \"$watchdog\" 2>/dev/null; fi\n"
      "trap '' TERM\n"
      "if [ \"$term\" = 1 ]; then reason='the pod is being terminated'; else reason='the command exited'; fi\n"
      "printf 'gpupool: %s (status %s): copying results back from %s to %s\\n' \"$reason\" \"$status\" {results} "
      "{target} >&2\n"
      "if ( {copy} ); then\n"
      "  printf 'gpupool: results copied back to %s\\n' {target} >&2\n"
      "else\n"
      "  printf 'gpupool: copying results back to %s failed\\n' {target} >&2\n"
      "  if [ \"$status\" -eq 0 ]; then status=1; fi\n"
      "fi\n"
      "exit \"$status\"\n",
      fmt::arg("stop", stop_seconds), fmt::arg("results", shell_quote(s.results)),
      fmt::arg("target", shell_quote(s.results_target)),
      fmt::arg("copy", copy_tree_command(s.results, s.results_target)));
  return script;
}

std::vector<std::string> staged_command(const SsdStaging& s, const std::vector<std::string>& argv) {
  std::vector<std::string> out{"sh", "-c", run_script(s), "gpupool-staging"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace gpupool
