// Per query row error of a differential comparison (see row_error.h).
#include "properties/row_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attncheck {

RowErrors MeasureRowErrors(const TensorD& got, const TensorD& want, const TensorD& bound, double bound_factor,
                           const std::vector<uint8_t>& row_mask, std::string_view what) {
  RowErrors rows;
  rows.batch = got.shape[0];
  rows.heads = got.shape[1];
  rows.tq = got.shape[2];
  rows.what = std::string(what);
  const size_t n = static_cast<size_t>(rows.batch) * rows.heads * rows.tq;
  rows.max_abs.assign(n, 0.0);
  rows.ratio.assign(n, std::numeric_limits<double>::quiet_NaN());
  const int dv = got.shape[3];
  for (int b = 0; b < rows.batch; ++b)
    for (int i = 0; i < rows.tq; ++i) {
      if (!row_mask.empty() && !row_mask[static_cast<size_t>(b) * rows.tq + i]) continue;
      for (int h = 0; h < rows.heads; ++h) {
        double worst = 0.0, worst_ratio = 0.0;
        for (int d = 0; d < dv; ++d) {
          const double g = got.at(b, h, i, d), w = want.at(b, h, i, d);
          double error = std::abs(g - w);
          if (!std::isfinite(g) && std::isfinite(w)) error = std::numeric_limits<double>::infinity();
          if (std::isnan(error)) continue;  // both NaN or both the same infinity: no error to draw
          const double allowed = bound_factor * bound.at(b, h, i, d);
          const double ratio = allowed > 0.0 ? error / allowed : (error > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
          worst = std::max(worst, error);
          worst_ratio = std::max(worst_ratio, ratio);
        }
        rows.max_abs[rows.index(b, h, i)] = worst;
        rows.ratio[rows.index(b, h, i)] = worst_ratio;
      }
    }
  return rows;
}

void KeepRow(WorstElement& e, const TensorD& got, const TensorD& want) {
  const int dv = got.shape[3];
  e.row_got.resize(dv);
  e.row_want.resize(dv);
  for (int d = 0; d < dv; ++d) {
    e.row_got[d] = got.at(e.b, e.h, e.i, d);
    e.row_want[d] = want.at(e.b, e.h, e.i, d);
  }
}

}  // namespace attncheck
