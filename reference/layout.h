// Layout of one batch row: which key slots hold real tokens, which document each
// slot belongs to, its index inside that document, and its logical position.
// Positions follow the HF generation recipe (position_ids = cumsum(mask) − 1,
// masked_fill(pad, 0)) and reset at every packed document (doc_ids / pos_in_doc).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cases/case.h"

namespace attncheck::reference {

// One row, every array [Tk] (= row.slots()); slots are
// [left_pad pads][document 0][document 1]...[right_pad pads].
struct RowLayout {
  std::vector<uint8_t> valid;     // 1 = real token, 0 = pad
  std::vector<int> doc;           // document index within the row (zero-length ones count), −1 for pads
  std::vector<int> pos_in_doc;    // index inside its document, −1 for pads
  std::vector<int> positions;     // logical position: position_offset + pos_in_doc; pads 0
  std::vector<int> real_index;    // index among the row's real tokens, −1 for pads
  int slots() const { return static_cast<int>(valid.size()); }
};

// The layout of one row spec.
RowLayout LayoutRow(const RowSpec& row);

// A query slot's facts. Slots ≥ 0 are the layout's; a slot < 0 is a leading query
// (Tq > Tk, cases/case.h RowSpec): real, in LeadingDocument(spec), pos_in_doc = slot
// (the row has no left pad), position position_offset + slot.
struct QueryFacts {
  bool valid = false;
  int doc = -1;
  int pos_in_doc = -1;
  int position = 0;
};
QueryFacts QueryAt(const RowSpec& spec, const RowLayout& row, int slot);
// The document leading queries continue: the row's first non-empty one (0 when all are empty).
int LeadingDocument(const RowSpec& spec);

// HF position ids from an attention mask (1 = real token), literally
//   position_ids = attention_mask.cumsum(-1) − 1; position_ids.masked_fill_(mask == 0, 0)
// attention_mask: [T] → [T]. E.g. [0, 0, 1, 1, 1] → [0, 0, 0, 1, 2].
std::vector<int> CumsumPositionIds(std::span<const uint8_t> attention_mask);

}  // namespace attncheck::reference
