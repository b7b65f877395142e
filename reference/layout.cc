// Row layout: validity, documents, pos_in_doc and logical positions per key slot.
// Source: the packed-sequence and left-padding recipes of the worked example
// (doc_ids / pos_in_doc for [A,B,EOS,D,E,EOS]; cumsum(mask) − 1 for left padding).
#include "reference/layout.h"

namespace attncheck::reference {

RowLayout LayoutRow(const RowSpec& row) {
  RowLayout layout;
  const int slots = row.slots();
  layout.valid.assign(static_cast<size_t>(slots), 0);
  layout.doc.assign(static_cast<size_t>(slots), -1);
  layout.pos_in_doc.assign(static_cast<size_t>(slots), -1);
  layout.positions.assign(static_cast<size_t>(slots), 0);
  layout.real_index.assign(static_cast<size_t>(slots), -1);

  int slot = row.left_pad;  // the first left_pad slots are pads
  int real_index = 0;
  for (int document = 0; document < static_cast<int>(row.documents.size()); ++document) {
    for (int pos_in_doc = 0; pos_in_doc < row.documents[static_cast<size_t>(document)]; ++pos_in_doc) {
      const size_t s = static_cast<size_t>(slot);
      layout.valid[s] = 1;
      layout.doc[s] = document;
      layout.pos_in_doc[s] = pos_in_doc;
      layout.positions[s] = row.position_offset + pos_in_doc;  // positions reset per document
      layout.real_index[s] = real_index;
      ++slot;
      ++real_index;
    }
  }
  // The remaining right_pad slots stay pads (valid 0, doc −1, position 0).
  return layout;
}

int LeadingDocument(const RowSpec& spec) {
  for (size_t d = 0; d < spec.documents.size(); ++d) {
    if (spec.documents[d] > 0) return static_cast<int>(d);
  }
  return 0;
}

QueryFacts QueryAt(const RowSpec& spec, const RowLayout& row, int slot) {
  if (slot < 0) return {true, LeadingDocument(spec), slot - spec.left_pad, spec.position_offset + slot - spec.left_pad};
  const size_t s = static_cast<size_t>(slot);
  return {row.valid[s] != 0, row.doc[s], row.pos_in_doc[s], row.positions[s]};
}

std::vector<int> CumsumPositionIds(std::span<const uint8_t> attention_mask) {
  std::vector<int> position_ids(attention_mask.size(), 0);
  int cumsum = 0;
  for (size_t t = 0; t < attention_mask.size(); ++t) {
    cumsum += attention_mask[t] != 0 ? 1 : 0;
    position_ids[t] = attention_mask[t] != 0 ? cumsum - 1 : 0;  // masked_fill(mask == 0, 0)
  }
  return position_ids;
}

}  // namespace attncheck::reference
