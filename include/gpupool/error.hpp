// gpupool/error.hpp — the exceptions every gpupool call may throw.
//
// All derive from gpupool::Error (itself a std::runtime_error), so `catch (const gpupool::Error&)`
// catches everything gpupool raises. Messages say what was wrong and what to do; they never
// contain secrets (tokens, keys, exec credentials).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpupool {

/// Base of every gpupool exception.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A value given by the user (a flag, a field of a spec, a parsed string) breaks a rule.
/// what() reads: `<field>: invalid value "<value>": <rule>`.
class ValidationError : public Error {
 public:
  ValidationError(std::string field, std::string value, std::string rule);
  const std::string& field() const noexcept { return field_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string field_, value_, rule_;
};

/// A configuration file (kubeconfig, site profile, topology) is unreadable or wrong.
/// what() reads: `<file>[:<line>]: <key>: <message>`.
class ConfigError : public Error {
 public:
  ConfigError(std::string file, std::string key, const std::string& message, int line = 0);
  const std::string& file() const noexcept { return file_; }
  const std::string& key() const noexcept { return key_; }
  int line() const noexcept { return line_; }  ///< 1-based; 0 when unknown

 private:
  std::string file_, key_;
  int line_;
};

/// One entry of a Kubernetes Status' details.causes.
struct StatusCause {
  std::string reason;   ///< e.g. "FieldValueInvalid"
  std::string message;  ///< e.g. "Invalid value: \"-1\": must be greater than or equal to 0"
  std::string field;    ///< e.g. "spec.containers[0].resources.requests[cpu]"
  bool operator==(const StatusCause&) const = default;
};

/// The API server answered with a non-2xx Status.
class ApiError : public Error {
 public:
  ApiError(int code, std::string reason, std::string message, std::vector<StatusCause> causes = {},
           std::optional<int> retry_after_seconds = std::nullopt);
  int code() const noexcept { return code_; }                              ///< HTTP status code
  const std::string& reason() const noexcept { return reason_; }           ///< Status.reason, e.g. "NotFound"
  const std::string& status_message() const noexcept { return message_; }  ///< Status.message
  const std::vector<StatusCause>& causes() const noexcept { return causes_; }
  std::optional<int> retry_after_seconds() const noexcept { return retry_after_; }

 private:
  int code_;
  std::string reason_, message_;
  std::vector<StatusCause> causes_;
  std::optional<int> retry_after_;
};

/// The server could not be reached or the exchange broke (DNS, TCP, TLS, timeout, bad response).
class TransportError : public Error {
 public:
  explicit TransportError(const std::string& message) : Error(message) {}
};

/// No connection could be made: connection refused, the host name does not resolve, or the server
/// refused the TLS handshake (it speaks no TLS, it sent an alert, its certificate is not trusted).
/// A client that has never reached the server gives up at once (a cluster that is down, a wrong
/// context or port: retrying for minutes helps nobody); one that was talking to it retries, as for
/// any TransportError.
class UnreachableError : public TransportError {
 public:
  using TransportError::TransportError;
};

/// A response (or one line of a watch / followed log) is larger than
/// TransportOptions::max_response_bytes: the client stops reading instead of growing without
/// bound, and does not retry (the same request would get the same answer).
class ResponseTooLargeError : public TransportError {
 public:
  using TransportError::TransportError;
};

/// The caller's CancelToken fired while the call was waiting: a request in flight was abandoned or
/// a retry's back-off cut short (see CancelScope in gpupool/client.hpp). Not retried.
class CancelledError : public Error {
 public:
  using Error::Error;
};

}  // namespace gpupool
