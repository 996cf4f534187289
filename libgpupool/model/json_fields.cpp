#include "model/json_fields.hpp"

#include <exception>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_stack.hpp>

#include "gpupool/error.hpp"

namespace gpupool::json_fields {
namespace json = boost::json;

void wrong_type(const std::string& field, const json::value& v, std::string_view want) {
  throw ValidationError(field, json::serialize(v), "must be " + std::string(want));
}

const json::object& as_object(const json::value& v, const std::string& field) {
  if (!v.is_object()) wrong_type(field, v, "an object");
  return v.get_object();
}

const json::object* object_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  return &as_object(*v, field);
}

const json::array* array_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_array()) wrong_type(field, *v, "an array");
  return &v->get_array();
}

std::string string_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return {};
  if (!v->is_string()) wrong_type(field, *v, "a string");
  return std::string(v->get_string());
}

std::map<std::string, std::string> string_map(const json::object* o, const std::string& field) {
  std::map<std::string, std::string> out;
  if (!o) return out;
  for (const auto& kv : *o) {
    std::string f = field + "[" + std::string(kv.key()) + "]";
    if (!kv.value().is_string()) wrong_type(f, kv.value(), "a string");
    out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
  }
  return out;
}

std::map<std::string, Quantity> quantity_map(const json::object* o, const std::string& field) {
  std::map<std::string, Quantity> out;
  if (!o) return out;
  for (const auto& kv : *o) {
    std::string f = field + "[" + std::string(kv.key()) + "]";
    const json::value& v = kv.value();
    if (v.is_string()) {
      // Quantity.UnmarshalJSON trims surrounding whitespace before parsing.
      std::string_view text = v.get_string();
      const auto first = text.find_first_not_of(" \t\r\n\v\f");
      text = first == std::string_view::npos ? std::string_view() : text.substr(first);
      text = text.substr(0, text.find_last_not_of(" \t\r\n\v\f") + 1);
      out.emplace(std::string(kv.key()), Quantity::parse(text, f));
    } else if (v.is_int64() || v.is_uint64())
      out.emplace(std::string(kv.key()), Quantity::parse(json::serialize(v), f));
    else
      wrong_type(f, v, "a quantity string such as \"500m\" or \"16Gi\"");
  }
  return out;
}

namespace {

// A basic_parser handler that builds a value only for each element of the top-level "items" array
// (the events are those of boost::json's own parser handler, forwarded to a value_stack while inside an
// item) and hands it over as soon as it is complete.
class ListItemHandler {
 public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  explicit ListItemHandler(const std::function<void(const json::value&, std::size_t)>& item)
      : item_(item), arena_buffer_(64 * 1024), arena_(arena_buffer_.data(), arena_buffer_.size()) {}

  std::exception_ptr failure;  // what `item` threw
  std::string problem;         // a shape error (not an object, items not an array)

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code& ec) {
    if (depth_ == 0) {
      ++depth_;
      return true;
    }
    return begin_container(ec, false);
  }
  bool on_object_end(std::size_t n, json::error_code& ec) {
    if (in_item_) {
      stack_.push_object(n);
      return end_container(ec);
    }
    --depth_;
    return true;
  }
  bool on_array_begin(json::error_code& ec) {
    return depth_ == 0 ? shape_error(ec, "must be a list object") : begin_container(ec, true);
  }
  bool on_array_end(std::size_t n, json::error_code& ec) {
    if (in_item_) {
      stack_.push_array(n);
      return end_container(ec);
    }
    --depth_;
    if (depth_ == 1) in_items_ = false;
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    if (in_item_)
      stack_.push_chars(s);
    else if (depth_ == 1)
      key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    if (in_item_) {
      stack_.push_key(s);
    } else if (depth_ == 1) {
      key_.append(s.data(), s.size());
      items_next_ = key_ == "items";
      key_.clear();
    }
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    if (in_item_) stack_.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code& ec) {
    return scalar(ec, [&] { stack_.push_string(s); });
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t v, json::string_view, json::error_code& ec) {
    return scalar(ec, [&] { stack_.push_int64(v); });
  }
  bool on_uint64(std::uint64_t v, json::string_view, json::error_code& ec) {
    return scalar(ec, [&] { stack_.push_uint64(v); });
  }
  bool on_double(double v, json::string_view, json::error_code& ec) {
    return scalar(ec, [&] { stack_.push_double(v); });
  }
  bool on_bool(bool v, json::error_code& ec) {
    return scalar(ec, [&] { stack_.push_bool(v); });
  }
  bool on_null(json::error_code& ec) {
    if (depth_ == 1 && items_next_) {  // "items": null reads as no items, as a missing field does
      items_next_ = false;
      return true;
    }
    return scalar(ec, [&] { stack_.push_null(); });
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  // An item starts where a value begins directly inside the items array (depth 2).
  bool starts_item() const { return in_items_ && !in_item_ && depth_ == 2; }
  // The value of the top-level "items" key must be an array.
  bool items_value_not_array(bool is_array) {
    if (!(depth_ == 1 && items_next_)) return false;
    items_next_ = false;
    if (is_array) in_items_ = true;
    return !is_array;
  }
  bool begin_container(json::error_code& ec, bool is_array) {
    if (items_value_not_array(is_array)) return shape_error(ec, "must be an array");
    if (starts_item()) {
      arena_.release();
      stack_.reset(json::storage_ptr(&arena_));
      in_item_ = true;
      item_depth_ = depth_;
    }
    ++depth_;
    return true;
  }
  bool end_container(json::error_code& ec) {
    if (--depth_ == item_depth_) return finish_item(ec);
    return true;
  }
  template <class Push>
  bool scalar(json::error_code& ec, Push push) {
    if (depth_ == 0) return shape_error(ec, "must be a list object");
    if (items_value_not_array(false)) return shape_error(ec, "must be an array");
    if (in_item_) {
      push();
      return true;
    }
    if (!starts_item()) return true;  // a top-level field other than items
    arena_.release();
    stack_.reset(json::storage_ptr(&arena_));
    push();
    return finish_item(ec);
  }
  bool finish_item(json::error_code& ec) {
    in_item_ = false;
    try {
      const json::value v = stack_.release();
      item_(v, index_++);
    } catch (...) {
      failure = std::current_exception();
      ec = json::error::extra_data;  // any error: stops the parser, failure says what happened
      return false;
    }
    return true;
  }
  bool shape_error(json::error_code& ec, const char* what) {
    problem = what;
    ec = json::error::extra_data;
    return false;
  }

  const std::function<void(const json::value&, std::size_t)>& item_;
  std::vector<unsigned char> arena_buffer_;
  json::monotonic_resource arena_;
  json::value_stack stack_;
  std::string key_;
  std::size_t depth_ = 0, item_depth_ = 0, index_ = 0;
  bool items_next_ = false, in_items_ = false, in_item_ = false;
};

}  // namespace

struct ListItemReader::Impl {
  explicit Impl(std::function<void(const json::value&, std::size_t)> item)
      : item(std::move(item)), parser(json::parse_options{}, counted) {}
  std::function<void(const json::value&, std::size_t)> item;
  std::size_t index = 0;
  const std::function<void(const json::value&, std::size_t)> counted = [this](const json::value& v, std::size_t i) {
    index = i;
    item(v, i);
  };
  json::basic_parser<ListItemHandler> parser;

  // Throws what the parser or `item` found: `item`'s ValidationError with the item's index.
  void check(json::error_code ec) {
    ListItemHandler& h = parser.handler();
    if (h.failure) {
      try {
        std::rethrow_exception(h.failure);
      } catch (const ValidationError& e) {
        const std::string at = "items[" + std::to_string(index) + "]";
        throw ValidationError(e.field().empty() ? at : at + "." + e.field(), e.value(), e.rule());
      }
    }
    if (!h.problem.empty()) throw ValidationError("items", "", h.problem);
    if (ec) throw ValidationError("items", "", "must be valid JSON (" + ec.message() + ")");
  }
};

ListItemReader::ListItemReader(std::function<void(const json::value&, std::size_t)> item)
    : impl_(std::make_unique<Impl>(std::move(item))) {}
ListItemReader::~ListItemReader() = default;

void ListItemReader::feed(std::string_view piece) {
  json::error_code ec;
  const std::size_t used = impl_->parser.write_some(true, piece.data(), piece.size(), ec);
  if (!ec && used < piece.size()) ec = json::error::extra_data;  // as boost::json::parser::write
  impl_->check(ec);
}

void ListItemReader::finish() {
  json::error_code ec;
  if (!impl_->parser.done()) impl_->parser.write_some(false, nullptr, 0, ec);
  impl_->check(ec);
  if (!impl_->parser.done()) throw ValidationError("items", "", "must be valid JSON (the document is incomplete)");
}

void for_each_list_item(std::string_view list_json, const std::function<void(const json::value&, std::size_t)>& item) {
  ListItemReader reader(item);
  reader.feed(list_json);
  reader.finish();
}

}  // namespace gpupool::json_fields
