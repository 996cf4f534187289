// gpupool/quantity.hpp — Kubernetes resource quantities ("500m", "10Gi", "1e3", "1.5").
//
// Follows k8s.io/apimachinery/pkg/api/resource/quantity.go: the grammar
//   <quantity> ::= <signedNumber><suffix>, suffix ∈ {binarySI Ki..Ei, decimalSI n u m "" k M G T P E,
//   decimalExponent e<n>/E<n>}
// values are exact (no floating point), values finer than 1n are rounded up to 1n as the API server
// does, and to_string() prints the canonical form Kubernetes prints ("1024Mi" -> "1Gi",
// "0.5" -> "500m", "1000m" -> "1").
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpupool {

class Quantity {
 public:
  /// The suffix family a quantity is printed in (kept from parsing, as Kubernetes does).
  enum class Format { DecimalSI, BinarySI, DecimalExponent };

  Quantity() = default;  ///< zero, DecimalSI
  /// Parses a quantity; throws ValidationError(field, text, rule) when it is malformed.
  static Quantity parse(std::string_view text, std::string_view field = "quantity");
  /// What Go's String() prints of ParseQuantity(text) (after RoundUp(-3) with `round_up_milli`,
  /// as SetDefaults_ResourceList does): parse(text).to_string(), and for the magnitudes parse
  /// refuses (beyond about 1.7e29), Go's canonical form computed on the decimal digits ("1e400"
  /// is "10e399"). Throws ValidationError for malformed text.
  static std::string canonical(std::string_view text, bool round_up_milli = false, std::string_view field = "quantity");
  static Quantity from_milli(std::int64_t milli);  ///< DecimalSI
  static Quantity from_int(std::int64_t value, Format format = Format::DecimalSI);
  /// Exact value in units of 1e-9.
  static Quantity from_nanos(__int128 nanos, Format format = Format::DecimalSI);

  /// Canonical text, as the API server prints it. Like Go's Quantity, a parsed text that is
  /// already in canonical shape is kept verbatim (so "+1" and "1E3" print as given); arithmetic
  /// drops it. Magnitudes are limited to about 1.7e29 (Go's is unbounded); beyond that parse and
  /// arithmetic throw ValidationError.
  std::string to_string() const;

  /// Value in thousandths, rounded away from zero like Go's MilliValue ("100m" -> 100, "-0.0005" -> -1).
  /// Saturates at the int64 range.
  std::int64_t milli_value() const;
  /// Value rounded away from zero to an integer like Go's Value() (memory, GPUs, pods: "1500m" -> 2).
  /// Saturates at the int64 range.
  std::int64_t value() const;
  /// Exact value in units of 1e-9.
  __int128 nano_value() const noexcept { return nanos_; }
  bool is_zero() const noexcept { return nanos_ == 0; }
  bool is_negative() const noexcept { return nanos_ < 0; }
  Format format() const noexcept { return format_; }

  Quantity operator+(const Quantity& o) const;
  Quantity operator-(const Quantity& o) const;
  Quantity& operator+=(const Quantity& o);
  Quantity& operator-=(const Quantity& o);
  /// Multiply by an integer count (e.g. per-replica request × replicas).
  Quantity operator*(std::int64_t n) const;
  /// Negation (Go's Neg); keeps the format.
  Quantity operator-() const;
  /// Go's RoundUp(-3), which the API server applies to every ResourceList value
  /// (SetDefaults_ResourceList): finer than a thousandth rounds away from zero ("1n" -> "1m").
  Quantity round_up_milli() const;

  /// Compares values only ("1Gi" == "1024Mi"; format is ignored).
  friend bool operator==(const Quantity& a, const Quantity& b) noexcept { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) noexcept {
    return a.nanos_ <=> b.nanos_;
  }

 private:
  __int128 nanos_ = 0;
  Format format_ = Format::DecimalSI;
  std::string verbatim_;  ///< the parsed text when Go's ParseQuantity would keep it (see to_string)
};

}  // namespace gpupool
