// Per query row error of a differential law (report data, DESIGN §7): for each
// (b, h, i) the largest |got − want| over the value dims and its ratio to the
// bound there, so a report can draw which rows broke the tolerance.
#pragma once

#include <string_view>
#include <vector>

#include "properties/verdict.h"
#include "reference/tensor.h"

namespace attncheck {

// got, want, bound: [B, Hq, Tq, Dv]; rows with row_mask[b·Tq + i] == 0 get ratio
// NaN (not compared) and max_abs 0; an empty row_mask compares every row. The
// allowed error of an element is bound_factor · bound (2 for an adapter compared
// with itself, as Oracle::CheckSelf does). A non-finite got against a finite want
// counts as an infinite error.
RowErrors MeasureRowErrors(const TensorD& got, const TensorD& want, const TensorD& bound, double bound_factor,
                           const std::vector<uint8_t>& row_mask, std::string_view what);

// Copies the row of element e, got[e.b, e.h, e.i, ·] and want[…], into
// e.row_got / e.row_want (report data: the table of got against want).
void KeepRow(WorstElement& e, const TensorD& got, const TensorD& want);

}  // namespace attncheck
