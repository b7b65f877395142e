// Visibility relation V = K_valid ∧ same_doc ∧ G and the row non-emptiness check.
// Source: the worked example's visibility algebra (prefix-LM, block-diagonal
// packing, rectangular causal p_i = T_past + i) plus sliding-window and chunked G.
#include "reference/visibility.h"

#include <stdexcept>

namespace attncheck::reference {

bool TaskVisible(const Case& c, int prefix_len, int query_slot, int key_slot, int query_pos_in_doc,
                 int key_pos_in_doc) {
  const bool causal = key_slot <= query_slot;
  switch (c.visibility) {
    case VisibilityKind::kCausal:
      return causal;
    case VisibilityKind::kBidirectional:
      return true;
    case VisibilityKind::kPrefixLm:
      // A leading query (pos_in_doc < 0, Tq > Tk) is before the prefix, not in it.
      return (key_pos_in_doc < prefix_len && query_pos_in_doc >= 0 && query_pos_in_doc < prefix_len) || causal;
    case VisibilityKind::kSlidingWindow:
      return query_slot - key_slot < c.window && key_slot - query_slot <= c.window_right;
    case VisibilityKind::kChunked:
      if (c.chunk <= 0) return false;
      return causal && key_pos_in_doc / c.chunk == query_pos_in_doc / c.chunk;
  }
  return false;
}

bool Visible(const Case& c, const RowSpec& row_spec, const RowLayout& row, int query_slot, int key_slot) {
  const QueryFacts query = QueryAt(row_spec, row, query_slot);  // slot < 0: a leading query (Tq > Tk)
  const size_t j = static_cast<size_t>(key_slot);
  if (query.doc < 0) return false;           // a pad query sees nothing
  if (row.valid[j] == 0) return false;       // K_valid
  if (row.doc[j] != query.doc) return false;  // same_doc
  return TaskVisible(c, row_spec.prefix_len, query_slot, key_slot, query.pos_in_doc, row.pos_in_doc[j]);
}

std::vector<uint8_t> RowVisibility(const Case& c, const RowSpec& row_spec, const RowLayout& row, int tq) {
  const int tk = row.slots();
  std::vector<uint8_t> visible(static_cast<size_t>(tq) * tk, 0);  // [Tq, Tk]
  for (int i = 0; i < tq; ++i) {
    const int query_slot = tk - tq + i;
    for (int j = 0; j < tk; ++j) {
      visible[static_cast<size_t>(i) * tk + j] = Visible(c, row_spec, row, query_slot, j) ? 1 : 0;
    }
  }
  return visible;
}

std::vector<uint8_t> Visibility(const Case& c) {
  const int batch = c.batch(), tq = c.query_len, tk = c.key_len();
  std::vector<uint8_t> visible;  // [B, Tq, Tk]
  visible.reserve(static_cast<size_t>(batch) * tq * tk);
  for (const RowSpec& row_spec : c.rows) {
    if (row_spec.slots() != tk) throw std::invalid_argument("rows: every row must have the same number of slots");
    const RowLayout row = LayoutRow(row_spec);
    const std::vector<uint8_t> row_visible = RowVisibility(c, row_spec, row, tq);
    visible.insert(visible.end(), row_visible.begin(), row_visible.end());
  }
  return visible;
}

std::vector<uint8_t> EmptyRows(std::span<const uint8_t> visible, int batch, int tq, int tk) {
  std::vector<uint8_t> empty_row(static_cast<size_t>(batch) * tq, 1);  // [B, Tq]
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < tq; ++i) {
      const size_t row = static_cast<size_t>(b) * tq + i;
      for (int j = 0; j < tk; ++j) {
        if (visible[row * tk + j] != 0) {
          empty_row[row] = 0;
          break;
        }
      }
    }
  }
  return empty_row;
}

std::vector<QueryRow> RealRowsWithNoVisibleKey(std::span<const uint8_t> visible,
                                               std::span<const uint8_t> query_valid, int batch, int tq,
                                               int tk) {
  const std::vector<uint8_t> empty_row = EmptyRows(visible, batch, tq, tk);
  std::vector<QueryRow> offending;
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < tq; ++i) {
      const size_t row = static_cast<size_t>(b) * tq + i;
      if (query_valid[row] != 0 && empty_row[row] != 0) offending.push_back({b, i});
    }
  }
  return offending;
}

}  // namespace attncheck::reference
