// A Case made concrete (DESIGN §1): per-slot layout, the visibility relation and
// the counter-based q, k, v tensors. Queries are the last Tq key slots of each row,
// so a row's past length is Tk − Tq (cached decode p_i = T_past + i).
#include "reference/scenario.h"

#include <stdexcept>
#include <string>

#include "reference/data.h"
#include "reference/layout.h"
#include "reference/visibility.h"

namespace attncheck::reference {
namespace {

// The structural facts the reference relies on for memory safety; the full
// validation of a case is Validate() in cases/case.h.
void CheckShape(const Case& c) {
  const int tk = c.key_len();
  for (size_t b = 0; b < c.rows.size(); ++b) {
    if (c.rows[b].slots() != tk) {
      throw std::invalid_argument("rows[" + std::to_string(b) + "]: has " + std::to_string(c.rows[b].slots()) +
                                  " slots, row 0 has " + std::to_string(tk));
    }
    if (c.rows[b].left_pad < 0 || c.rows[b].right_pad < 0) {
      throw std::invalid_argument("rows[" + std::to_string(b) + "]: negative padding");
    }
    for (int length : c.rows[b].documents) {
      if (length < 0) throw std::invalid_argument("rows[" + std::to_string(b) + "].documents: negative length");
    }
  }
  if (c.query_len < 0 || c.query_len > tk) throw std::invalid_argument("query_len: must be in [0, Tk]");
  if (c.q_heads < 1 || c.kv_heads < 1 || c.q_heads % c.kv_heads != 0) {
    throw std::invalid_argument("kv_heads: must be ≥ 1 and divide q_heads");
  }
  if (c.head_dim < 0 || c.value_dim < 0) throw std::invalid_argument("head_dim: dims must be ≥ 0");
  if (c.visibility == VisibilityKind::kChunked && c.chunk < 1) throw std::invalid_argument("chunk: must be ≥ 1");
}

}  // namespace

Scenario MakeLayout(const Case& c) {
  CheckShape(c);
  Scenario s;
  s.c = c;
  s.batch = c.batch();
  s.tq = c.query_len;
  s.tk = c.key_len();
  const size_t keys = static_cast<size_t>(s.batch) * s.tk;
  const size_t queries = static_cast<size_t>(s.batch) * s.tq;
  s.key_positions.reserve(keys);
  s.key_valid.reserve(keys);
  s.key_doc.reserve(keys);
  s.key_pos_in_doc.reserve(keys);
  s.query_positions.reserve(queries);
  s.query_valid.reserve(queries);
  s.visible.reserve(queries * static_cast<size_t>(s.tk));
  for (const RowSpec& row_spec : c.rows) {
    const RowLayout row = LayoutRow(row_spec);
    s.key_positions.insert(s.key_positions.end(), row.positions.begin(), row.positions.end());
    s.key_valid.insert(s.key_valid.end(), row.valid.begin(), row.valid.end());
    s.key_doc.insert(s.key_doc.end(), row.doc.begin(), row.doc.end());
    s.key_pos_in_doc.insert(s.key_pos_in_doc.end(), row.pos_in_doc.begin(), row.pos_in_doc.end());
    for (int i = 0; i < s.tq; ++i) {
      const size_t slot = static_cast<size_t>(s.tk - s.tq + i);
      s.query_positions.push_back(row.positions[slot]);
      s.query_valid.push_back(row.valid[slot]);
    }
    const std::vector<uint8_t> row_visible = RowVisibility(c, row_spec, row, s.tq);  // [Tq, Tk]
    s.visible.insert(s.visible.end(), row_visible.begin(), row_visible.end());
  }
  s.empty_row = EmptyRows(s.visible, s.batch, s.tq, s.tk);
  return s;
}

Scenario MakeScenario(const Case& c) {
  Scenario s = MakeLayout(c);
  s.q = TensorD(s.batch, c.q_heads, s.tq, c.head_dim);   // [B, Hq, Tq, D]
  s.k = TensorD(s.batch, c.kv_heads, s.tk, c.head_dim);  // [B, Hkv, Tk, D]
  s.v = TensorD(s.batch, c.kv_heads, s.tk, c.value_dim); // [B, Hkv, Tk, Dv]
  for (int b = 0; b < s.batch; ++b) {
    const RowSpec& row = c.rows[static_cast<size_t>(b)];
    for (int h = 0; h < c.q_heads; ++h) {
      for (int i = 0; i < s.tq; ++i) {
        const int64_t token = TokenIdentity(row, s.query_slot(i));
        if (c.head_dim > 0) CaseElementRow(c, kDataQuery, b, h, token, c.head_dim, &s.q.at(b, h, i, 0));
      }
    }
    for (int h = 0; h < c.kv_heads; ++h) {
      for (int j = 0; j < s.tk; ++j) {
        const int64_t token = TokenIdentity(row, j);
        if (c.head_dim > 0) CaseElementRow(c, kDataKey, b, h, token, c.head_dim, &s.k.at(b, h, j, 0));
        if (c.value_dim > 0) CaseElementRow(c, kDataValue, b, h, token, c.value_dim, &s.v.at(b, h, j, 0));
      }
    }
  }
  return s;
}

}  // namespace attncheck::reference
