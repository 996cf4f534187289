// What the facade's results look like: the seed's `arena get` and `kubectl get nodes` layouts as
// text, and the same tables as HTML for notebooks.
#include "cluster/impl.hpp"
#include "cluster/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace gpupool {

using namespace detail;

std::string_view to_string(JobStatus status) noexcept {
  switch (status) {
    case JobStatus::Pending:
      return "PENDING";
    case JobStatus::Running:
      return "RUNNING";
    case JobStatus::Succeeded:
      return "SUCCEEDED";
    case JobStatus::Failed:
      return "FAILED";
    case JobStatus::Unknown:
      break;
  }
  return "UNKNOWN";
}

std::string JobInfo::trainer() const {
  std::string kind(gpupool::to_string(this->kind));
  for (char& c : kind) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return kind;
}

std::chrono::seconds JobInfo::training_duration() const {
  auto from = started.value_or(created);
  auto to = finished.value_or(observed);
  if (to < from) return std::chrono::seconds(0);
  return std::chrono::duration_cast<std::chrono::seconds>(to - from);
}

namespace {

std::vector<std::vector<std::string>> instance_rows(const JobInfo& j) {
  std::vector<std::vector<std::string>> rows{{"NAME", "STATUS", "TRAINER", "AGE", "INSTANCE", "NODE"}};
  std::string age = human_duration(j.observed - j.created);
  std::string status(to_string(j.status));
  for (const auto& i : j.instances)
    rows.push_back({j.name, status, j.trainer(), age, i.name, i.node_ip.empty() ? "N/A" : i.node_ip});
  if (j.instances.empty()) rows.push_back({j.name, status, j.trainer(), age, "N/A", "N/A"});
  return rows;
}

}  // namespace

std::string JobInfo::to_text() const {
  std::string out = fmt::format("STATUS: {}\nNAMESPACE: {}\nPRIORITY: {}\n", to_string(status), namespace_, priority);
  if (queue) out += fmt::format("QUEUE: {} ({})\n", queue->queue, queue->summary());
  out += fmt::format("TRAINING DURATION: {}\n\n", human_duration(training_duration()));
  out += format_table(instance_rows(*this), 2);
  if (tensorboard_url) out += fmt::format("\nYour tensorboard will be available on:\n{}\n", *tensorboard_url);
  if (!notes.empty()) out += "\n";
  for (const auto& n : notes) out += "NOTE: " + n + "\n";
  return out;
}

std::string JobInfo::progress_text() const {
  const auto running =
      std::count_if(instances.begin(), instances.end(), [](const Instance& i) { return i.phase == "Running"; });
  return fmt::format("{}: {} ({}/{} instances running)", name, to_string(status), running, instances.size());
}

boost::json::object JobInfo::to_json() const {
  boost::json::object o;
  o["name"] = name;
  o["namespace"] = namespace_;
  o["status"] = to_string(status);
  o["trainer"] = trainer();
  o["priority"] = priority;
  o["trainingDuration"] = human_duration(training_duration());
  boost::json::array items;
  for (const auto& i : instances)
    items.push_back(boost::json::object{{"name", i.name}, {"phase", i.phase}, {"node", i.node}, {"nodeIP", i.node_ip}});
  o["instances"] = std::move(items);
  if (tensorboard_url) o["tensorboard"] = *tensorboard_url;
  if (queue)
    o["queue"] = boost::json::object{{"name", queue->queue},
                                     {"workload", queue->workload},
                                     {"state", queue->state},
                                     {"position", queue->position},
                                     {"reason", queue->reason}};
  if (!notes.empty()) {
    boost::json::array lines;
    for (const auto& n : notes) lines.push_back(boost::json::string(n));
    o["notes"] = std::move(lines);
  }
  return o;
}

std::string JobInfo::to_html() const {
  std::string out = fmt::format(
      "<div class=\"gpupool-job\"><p><b>STATUS:</b> {} &nbsp; <b>NAMESPACE:</b> {} &nbsp; <b>PRIORITY:</b> {} &nbsp; "
      "<b>TRAINING DURATION:</b> {}</p>\n",
      to_string(status), html_escape(namespace_), html_escape(priority), human_duration(training_duration()));
  out += html_table(instance_rows(*this));
  if (tensorboard_url)
    out += fmt::format("<p>TensorBoard: <a href=\"{0}\">{0}</a></p>\n", html_escape(*tensorboard_url));
  for (const auto& n : notes) out += "<p><b>NOTE:</b> " + html_escape(n) + "</p>\n";
  return out + "</div>\n";
}

std::string jobs_to_text(const std::vector<JobInfo>& jobs, bool with_namespace) {
  std::vector<std::vector<std::string>> rows{{"NAME", "STATUS", "TRAINER", "AGE", "NODE"}};
  if (with_namespace) rows.front().insert(rows.front().begin(), "NAMESPACE");
  for (const auto& j : jobs) {
    std::string node = j.instances.empty() || j.instances.front().node_ip.empty() ? "N/A" : j.instances.front().node_ip;
    rows.push_back(
        {j.name, std::string(to_string(j.status)), j.trainer(), human_duration(j.observed - j.created), node});
    if (with_namespace) rows.back().insert(rows.back().begin(), j.namespace_);
  }
  return format_table(rows, 2);
}

std::string top_jobs_to_text(const std::vector<JobInfo>& jobs) {
  std::vector<std::vector<std::string>> rows{
      {"NAME", "STATUS", "TRAINER", "AGE", "GPU(Requested)", "GPU(Allocated)", "NODE"}};
  std::int64_t requested = 0, allocated = 0;
  for (const auto& j : jobs) {
    if (j.status == JobStatus::Running) {
      requested += j.gpus_requested;
      allocated += j.gpus_allocated;
    }
    std::string node = j.instances.empty() || j.instances.front().node_ip.empty() ? "N/A" : j.instances.front().node_ip;
    rows.push_back({j.name, std::string(to_string(j.status)), j.trainer(), human_duration(j.observed - j.created),
                    std::to_string(j.gpus_requested), std::to_string(j.gpus_allocated), node});
  }
  return format_table(rows, 2) +
         fmt::format("\nTotal Allocated/Requested GPUs of Training Jobs: {}/{}\n", allocated, requested);
}

namespace {

std::vector<std::vector<std::string>> node_rows(const NodeList& l, bool wide) {
  std::vector<std::vector<std::string>> rows;
  if (wide)
    rows.push_back({"NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "GPUS", "TAINTS"});
  else
    rows.push_back({"NAME", "STATUS", "ROLES", "AGE", "VERSION"});
  for (const auto& r : l.rows) {
    std::vector<std::string> row{r.node.name, r.node.status, r.node.roles, r.node.age(l.observed),
                                 r.node.kubelet_version};
    if (wide) {
      row.push_back(r.node.internal_ip.empty() ? "<none>" : r.node.internal_ip);
      row.push_back(fmt::format("{}/{}", r.gpus_allocated, r.gpus_total));
      row.push_back(r.node.taints_column());
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

std::string NodeList::to_text(bool wide) const { return format_table(node_rows(*this, wide), 3); }

std::string NodeList::to_top_text() const {
  std::vector<std::vector<std::string>> rows{{"NAME", "IPADDRESS", "ROLE", "STATUS", "GPU(Total)", "GPU(Allocated)"}};
  std::int64_t total = 0, allocated = 0;
  for (const auto& r : this->rows) {
    rows.push_back({r.node.name, r.node.internal_ip, r.node.roles, r.node.status, std::to_string(r.gpus_total),
                    std::to_string(r.gpus_allocated)});
    total += r.gpus_total;
    allocated += r.gpus_allocated;
  }
  std::string out = format_table(rows, 2);
  out += "-----------------------------------------------------------------------------------------\n";
  double pct = total ? 100.0 * static_cast<double>(allocated) / static_cast<double>(total) : 0.0;
  out += fmt::format("Allocated/Total GPUs In Cluster:\n{}/{} ({:.0f}%)\n", allocated, total, pct);
  if (allocation_from_own_namespace_only)
    out += "(allocation counts only this namespace's pods: listing pods in other namespaces is forbidden)\n";
  return out;
}

std::string NodeList::to_html() const {
  return "<div class=\"gpupool-nodes\">\n" + html_table(node_rows(*this, true)) + "</div>\n";
}

std::string pvcs_to_text(const std::vector<PvcInfo>& pvcs, std::chrono::system_clock::time_point now) {
  std::vector<std::vector<std::string>> rows{
      {"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"}};
  for (const auto& p : pvcs)
    rows.push_back(
        {p.name, p.status, p.volume, p.capacity, p.access_modes, p.storage_class, human_duration(now - p.created)});
  return format_table(rows, 3);
}

namespace {
std::vector<std::vector<std::string>> catalog_rows(const ImageCatalog& catalog) {
  std::vector<std::vector<std::string>> rows{{"IMAGE", "TAGS", "GPU", "CUDA", "FRAMEWORK", "NOTES"}};
  for (const auto& i : catalog.images) {
    std::string tags;
    for (const auto& t : i.tags) tags += (tags.empty() ? "" : ",") + t;
    rows.push_back({catalog.prefix.empty() ? i.name : catalog.prefix + "/" + i.name, tags, i.gpu ? "yes" : "no",
                    i.cuda.empty() ? "-" : i.cuda, i.framework.empty() ? "-" : i.framework, i.notes});
  }
  return rows;
}
}  // namespace

std::string catalog_to_text(const ImageCatalog& catalog) {
  if (catalog.images.empty()) return "the profile has no image catalog: give full image references\n";
  return format_table(catalog_rows(catalog), 2);
}
std::string catalog_to_html(const ImageCatalog& catalog) { return html_table(catalog_rows(catalog)); }

namespace {
std::vector<std::vector<std::string>> verdict_rows(const PodExplanation& p) {
  std::vector<std::vector<std::string>> rows{{"NODE", "FITS", "WHY NOT"}};
  for (const auto& v : p.nodes) {
    std::string why;
    for (const auto& r : v.reasons) why += (why.empty() ? "" : "; ") + r;
    rows.push_back({v.node, v.fits ? "yes" : "no", why.empty() ? "-" : why});
  }
  return rows;
}
}  // namespace

std::string Explanation::to_text() const {
  std::string out;
  for (const auto& p : pods) {
    out += fmt::format("{} {}{}\n", p.pod, p.phase.empty() ? "(not submitted)" : p.phase,
                       p.node.empty() ? "" : " on " + p.node);
    for (const auto& e : p.events) out += "  event: " + e + "\n";
    if (!p.quota.empty()) out += "  quota: " + p.quota + "\n";
    std::string table = format_table(verdict_rows(p), 3);
    for (size_t start = 0; start < table.size();) {
      auto end = table.find('\n', start);
      out += "  " + table.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  for (const auto& n : notes) out += "NOTE: " + n + "\n";
  if (pods.empty() && notes.empty()) out = fmt::format("{}: no pods to explain\n", name);
  return out;
}

std::string Explanation::to_html() const {
  std::string out = "<div class=\"gpupool-explain\">\n";
  for (const auto& p : pods) {
    out += fmt::format("<p><b>{}</b> {}{}</p>\n", html_escape(p.pod),
                       html_escape(p.phase.empty() ? "(not submitted)" : p.phase),
                       p.node.empty() ? "" : " on " + html_escape(p.node));
    for (const auto& e : p.events) out += "<p>event: " + html_escape(e) + "</p>\n";
    if (!p.quota.empty()) out += "<p>quota: " + html_escape(p.quota) + "</p>\n";
    out += html_table(verdict_rows(p));
  }
  for (const auto& n : notes) out += "<p><b>NOTE:</b> " + html_escape(n) + "</p>\n";
  return out + "</div>\n";
}

}  // namespace gpupool
