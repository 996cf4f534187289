#include "kube/status.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>
#include <cctype>

namespace gpupool::kube {

std::optional<int> retry_after_seconds(const HttpResponse& response) {
  const std::string* h = response.header("Retry-After");
  if (!h || h->empty() || h->size() > 9) return std::nullopt;
  int v = 0;
  for (char c : *h) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<std::string> warning_texts(std::string_view v) {
  std::vector<std::string> out;
  auto skip_spaces = [&] {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  };
  for (;;) {
    skip_spaces();
    // warn-code: three digits; warn-agent: a token (the API server writes "-").
    if (v.size() < 4 || v.find_first_not_of("0123456789") != 3 || v[3] != ' ') return out;
    v.remove_prefix(4);
    const auto agent_end = v.find(' ');
    if (agent_end == 0 || agent_end == std::string_view::npos) return out;
    v.remove_prefix(agent_end + 1);
    if (v.empty() || v.front() != '"') return out;
    v.remove_prefix(1);
    std::string text;
    bool closed = false;
    while (!v.empty()) {
      char c = v.front();
      v.remove_prefix(1);
      if (c == '\\' && !v.empty()) {
        text += v.front();
        v.remove_prefix(1);
      } else if (c == '"') {
        closed = true;
        break;
      } else {
        text += c;
      }
    }
    if (!closed) return out;
    out.push_back(std::move(text));
    // An optional warn-date ("..."), then ',' before the next warning.
    skip_spaces();
    if (!v.empty() && v.front() == '"') {
      const auto end = v.find('"', 1);
      if (end == std::string_view::npos) return out;
      v.remove_prefix(end + 1);
      skip_spaces();
    }
    if (v.empty() || v.front() != ',') return out;
    v.remove_prefix(1);
  }
}

const char* reason_for_code(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return code >= 500 ? "InternalError" : "Unknown";
  }
}

namespace {

// Messages from apimachinery's errors.NewGenericServerResponse.
std::string generic_message(int code) {
  switch (code) {
    case 400:
      return "the server rejected our request for an unknown reason";
    case 401:
      return "the server has asked for the client to provide credentials";
    case 403:
      return "the server does not allow access to the requested resource";
    case 404:
      return "the server could not find the requested resource";
    case 405:
      return "the server does not allow this method on the requested resource";
    case 406:
      return "the server was unable to respond with a content type that the client supports";
    case 409:
      return "the server reported a conflict";
    case 410:
      return "the server has asked for the client to re-list: the requested resource version is gone";
    case 413:
      return "the server has rejected the request because the request body is too large";
    case 415:
      return "the server was unable to understand the content type of the request";
    case 422:
      return "the server rejected our request due to an error in our request";
    case 429:
      return "the server has received too many requests and has asked us to try again later";
    case 503:
      return "the server is currently unable to handle the request";
    case 504:
      return "the server was unable to return a response in the time allotted, but may still be processing the request";
    default:
      return code >= 500
                 ? "an error on the server has prevented the request from succeeding"
                 : fmt::format("the server responded with the status code {} but did not return more information",
                               code);
  }
}

std::string excerpt(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, 200)) out += std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
  if (body.size() > 200) out += "...";
  return out;
}

std::string str(const boost::json::object& o, const char* k) {
  const auto* p = o.if_contains(k);
  return p && p->is_string() ? std::string(p->as_string()) : std::string();
}

}  // namespace

ApiError decode_error(int http_status, std::string_view body, std::optional<int> retry_after) {
  boost::json::error_code ec;
  boost::json::value v = body.empty() ? boost::json::value() : boost::json::parse(body, ec);
  if (!ec && v.is_object() && str(v.as_object(), "kind") == "Status") {
    const auto& o = v.as_object();
    std::string reason = str(o, "reason");
    std::string message = str(o, "message");
    std::vector<StatusCause> causes;
    if (const auto* details = o.if_contains("details"); details && details->is_object()) {
      const auto& d = details->as_object();
      if (const auto* cs = d.if_contains("causes"); cs && cs->is_array()) {
        for (const auto& c : cs->as_array()) {
          if (!c.is_object()) continue;
          causes.push_back({str(c.as_object(), "reason"), str(c.as_object(), "message"), str(c.as_object(), "field")});
        }
      }
      if (!retry_after) {
        if (const auto* ra = d.if_contains("retryAfterSeconds"); ra && ra->is_int64() && ra->as_int64() > 0)
          retry_after = static_cast<int>(std::min<std::int64_t>(ra->as_int64(), 86400));
      }
    }
    if (reason.empty()) reason = reason_for_code(http_status);
    if (message.empty()) message = generic_message(http_status);
    return ApiError(http_status, reason, message, std::move(causes), retry_after);
  }
  std::string message = generic_message(http_status);
  // Go's http.NotFound page: kube-apiserver's answer for a group or custom resource it does not
  // serve (its not-found handler, after apiextensions-apiserver found no CRD). client-go makes it
  // the generic NotFound (apimachinery errors.NewGenericServerResponse), which kubectl prints as
  // "the server could not find the requested resource": so does this, and Client then knows a
  // cached discovery document was wrong about the type.
  if (http_status == 404 && body.substr(0, body.find_last_not_of(" \r\n\t") + 1) == "404 page not found")
    return ApiError(http_status, reason_for_code(http_status), message, {}, retry_after);
  if (!body.empty()) {
    std::string_view trimmed = body.substr(0, body.find_last_not_of(" \r\n\t") + 1);
    std::string kind = trimmed.rfind('<', 0) == 0 ? "an HTML page"
                       : !ec                      ? "JSON that is not a Status"
                                                  : "a non-JSON body";
    message += fmt::format(" (the response was {} of {} bytes, not a Kubernetes Status: \"{}\")", kind, body.size(),
                           excerpt(trimmed));
  }
  return ApiError(http_status, reason_for_code(http_status), message, {}, retry_after);
}

}  // namespace gpupool::kube
