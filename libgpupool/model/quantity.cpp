// Kubernetes quantities, following k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go,
// amount.go). The value is kept exactly as a count of nanos (1e-9) in an __int128, which covers
// every value ParseQuantity can produce below ~1.7e29.
//
// Rules implemented here (quoted from quantity.go):
//  - parseQuantityString: optional sign, digits with an optional '.', then a suffix made of the
//    letters "eEinumkKMGTP", an optional sign and digits; anything else is ErrFormatWrong.
//  - "This rounds non-zero values up to the minimum representable value": magnitudes finer than 1n
//    round away from zero to the next nano.
//  - "The max is just a simple cap": BinarySI values above 2^63-1 are capped there.
//  - BinarySI values strictly between -1 and 1 become DecimalSI.
//  - CanonicalizeBytes: BinarySI is printed in base 1024 only when |v| >= 1024 and v is an integer;
//    otherwise DecimalSI. Decimal forms move all factors of ten into the exponent, then lower the
//    exponent to a multiple of three. DecimalSI has no suffix above "E" (10^18): Go's
//    CanonicalizeBytes ignores the failed suffix lookup, so a larger exponent is printed as no
//    suffix at all ("1e21" in DecimalSI prints "1", sic).
//  - Add/Sub: the result keeps the receiver's format unless the receiver is zero.
#include "gpupool/quantity.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>
#include <limits>

#include "gpupool/error.hpp"

namespace gpupool {
namespace {

using i128 = __int128;
constexpr i128 kNano = 1'000'000'000;
constexpr i128 kI128Max = static_cast<i128>((static_cast<unsigned __int128>(1) << 127) - 1);
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

constexpr std::string_view kErrFormatWrong =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";
constexpr std::string_view kErrTooLarge =
    "magnitude too large (gpupool holds quantities below about 1.7e29 exactly); use a smaller value";

[[noreturn]] void fail(std::string_view field, std::string_view text, std::string_view rule) {
  throw ValidationError(std::string(field), std::string(text), std::string(rule));
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// "16GB", "16gib", "512MB": a byte unit as people write it. Kubernetes wants "16Gi" (2^30) or "16G"
/// (10^9); the suggestion names both. Empty when the text is not of that form.
std::string byte_unit_hint(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (is_digit(text[i]) || text[i] == '.')) ++i;
  if (i == 0 || i == text.size()) return {};
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::string_view prefixes = "KMGTPE";
  if (unit.size() < 2 || unit.size() > 3 || prefixes.find(unit[0]) == std::string_view::npos || unit.back() != 'B' ||
      (unit.size() == 3 && unit[1] != 'I'))
    return {};
  const std::string number(text.substr(0, i));
  const char p = unit[0] == 'K' ? 'k' : unit[0];
  return fmt::format("; did you mean \"{}{}i\" ({}×2^{} bytes) or \"{}{}\" ({}×10^{})?", number, unit[0], number,
                     10 * (prefixes.find(unit[0]) + 1), number, p, number, 3 * (prefixes.find(unit[0]) + 1));
}

struct Scanned {
  bool positive = true;
  std::string_view value;  // sign + number, as Go's `value`
  std::string_view num;    // integer digits without leading zeros ("0" when none)
  std::string_view denom;  // fraction digits
  std::string_view suffix;
};

// parseQuantityString. Returns false on ErrFormatWrong.
bool scan(std::string_view str, Scanned& out) {
  std::size_t pos = 0, end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    out.positive = str[0] != '-';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;  // strip leading zeros
  if (pos >= end) {                            // only zeros (or nothing) after the sign
    out.num = "0";
    out.value = "0";
    return true;
  }
  std::size_t start = pos;
  while (pos < end && is_digit(str[pos])) ++pos;
  out.num = str.substr(start, pos - start);
  if (pos >= end) {
    out.value = str;
    return true;
  }
  if (out.num.empty()) out.num = "0";
  if (str[pos] == '.') {
    start = ++pos;
    while (pos < end && is_digit(str[pos])) ++pos;
    out.denom = str.substr(start, pos - start);
    if (pos >= end) {
      out.value = str;
      return true;
    }
  }
  out.value = str.substr(0, pos);
  std::size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(str[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && is_digit(str[pos])) ++pos;
  if (pos < end) return false;
  out.suffix = str.substr(suffix_start);
  return true;
}

struct Suffix {
  int base;       // 10 or 2
  long exponent;  // power of the base
  Quantity::Format format;
};

// suffixHandler.interpret
bool interpret(std::string_view s, Suffix& out) {
  struct Entry {
    std::string_view text;
    int base;
    int exponent;
  };
  static constexpr Entry kTable[] = {
      {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"", 10, 0},   {"k", 10, 3},  {"M", 10, 6},
      {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
      {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
  };
  for (const auto& e : kTable) {
    if (e.text == s) {
      out = {e.base, e.exponent, e.base == 10 ? Quantity::Format::DecimalSI : Quantity::Format::BinarySI};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    // strconv.ParseInt(s[1:], 10, 64), then bounded to ±MaxInt32 as interpret does.
    std::string_view digits = s.substr(1);
    bool negative = false;
    if (digits[0] == '+' || digits[0] == '-') {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty()) return false;
    long long v = 0;
    for (char c : digits) {
      if (!is_digit(c)) return false;
      v = v * 10 + (c - '0');
      if (v > std::numeric_limits<std::int32_t>::max()) return false;
    }
    out = {10, static_cast<long>(negative ? -v : v), Quantity::Format::DecimalExponent};
    return true;
  }
  return false;
}

bool checked_mul(i128 a, i128 b, i128& out) noexcept { return !__builtin_mul_overflow(a, b, &out); }

// Multiplies a decimal digit string in place by a small factor.
void multiply_digits(std::string& digits, std::uint64_t factor) {
  std::uint64_t carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    std::uint64_t v = static_cast<std::uint64_t>(*it - '0') * factor + carry;
    *it = static_cast<char>('0' + v % 10);
    carry = v / 10;
  }
  while (carry) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

// Parses decimal digits into an __int128; false on overflow.
bool digits_to_i128(std::string_view digits, i128& out) noexcept {
  i128 v = 0;
  for (char c : digits) {
    if (!checked_mul(v, 10, v) || __builtin_add_overflow(v, static_cast<i128>(c - '0'), &v)) return false;
  }
  out = v;
  return true;
}

void append_i128(std::string& out, i128 v) {
  if (v < 0) {
    out += '-';
    // Negating kI128Min is not reachable: magnitudes are kept below kI128Max.
    v = -v;
  }
  char buf[48];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v);
  while (n) out += buf[--n];
}

std::int64_t saturate(i128 v) noexcept {
  if (v > kInt64Max) return kInt64Max;
  if (v < kInt64Min) return kInt64Min;
  return static_cast<std::int64_t>(v);
}

// ceil(|nanos| / divisor) with the sign of nanos (Go's ScaledValue rounds away from zero).
i128 divide_away_from_zero(i128 nanos, i128 divisor) noexcept {
  i128 q = nanos / divisor;
  if (nanos % divisor != 0) q += nanos > 0 ? 1 : -1;
  return q;
}

// quantitySuffixer.constructBytes for base 10.
std::string decimal_suffix(long exponent, Quantity::Format format) {
  if (format == Quantity::Format::DecimalSI) {
    switch (exponent) {
      case -9:
        return "n";
      case -6:
        return "u";
      case -3:
        return "m";
      case 0:
        return "";
      case 3:
        return "k";
      case 6:
        return "M";
      case 9:
        return "G";
      case 12:
        return "T";
      case 15:
        return "P";
      case 18:
        return "E";
      default:
        return "";  // no suffix: Go ignores constructBytes' miss, so 1e21 in DecimalSI prints as "1" (sic)
    }
  }
  if (exponent == 0) return "";
  // Appended rather than `"e" + std::to_string(...)`: g++ 12 at -O3 reports a false -Wrestrict in
  // operator+(const char*, string&&) (GCC bug 105329).
  std::string out = "e";
  out += std::to_string(exponent);
  return out;
}

// Go's fast path keeps the input string when it is already canonical; mirror its condition.
bool go_keeps_text(const Scanned& sc, const Suffix& suf) {
  if (suf.base == 10) {
    std::size_t digits = sc.num.size() + sc.denom.size();
    long scale = suf.exponent - static_cast<long>(sc.denom.size());
    if (digits <= 18 && scale >= -9) {
      std::string shifted = std::string(sc.num) + std::string(sc.denom);
      return scale % 3 == 0 && !(shifted.size() >= 3 && shifted.ends_with("000")) && shifted[0] != '0';
    }
  } else if (sc.denom.empty()) {
    long precision = 15 - static_cast<long>(sc.num.size()) - suf.exponent * 3 / 10 - 1;
    if (precision >= 0) {
      i128 v = 0;
      digits_to_i128(sc.num, v);
      return (v & 7) != 0;
    }
  }
  return false;
}

}  // namespace

Quantity Quantity::parse(std::string_view text, std::string_view field) {
  if (text.empty()) fail(field, text, kErrFormatWrong);
  if (text == "0") {
    Quantity q;
    q.verbatim_ = "0";
    return q;
  }
  Scanned sc;
  if (!scan(text, sc)) fail(field, text, std::string(kErrFormatWrong) + byte_unit_hint(text));
  Suffix suf{};
  if (!interpret(sc.suffix, suf)) fail(field, text, kErrSuffix);

  Quantity q;
  q.format_ = suf.format;
  const bool keep_text = go_keeps_text(sc, suf);

  // value = digits × 2^binexp × 10^(decexp - len(denom)), in nanos: shift by 9 more.
  std::string digits = std::string(sc.num) + std::string(sc.denom);
  std::size_t first = digits.find_first_not_of('0');
  digits.erase(0, first == std::string::npos ? digits.size() : first);
  i128 magnitude = 0;
  if (!digits.empty()) {
    if (suf.base == 2) {
      for (long e = suf.exponent; e > 0; e -= 30) multiply_digits(digits, std::uint64_t{1} << std::min(e, 30L));
    }
    long long p = (suf.base == 10 ? suf.exponent : 0) - static_cast<long long>(sc.denom.size()) + 9;
    if (p >= 0) {
      if (p > 40 || !digits_to_i128(digits, magnitude)) fail(field, text, kErrTooLarge);
      for (long long i = 0; i < p; ++i)
        if (!checked_mul(magnitude, 10, magnitude)) fail(field, text, kErrTooLarge);
    } else {
      // Drop the digits finer than a nano; any non-zero one rounds the magnitude up.
      std::size_t drop = static_cast<std::size_t>(-p);
      std::string_view all(digits);
      std::string_view kept = drop >= all.size() ? std::string_view() : all.substr(0, all.size() - drop);
      std::string_view dropped = drop >= all.size() ? all : all.substr(all.size() - drop);
      if (!digits_to_i128(kept, magnitude)) fail(field, text, kErrTooLarge);
      if (dropped.find_first_not_of('0') != std::string_view::npos) magnitude += 1;
    }
    if (magnitude > kI128Max / 4) fail(field, text, kErrTooLarge);  // headroom for arithmetic
  }
  if (q.format_ == Format::BinarySI) {
    const i128 cap = static_cast<i128>(kInt64Max) * kNano;
    if (magnitude > cap) magnitude = cap;
    if (magnitude > 0 && magnitude < kNano) q.format_ = Format::DecimalSI;
  }
  q.nanos_ = sc.positive ? magnitude : -magnitude;
  if (keep_text) q.verbatim_ = std::string(text);
  return q;
}

std::string Quantity::canonical(std::string_view text, bool round_up_milli, std::string_view field) {
  try {
    const Quantity q = parse(text, field);
    if (!round_up_milli) return q.to_string();
    const Quantity rounded = q.round_up_milli();
    return (rounded == q ? q : rounded).to_string();
  } catch (const ValidationError& e) {
    if (e.rule() != kErrTooLarge) throw;
  }
  // Beyond the __int128 range: what Go's String() prints of ParseQuantity's result, by decimal
  // digits. (A binary quantity is capped at 2^63-1 first.)
  Scanned sc;
  scan(text, sc);
  Suffix suf{};
  interpret(sc.suffix, suf);
  if (suf.base == 2)
    return from_nanos((sc.positive ? 1 : -1) * static_cast<i128>(kInt64Max) * kNano, Format::BinarySI).to_string();
  if (go_keeps_text(sc, suf)) return std::string(text);
  std::string digits = std::string(sc.num) + std::string(sc.denom);
  long exponent = suf.exponent - static_cast<long>(sc.denom.size());
  const long finest = round_up_milli ? -3 : -9;
  if (exponent < finest) {  // finer than a nano (or a thousandth): rounded away from zero
    const std::size_t drop = static_cast<std::size_t>(finest - exponent);
    const bool up =
        digits.substr(digits.size() - std::min(drop, digits.size())).find_first_not_of('0') != std::string::npos;
    digits.resize(digits.size() - std::min(drop, digits.size()));
    if (up) {
      digits.insert(digits.begin(), '0');
      std::size_t i = digits.size();
      while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
      if (i > 0) ++digits[i - 1];
    }
    exponent = finest;
  }
  const std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return "0";
  digits.erase(0, first);
  // AsCanonicalBytes: factors of ten into the exponent, then the exponent down to a multiple of 3.
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  while (exponent % 3 != 0) {
    digits += '0';
    --exponent;
  }
  Format format = suf.format;
  return (sc.positive ? "" : "-") + digits + decimal_suffix(exponent, format);
}

Quantity Quantity::from_nanos(__int128 nanos, Format format) {
  Quantity q;
  q.nanos_ = nanos;
  q.format_ = format;
  return q;
}

Quantity Quantity::from_milli(std::int64_t milli) { return from_nanos(static_cast<i128>(milli) * 1'000'000); }

Quantity Quantity::from_int(std::int64_t value, Format format) {
  return from_nanos(static_cast<i128>(value) * kNano, format);
}

std::string Quantity::to_string() const {
  if (!verbatim_.empty()) return verbatim_;
  if (nanos_ == 0) return "0";
  std::string out;
  const i128 magnitude = nanos_ < 0 ? -nanos_ : nanos_;
  Format format = format_;
  if (format == Format::BinarySI) {
    // "If q.Format is set to BinarySI and q.Amount represents a non-zero value between -1024 and
    // +1024, it will be emitted as if q.Format were DecimalSI"; so is a value with a fraction.
    if (magnitude < 1024 * kNano || magnitude % kNano != 0) {
      format = Format::DecimalSI;
    } else {
      i128 units = magnitude / kNano;
      int exponent = 0;
      while (units % 1024 == 0) {
        units /= 1024;
        ++exponent;
      }
      if (exponent <= 6) {
        static constexpr std::string_view kBin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
        append_i128(out, nanos_ < 0 ? -units : units);
        out += kBin[exponent];
        return out;
      }
      format = Format::DecimalExponent;  // no binary suffix past Ei
    }
  }
  // AsCanonicalBytes: all factors of ten into the exponent, then the exponent down to a multiple of 3.
  i128 mantissa = magnitude;
  long exponent = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    mantissa *= 10;
    --exponent;
  }
  append_i128(out, nanos_ < 0 ? -mantissa : mantissa);
  out += decimal_suffix(exponent, format);
  return out;
}

std::int64_t Quantity::milli_value() const { return saturate(divide_away_from_zero(nanos_, 1'000'000)); }

std::int64_t Quantity::value() const { return saturate(divide_away_from_zero(nanos_, kNano)); }

Quantity Quantity::operator+(const Quantity& o) const {
  Quantity r = *this;
  r += o;
  return r;
}

Quantity Quantity::operator-(const Quantity& o) const {
  Quantity r = *this;
  r -= o;
  return r;
}

Quantity& Quantity::operator+=(const Quantity& o) {
  if (nanos_ == 0) format_ = o.format_;
  if (__builtin_add_overflow(nanos_, o.nanos_, &nanos_)) fail("quantity", to_string(), kErrTooLarge);
  verbatim_.clear();
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& o) {
  if (nanos_ == 0) format_ = o.format_;
  if (__builtin_sub_overflow(nanos_, o.nanos_, &nanos_)) fail("quantity", to_string(), kErrTooLarge);
  verbatim_.clear();
  return *this;
}

Quantity Quantity::operator*(std::int64_t n) const {
  Quantity r = from_nanos(0, format_);
  if (!checked_mul(nanos_, n, r.nanos_)) fail("quantity", to_string(), kErrTooLarge);
  return r;
}

Quantity Quantity::operator-() const { return from_nanos(-nanos_, format_); }

Quantity Quantity::round_up_milli() const {
  // resource.Quantity.RoundUp(-3): exact values keep their text; the others round away from
  // zero (the text is dropped, the format kept).
  constexpr i128 kMilli = 1'000'000;
  const i128 rest = nanos_ % kMilli;
  if (rest == 0) return *this;
  return from_nanos(nanos_ - rest + (nanos_ < 0 ? -kMilli : kMilli), format_);
}

}  // namespace gpupool
