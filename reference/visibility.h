// The visibility relation V[b, i, j] = K_valid[j] ∧ same_doc(slot_i, j) ∧ G(slot_i, j)
// (query i of row b may read key slot j), with slot_i = Tk − Tq + i, and the
// row non-emptiness invariant Σ_j V[b, i, j] ≥ 1 for real queries (worked example
// "Visibility Algebra": rectangular_causal_visible, assert_real_rows_nonempty).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cases/case.h"
#include "reference/layout.h"

namespace attncheck::reference {

// The task relation G on key slots (same document assumed):
//   causal         j ≤ slot_i                        (bottom-right for cached queries)
//   bidirectional  1
//   prefix-LM      (pos_in_doc(j) < P ∧ 0 ≤ pos_in_doc(slot_i) < P) ∨ j ≤ slot_i
//   sliding window slot_i − j < W ∧ j − slot_i ≤ R  (W keys including self, R after it)
//   chunked        j ≤ slot_i ∧ ⌊pos_in_doc(j)/C⌋ == ⌊pos_in_doc(slot_i)/C⌋
// prefix_len P is the row's; W = c.window, R = c.window_right, C = c.chunk (C ≤ 0: nothing visible).
bool TaskVisible(const Case& c, int prefix_len, int query_slot, int key_slot, int query_pos_in_doc,
                 int key_pos_in_doc);

// V for one query slot and one key slot of a row; a pad query (doc −1) sees nothing.
// A query slot < 0 is a leading query (Tq > Tk): no causal kind lets it see a key.
bool Visible(const Case& c, const RowSpec& row_spec, const RowLayout& row, int query_slot, int key_slot);

// One row: [Tq, Tk], queries are the last tq slots of the row.
std::vector<uint8_t> RowVisibility(const Case& c, const RowSpec& row_spec, const RowLayout& row, int tq);

// The whole case: [B, Tq, Tk] with Tq = c.query_len, Tk = c.key_len().
std::vector<uint8_t> Visibility(const Case& c);

// empty_row[b, i] = 1 when query i of row b sees no key. visible: [B, Tq, Tk] → [B, Tq].
std::vector<uint8_t> EmptyRows(std::span<const uint8_t> visible, int batch, int tq, int tk);

struct QueryRow {
  int b = 0;
  int i = 0;
  bool operator==(const QueryRow&) const = default;
};

// assert_real_rows_nonempty: the real query rows (query_valid [B, Tq] = 1) that see
// no key; empty when the invariant holds. visible: [B, Tq, Tk].
std::vector<QueryRow> RealRowsWithNoVisibleKey(std::span<const uint8_t> visible,
                                               std::span<const uint8_t> query_valid, int batch, int tq,
                                               int tk);

}  // namespace attncheck::reference
