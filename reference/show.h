// `attncheck show`: a scenario printed for a person (the worked example's debug
// trick "print one attention row"): positions, validity, documents, the visibility
// matrix of one batch row, the keys one query sees, its oracle attention row, and
// the visibility descriptors a FlashAttention-class kernel would get for the case.
#pragma once

#include <string>

#include "reference/scenario.h"

namespace attncheck::reference {

// Stable, line-oriented format ("label: values", values separated by single spaces):
//   case: <ToLine(c)>
//   batch row: b
//   key positions: 0 0 0 1 2
//   query positions: 0 0 0 1 2
//   key valid: 0 0 1 1 1
//   documents: - - 0 0 0              (document index per key slot, "-" for pads)
//   visibility (rows = queries, 1 = visible):
//   0 0 0 0 0                         (Tq lines of Tk digits)
//   …
//   row i sees keys: 2 3 4            (or "row i sees no key (all masked)")
//   attention row i (head 0): 0.0000 0.0000 0.3333 0.3333 0.3333
//   descriptor (padded batch):        (or "descriptor (padded batch): none, <reason>")
//   causal: bottom-right              (then one "name: values" line per part set:
//   window (left, right): (-1, -1)     cu_seqlens_q/k, seqused_q/k, leftpad_k,
//   …                                  prefix_len, chunk, block table[s], alibi slopes)
//   descriptor (varlen, paged by 4):
//   …
// row: batch row; query: the query index, −1 = the last query. Tensors are
// generated from the case when the scenario holds only the layout.
std::string Show(const Scenario& s, int row, int query = -1);

}  // namespace attncheck::reference
