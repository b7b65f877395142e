// A Scenario is a Case made concrete (DESIGN §1 data flow): logical positions,
// validity, documents, the visibility relation V = K_valid ∧ same_doc ∧ G, and the
// double-precision q, k, v tensors derived from the case's seed and profile.
// Laws build derived scenarios (extra padding, one document alone, perturbed keys)
// from these plain fields.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cases/case.h"
#include "reference/tensor.h"

namespace attncheck::reference {

struct Scenario {
  Case c;
  int batch = 0, tq = 0, tk = 0;
  // [B, Tk] per key slot; queries are key slots tk − tq + i
  std::vector<int> key_positions;     // logical position (pads: 0, as cumsum(mask) − 1 masked to 0)
  std::vector<uint8_t> key_valid;     // 1 = real token
  std::vector<int> key_doc;           // document index within the row, −1 for pads
  std::vector<int> key_pos_in_doc;    // index within the document, −1 for pads
  // [B, Tq]
  std::vector<int> query_positions;
  std::vector<uint8_t> query_valid;
  // [B, Tq, Tk]
  std::vector<uint8_t> visible;
  // [B, Tq] 1 when the row has no visible key (flagged, DESIGN §4)
  std::vector<uint8_t> empty_row;
  TensorD q;  // [B, Hq, Tq, D]
  TensorD k;  // [B, Hkv, Tk, D]
  TensorD v;  // [B, Hkv, Tk, Dv]
  // The length a dynamic scaling sees (reference/positional.h CurrentLength); 0: the
  // keys' own, max position + 1. A decode step over a cache sets the whole sequence's.
  int current_length = 0;

  int query_slot(int i) const { return tk - tq + i; }
  int length_seen() const;
  bool is_visible(int b, int i, int j) const { return visible[(static_cast<size_t>(b) * tq + i) * tk + j] != 0; }

 private:
  // SharedBiasTensor's result (reference/attention.h), filled only there and
  // shared by copies. It remembers the case and positions it was computed from,
  // so a copy that changes them computes its own instead of reading a stale one.
  struct BiasCache {
    Case c;
    std::vector<int> query_positions, key_positions;
    std::shared_ptr<const TensorD> bias;  // [B, Hq, Tq, Tk]
  };
  mutable std::shared_ptr<const BiasCache> bias_cache_;
  friend std::shared_ptr<const TensorD> SharedBiasTensor(const Scenario& s);
};

// Layout and visibility only (tensors left empty).
Scenario MakeLayout(const Case& c);
// Layout, visibility and data tensors.
Scenario MakeScenario(const Case& c);
// The same scenario, copying the data of tokens the donor already holds instead of
// generating it again (data is a function of seed, profile, dtype, b, h, token
// identity and d only; a donor that differs in any of these is ignored). The
// donor must be a scenario whose tensors are still those MakeScenario built.
Scenario MakeScenario(const Case& c, const Scenario* donor);

}  // namespace attncheck::reference
