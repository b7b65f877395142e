// `attncheck show`: a scenario printed for a person (the worked example's debug
// trick "print one attention row"): positions, validity, documents, the visibility
// matrix of one batch row, the keys one query sees, and its oracle attention row.
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
// row: batch row; query: the query index, −1 = the last query. Tensors are
// generated from the case when the scenario holds only the layout.
std::string Show(const Scenario& s, int row, int query = -1);

}  // namespace attncheck::reference
