// The worked example's masks as Cases (seed 000_b6707ba9727598ad: "Causal Mask",
// "Padding Side", "sequence packing", "Prefix LM Mask", "cached decode").
// Shapes are small (1 head, D = Dv = 4, f32, seed 0) so printed rows stay readable.
#include "reference/examples.h"

namespace attncheck::reference {
namespace {

Case OneRow(RowSpec row, int query_len, VisibilityKind visibility) {
  Case c;
  c.q_heads = 1;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.value_dim = 4;
  c.query_len = query_len;
  c.rows = {std::move(row)};
  c.visibility = visibility;
  return c;
}

}  // namespace

std::optional<Case> ExampleCase(std::string_view name) {
  if (name == "causal4") return OneRow(RowSpec{.documents = {4}}, 4, VisibilityKind::kCausal);
  if (name == "packed6") return OneRow(RowSpec{.documents = {3, 3}}, 6, VisibilityKind::kCausal);
  if (name == "leftpad5") return OneRow(RowSpec{.left_pad = 2, .documents = {3}}, 5, VisibilityKind::kCausal);
  if (name == "prefixlm") {
    return OneRow(RowSpec{.documents = {6}, .prefix_len = 3}, 6, VisibilityKind::kPrefixLm);
  }
  if (name == "decode") return OneRow(RowSpec{.documents = {7}}, 2, VisibilityKind::kCausal);
  return std::nullopt;
}

std::vector<std::string_view> ExampleNames() { return {"causal4", "packed6", "leftpad5", "prefixlm", "decode"}; }

}  // namespace attncheck::reference
