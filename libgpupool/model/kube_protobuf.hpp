// model/kube_protobuf.hpp — Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf),
// read into the JSON the API server would have sent (private).
//
// A body is the magic "k8s\0" then a runtime.Unknown (k8s.io/apimachinery/pkg/runtime
// generated.proto: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
// contentType = 4) whose `raw` is the object's message. Decoded with the field numbers of
// k8s.io/api's generated.proto (core/v1, apps/v1, batch/v1, ...) and apimachinery's meta/v1, intstr
// and resource, for the fields of two uses:
// - request bodies as kubectl's typed clients send them (`kubectl create deployment`, `expose`,
//   `run`, `create configmap|secret|namespace|job|quota|...`): decode_object, used by the
//   embedded server;
// - PodList and NodeList responses, for what gpupool reads of pods and nodes
//   (PodRequirements::from_pod_json, Node::from_json): for_each_item, used by the whole-cluster
//   views, which ask kube-apiserver for protobuf because it encodes lists several times faster
//   than JSON.
// As Go's encoding/json with `omitempty` would, zero values of non-pointer fields are left out
// (so defaulting sees them as unset); pointer fields (replicas, ...) keep an explicit 0. Unknown
// fields are skipped, as the decoder of a newer client's message would.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace gpupool::protobuf {

/// A body that is not well-formed (what() says why), or of a kind not decoded here (kind() is
/// then set).
class DecodeError : public std::runtime_error {
 public:
  explicit DecodeError(const std::string& what) : std::runtime_error(what) {}
  /// A well-formed body of a kind not decoded here.
  static DecodeError unknown(std::string api_version, std::string kind);
  const std::string& api_version() const { return api_version_; }
  const std::string& kind() const { return kind_; }
  bool unknown_kind() const { return unknown_kind_; }

 private:
  std::string api_version_, kind_;
  bool unknown_kind_ = false;
};

/// True for a body starting with the magic "k8s\0".
bool is_kubernetes_protobuf(std::string_view body);
/// True for the first bytes of a body that are too few to tell: shorter than the magic and a
/// prefix of it (a streamed body's encoding is known once they are not).
bool is_magic_prefix(std::string_view head);

/// The object a body carries, as JSON (apiVersion and kind from its TypeMeta).
boost::json::object decode_object(std::string_view body);
/// A meta/v1 DeleteOptions body (any apiVersion: every group version registers it), as JSON.
boost::json::object decode_delete_options(std::string_view body);
/// The kinds decode_object reads: "v1 Pod, v1 Service, ...".
std::string object_kinds();

struct ListMeta {
  std::string resource_version, continue_token;
  std::optional<std::int64_t> remaining_item_count;
};

/// The meta/v1 Status of an error response (kube-apiserver encodes errors as the request's
/// Accept asked), as its JSON.
boost::json::object decode_status(std::string_view body);

/// A list's metadata, its items not decoded.
ListMeta list_meta(std::string_view body);

/// What for_each_item decodes of each item.
enum class ItemFields {
  all,    ///< every field of the schema (metadata, spec, status as far as decoded here)
  model,  ///< only what the model's readers read: PodRequirements::from_pod_json for a pod
          ///< (metadata name, namespace, ownerReferences; the containers' resources and
          ///< restartPolicy, volumes, nodeSelector, nodeName, affinity, tolerations, overhead;
          ///< status.phase), Node::from_json for a node. The same results from them, for a
          ///< fraction of the tree.
};

/// The items of a v1 PodList or NodeList, each as the JSON object the list's JSON would hold
/// (items carry no apiVersion/kind, as in a JSON list of built-in kinds), handed to `each` one at
/// a time as they are decoded; returns the list's metadata. Each item's values live in an arena of
/// their own, freed with the last value that holds it.
ListMeta for_each_item(std::string_view body, const std::function<void(boost::json::object&& item)>& each,
                       ItemFields fields = ItemFields::all);

/// for_each_item over a body that arrives piece by piece (a list streamed off the connection):
/// feed() the pieces in order, then finish(). Each item is decoded and handed to `each` as soon
/// as its last byte has arrived, so what is held is one item (plus the piece), not the body.
/// for_each_item is this reader fed the whole body. Throws DecodeError as for_each_item does (an
/// unknown kind as soon as the list's TypeMeta has arrived; a truncated body at finish()).
/// The list's TypeMeta must come before its items, as Go's encoder writes runtime.Unknown's
/// fields in number order.
class ItemReader {
 public:
  ItemReader(std::function<void(boost::json::object&& item)> each, ItemFields fields = ItemFields::all);
  void feed(std::string_view piece);
  /// The list's metadata; DecodeError when the body ended early.
  ListMeta finish();

 private:
  std::size_t consume(std::string_view in);
  void envelope_field(int number, std::string_view bytes);
  void list_field(int number, std::string_view bytes);

  std::function<void(boost::json::object&&)> each_;
  ItemFields fields_;
  enum class State { magic, envelope, raw } state_ = State::magic;
  std::string api_version_, kind_;
  const void* item_ = nullptr;  // the item's message schema, known from the TypeMeta
  std::uint64_t raw_left_ = 0;  // bytes of runtime.Unknown's raw (the list) still to come
  bool seen_raw_ = false;
  ListMeta meta_;
  std::string pending_;  // the start of a field whose end has not arrived
};

}  // namespace gpupool::protobuf
