// model/json_fields.hpp (private) — typed access to fields of Kubernetes JSON objects, throwing
// ValidationError(field path, the JSON text, "must be ...") on a wrong type. A missing or null field
// reads as absent (nullptr / empty string / empty map).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "gpupool/quantity.hpp"

namespace gpupool::json_fields {

/// Calls `item(value, index)` for each element of the top-level "items" array of a Kubernetes list
/// (NodeList, PodList...) as it is parsed, without building the whole document: each item's tree
/// lives in one reused arena and is gone when `item` returns (so peak memory is one item's tree plus
/// what `item` keeps). Other top-level fields are skipped; a document without "items" has none.
/// Throws ValidationError("items", ...) for malformed JSON, a non-object document or non-array items;
/// a ValidationError thrown by `item` comes back with "items[<index>]." prefixed to its field.
void for_each_list_item(std::string_view list_json,
                        const std::function<void(const boost::json::value&, std::size_t)>& item);

/// for_each_list_item over a document that arrives piece by piece (a list streamed off the
/// connection): feed() the pieces in order, then finish(). Items are handed over as each is
/// complete; the same errors, thrown by the feed() or finish() that finds them (an incomplete
/// document by finish()). for_each_list_item is this reader fed the whole document.
class ListItemReader {
 public:
  explicit ListItemReader(std::function<void(const boost::json::value&, std::size_t)> item);
  ~ListItemReader();
  ListItemReader(const ListItemReader&) = delete;
  ListItemReader& operator=(const ListItemReader&) = delete;
  void feed(std::string_view piece);
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

[[noreturn]] void wrong_type(const std::string& field, const boost::json::value& v, std::string_view want);
const boost::json::object& as_object(const boost::json::value& v, const std::string& field);
const boost::json::object* object_at(const boost::json::object& o, std::string_view key, const std::string& field);
const boost::json::array* array_at(const boost::json::object& o, std::string_view key, const std::string& field);
std::string string_at(const boost::json::object& o, std::string_view key, const std::string& field);
/// A map of strings (labels, annotations, nodeSelector); entries are "<field>[<key>]".
std::map<std::string, std::string> string_map(const boost::json::object* o, const std::string& field);
/// A core/v1 ResourceList: quantity strings, or bare integers as Quantity's UnmarshalJSON accepts.
std::map<std::string, Quantity> quantity_map(const boost::json::object* o, const std::string& field);

}  // namespace gpupool::json_fields
