// The visibility descriptor on the process protocol (protocol 2, PROTOCOL.md): a
// JSON object with the fields of the C ABI's attncheck_visibility
// (include/attncheck/adapter.h), int arrays as JSON arrays, an absent array empty.
#pragma once

#include <nlohmann/json.hpp>

#include "cases/visibility_descriptor.h"

namespace attncheck::process {

nlohmann::json DescriptorToJson(const VisibilityDescriptor& d);
// The descriptor of a call over a padded batch [batch, tq, tk]; throws
// ProtocolError for a field of the wrong type or an array of the wrong length.
VisibilityDescriptor DescriptorFromJson(const nlohmann::json& j, int batch, int tq, int tk);

}  // namespace attncheck::process
