// The visibility descriptor as JSON (descriptor_json.h): field names and values as
// in attncheck_visibility, causal 0 none / 1 top-left / 2 bottom-right.
#include "adapters/process/descriptor_json.h"

#include <fmt/format.h>

#include "adapters/process/protocol.h"

namespace attncheck::process {
namespace {

int IntField(const nlohmann::json& j, const char* field, int fallback) {
  if (!j.contains(field)) return fallback;
  if (!j[field].is_number_integer()) throw ProtocolError(fmt::format("descriptor.{}: expected an integer", field));
  return j[field].get<int>();
}

double NumberField(const nlohmann::json& j, const char* field) {
  if (!j.contains(field)) return 0.0;
  if (!j[field].is_number()) throw ProtocolError(fmt::format("descriptor.{}: expected a number", field));
  return j[field].get<double>();
}

template <class T>
std::vector<T> ArrayField(const nlohmann::json& j, const char* field, std::optional<size_t> length) {
  if (!j.contains(field)) return {};
  const nlohmann::json& a = j[field];
  if (!a.is_array() || (length && a.size() != *length)) {
    throw ProtocolError(fmt::format("descriptor.{}: expected an array{}", field,
                                    length ? fmt::format(" of {} numbers", *length) : std::string()));
  }
  std::vector<T> values;
  for (const nlohmann::json& v : a) {
    if (!v.is_number()) throw ProtocolError(fmt::format("descriptor.{}: expected numbers", field));
    values.push_back(v.get<T>());
  }
  return values;
}

}  // namespace

nlohmann::json DescriptorToJson(const VisibilityDescriptor& d) {
  nlohmann::json j = {{"causal", static_cast<int>(d.causal)}, {"window_left", d.window.left},
                      {"window_right", d.window.right},       {"num_sequences", d.sequences()},
                      {"chunk", d.chunk},                     {"alibi_max_bias", d.alibi_max_bias},
                      {"softcap", d.softcap}};
  ForEachIntArray(d, [&j](const char* field, const std::vector<int32_t>& values) {
    if (!values.empty()) j[field] = values;
  });
  if (!d.alibi_slopes.empty()) j["alibi_slopes"] = d.alibi_slopes;
  if (d.paged.page_size > 0) {
    j["page_size"] = d.paged.page_size;
    j["max_blocks"] = d.paged.max_blocks;
    j["num_pages"] = d.paged.num_pages;
    j["block_table"] = d.paged.block_table;
  }
  return j;
}

VisibilityDescriptor DescriptorFromJson(const nlohmann::json& j, int batch, int tq, int tk) {
  if (!j.is_object()) throw ProtocolError("descriptor: expected a JSON object");
  VisibilityDescriptor d;
  d.batch = batch;
  d.tq = tq;
  d.tk = tk;
  const int causal = IntField(j, "causal", 0);
  if (causal < 0 || causal > 2) throw ProtocolError(fmt::format("descriptor.causal: {} is not 0, 1 or 2", causal));
  d.causal = static_cast<CausalAlignment>(causal);
  d.window = {IntField(j, "window_left", -1), IntField(j, "window_right", -1)};
  d.cu_seqlens_q = ArrayField<int32_t>(j, "cu_seqlens_q", std::nullopt);
  d.cu_seqlens_k = ArrayField<int32_t>(j, "cu_seqlens_k", d.cu_seqlens_q.size());
  const size_t rows = static_cast<size_t>(batch);
  d.seqused_q = ArrayField<int32_t>(j, "seqused_q", rows);
  d.seqused_k = ArrayField<int32_t>(j, "seqused_k", rows);
  d.leftpad_k = ArrayField<int32_t>(j, "leftpad_k", rows);
  d.prefix_len = ArrayField<int32_t>(j, "prefix_len", static_cast<size_t>(d.sequences()));
  d.chunk = IntField(j, "chunk", 0);
  d.paged.page_size = IntField(j, "page_size", 0);
  d.paged.max_blocks = IntField(j, "max_blocks", 0);
  d.paged.num_pages = IntField(j, "num_pages", 0);
  d.paged.block_table = ArrayField<int32_t>(
      j, "block_table", static_cast<size_t>(d.sequences()) * static_cast<size_t>(std::max(0, d.paged.max_blocks)));
  d.alibi_slopes = ArrayField<double>(j, "alibi_slopes", std::nullopt);
  d.alibi_max_bias = NumberField(j, "alibi_max_bias");
  d.softcap = NumberField(j, "softcap");
  return d;
}

}  // namespace attncheck::process
