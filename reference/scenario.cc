// A Case made concrete (DESIGN §1): per-slot layout, the visibility relation and
// the counter-based q, k, v tensors. Queries are the last Tq key slots of each row,
// so a row's past length is Tk − Tq (cached decode p_i = T_past + i); with Tq > Tk
// the first Tq − Tk are leading queries at slots < 0 (reference/layout.h QueryAt).
#include "reference/scenario.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "reference/data.h"
#include "reference/layout.h"
#include "reference/positional.h"
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
  if (c.query_len < 0 || c.query_len > tk + kMaxLeadingQueries) {
    throw std::invalid_argument("query_len: must be in [0, Tk + kMaxLeadingQueries]");
  }
  const int leading = c.query_len - tk;  // Tq > Tk: leading queries before the first key
  for (size_t b = 0; leading > 0 && b < c.rows.size(); ++b) {
    if (c.rows[b].left_pad != 0 || c.rows[b].position_offset < leading) {
      throw std::invalid_argument("rows[" + std::to_string(b) +
                                  "]: Tq > Tk needs no left pad and position_offset >= Tq - Tk");
    }
  }
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
      const QueryFacts query = QueryAt(row_spec, row, s.query_slot(i));
      s.query_positions.push_back(query.position);
      s.query_valid.push_back(query.valid ? 1 : 0);
    }
    const std::vector<uint8_t> row_visible = RowVisibility(c, row_spec, row, s.tq);  // [Tq, Tk]
    s.visible.insert(s.visible.end(), row_visible.begin(), row_visible.end());
  }
  s.empty_row = EmptyRows(s.visible, s.batch, s.tq, s.tk);
  return s;
}

Scenario MakeScenario(const Case& c) { return MakeScenario(c, nullptr); }

namespace {

// The donor's data can stand in for generated data when every element is the
// same function of (b, h, token, d): same seed, profile, dtype, batch, heads, dims.
bool SameData(const Case& a, const Case& b) {
  return a.seed == b.seed && a.profile == b.profile && a.dtype == b.dtype && a.batch() == b.batch() &&
         a.q_heads == b.q_heads && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim &&
         a.value_dim == b.value_dim;
}

// Slot of each token identity in a row of `tokens` slots starting at `first_slot`.
std::unordered_map<int64_t, int> SlotsByToken(const RowSpec& row, int first_slot, int tokens) {
  std::unordered_map<int64_t, int> slots;
  for (int t = 0; t < tokens; ++t) slots.emplace(TokenIdentity(row, first_slot + t), t);
  return slots;
}

}  // namespace

Scenario MakeScenario(const Case& c, const Scenario* donor) {
  if (donor != nullptr && !SameData(c, donor->c)) donor = nullptr;
  Scenario s = MakeLayout(c);
  s.q = TensorD(s.batch, c.q_heads, s.tq, c.head_dim);   // [B, Hq, Tq, D]
  s.k = TensorD(s.batch, c.kv_heads, s.tk, c.head_dim);  // [B, Hkv, Tk, D]
  s.v = TensorD(s.batch, c.kv_heads, s.tk, c.value_dim); // [B, Hkv, Tk, Dv]
  for (int b = 0; b < s.batch; ++b) {
    const RowSpec& row = c.rows[static_cast<size_t>(b)];
    std::unordered_map<int64_t, int> donor_queries, donor_keys;  // token → donor query / key slot
    if (donor != nullptr) {
      const RowSpec& donor_row = donor->c.rows[static_cast<size_t>(b)];
      donor_queries = SlotsByToken(donor_row, donor->tk - donor->tq, donor->tq);
      donor_keys = SlotsByToken(donor_row, 0, donor->tk);
    }
    for (int i = 0; i < s.tq; ++i) {
      const int64_t token = TokenIdentity(row, s.query_slot(i));
      const auto from = donor_queries.find(token);
      for (int h = 0; h < c.q_heads && c.head_dim > 0; ++h) {
        double* out = &s.q.at(b, h, i, 0);
        if (from != donor_queries.end()) {
          std::copy_n(&donor->q.at(b, h, from->second, 0), c.head_dim, out);
        } else {
          CaseElementRow(c, kDataQuery, b, h, token, c.head_dim, out);
        }
      }
    }
    for (int j = 0; j < s.tk; ++j) {
      const int64_t token = TokenIdentity(row, j);
      const auto from = donor_keys.find(token);
      for (int h = 0; h < c.kv_heads; ++h) {
        if (c.head_dim > 0) {
          double* out = &s.k.at(b, h, j, 0);
          if (from != donor_keys.end()) {
            std::copy_n(&donor->k.at(b, h, from->second, 0), c.head_dim, out);
          } else {
            CaseElementRow(c, kDataKey, b, h, token, c.head_dim, out);
          }
        }
        if (c.value_dim > 0) {
          double* out = &s.v.at(b, h, j, 0);
          if (from != donor_keys.end()) {
            std::copy_n(&donor->v.at(b, h, from->second, 0), c.value_dim, out);
          } else {
            CaseElementRow(c, kDataValue, b, h, token, c.value_dim, out);
          }
        }
      }
    }
  }
  return s;
}

int Scenario::length_seen() const { return current_length > 0 ? current_length : CurrentLength(key_positions); }

}  // namespace attncheck::reference
