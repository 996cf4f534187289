#include "args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace gpupool::cli {

bool ParsedArgs::has(const std::string& flag) const { return values_.count(flag) > 0; }

std::string ParsedArgs::get(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() || it->second.empty() ? fallback : it->second.back();
}

std::optional<std::string> ParsedArgs::optional(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

const std::vector<std::string>& ParsedArgs::all(const std::string& flag) const {
  static const std::vector<std::string> none;
  auto it = values_.find(flag);
  return it == values_.end() ? none : it->second;
}

Parser::Parser(std::string program, std::vector<FlagSpec> global_flags)
    : program_(std::move(program)), global_(std::move(global_flags)) {}

namespace {
const FlagSpec* find_flag(const std::vector<const FlagSpec*>& flags, const std::string& name, char short_name) {
  for (const auto* f : flags)
    if ((!name.empty() && f->name == name) || (short_name && f->short_name == short_name)) return f;
  return nullptr;
}
}  // namespace

ParsedArgs Parser::parse(const CommandSpec& spec, const std::vector<std::string>& args) const {
  std::vector<const FlagSpec*> flags;
  for (const auto& f : spec.flags) flags.push_back(&f);
  for (const auto& f : global_) flags.push_back(&f);

  ParsedArgs out;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a == "-" || a.size() < 2 || a[0] != '-') {
      out.positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    const FlagSpec* flag = nullptr;
    std::optional<std::string> inline_value;
    std::string shown;
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      shown = "--" + name;
      flag = find_flag(flags, name, 0);
    } else {
      shown = a.substr(0, 2);
      flag = find_flag(flags, "", a[1]);
      if (a.size() > 2) inline_value = a.substr(a[2] == '=' ? 3 : 2);
    }
    if (!flag)
      throw UsageError(fmt::format("unknown flag {} for \"{} {}\"; see \"{} {} --help\"", shown, program_, spec.path,
                                   program_, spec.path));
    auto& slot = out.values_[flag->name];
    if (!flag->repeatable && !slot.empty()) throw UsageError(fmt::format("flag --{} given more than once", flag->name));
    if (flag->value_name.empty()) {
      const auto& values = flag->switch_values;
      if (inline_value && *inline_value != "false" &&
          std::find(values.begin(), values.end(), *inline_value) != values.end()) {
        slot.push_back(*inline_value);
        continue;
      }
      if (inline_value && *inline_value != "true" && *inline_value != "false") {
        std::string allowed;
        for (const auto& v : values) allowed += "=" + v + " / ";
        throw UsageError(fmt::format("flag --{} takes no value (or {}=true / =false), got \"{}\"", flag->name, allowed,
                                     *inline_value));
      }
      if (inline_value && *inline_value == "false")
        out.values_.erase(flag->name);
      else
        slot.push_back("true");
      continue;
    }
    if (inline_value) {
      slot.push_back(*inline_value);
    } else {
      if (i + 1 >= args.size())
        throw UsageError(fmt::format("flag --{} needs a value: --{} {}", flag->name, flag->name, flag->value_name));
      slot.push_back(args[++i]);
    }
  }
  int n = static_cast<int>(out.positionals_.size());
  if (n < spec.min_positionals)
    throw UsageError(fmt::format("\"{} {}\" needs {}; usage: {} {} {}", program_, spec.path,
                                 spec.usage.empty() ? "more arguments" : spec.usage, program_, spec.path, spec.usage));
  if (spec.max_positionals >= 0 && n > spec.max_positionals)
    throw UsageError(fmt::format("\"{} {}\" takes {} argument(s), got {} (\"{}\"); usage: {} {} {}", program_,
                                 spec.path, spec.max_positionals, n, out.positionals_.back(), program_, spec.path,
                                 spec.usage));
  return out;
}

std::string Parser::help(const CommandSpec& spec) const {
  std::string out = fmt::format("{}\n\nUsage:\n  {} {}{}{}\n", spec.summary, program_, spec.path,
                                spec.flags.empty() ? "" : " [flags]", spec.usage.empty() ? "" : " " + spec.usage);
  if (!spec.description.empty()) out += "\n" + spec.description + "\n";
  auto section = [&](const char* title, const std::vector<FlagSpec>& all) {
    std::vector<FlagSpec> flags;
    std::copy_if(all.begin(), all.end(), std::back_inserter(flags), [](const FlagSpec& f) { return !f.hidden; });
    if (flags.empty()) return;
    out += fmt::format("\n{}:\n", title);
    size_t width = 0;
    std::vector<std::string> lefts;
    for (const auto& f : flags) {
      std::string left =
          f.short_name ? fmt::format("-{}, --{}", f.short_name, f.name) : fmt::format("    --{}", f.name);
      if (!f.value_name.empty()) left += " " + f.value_name;
      for (size_t v = 0; v < f.switch_values.size(); ++v) left += (v ? "|" : "[=") + f.switch_values[v];
      if (!f.switch_values.empty()) left += "]";
      width = std::max(width, left.size());
      lefts.push_back(std::move(left));
    }
    for (size_t i = 0; i < flags.size(); ++i)
      out +=
          fmt::format("  {:<{}}  {}{}\n", lefts[i], width, flags[i].help, flags[i].repeatable ? " (repeatable)" : "");
  };
  section("Flags", spec.flags);
  section("Global flags", global_);
  return out;
}

}  // namespace gpupool::cli
