// Law 2, left-padding invariance (DESIGN §6): adding p left pads (or p right pads)
// to every row, with the key-validity mask and position_ids = cumsum(mask) − 1
// that the layout derives, leaves every real row's output unchanged. The padded
// tokens keep their data (the generator keys data by real-token identity), so the
// two runs differ only in layout. Compared adapter against itself within twice the
// tolerance of DESIGN §6 (each run may carry its own rounding).
#include <fmt/format.h>

#include "properties/law_run.h"
#include "properties/tolerance.h"

namespace attncheck {

Verdict check_left_padding(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_left_padding, adapter);
  if (!law.Open(c)) return law.stop();
  const reference::Scenario& s = law.scenario();
  const AdapterRun& base = law.base();
  Oracle oracle(s, SharedAngles(options));
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);

  // Left pads shift every slot; right pads add query slots after the real ones
  // (queries are the last Tq slots), so the query count grows with them.
  const int pads[] = {1 + static_cast<int>(c.seed % 3), 4};
  for (int side = 0; side < 2; ++side) {
    for (int p : pads) {
      Case padded = c;
      for (RowSpec& row : padded.rows) (side == 0 ? row.left_pad : row.right_pad) += p;
      if (side == 1) padded.query_len += p;
      const reference::Scenario t = reference::MakeScenario(padded);
      const std::optional<AdapterRun> run = law.AttendRelaid(t);
      if (!run) return law.stop();
      // Original query i is padded query i in both layouts.
      TensorD got = base.out;
      for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < c.q_heads; ++h)
          for (int i = 0; i < s.tq; ++i)
            for (int d = 0; d < c.value_dim; ++d) got.at(b, h, i, d) = run->out.at(b, h, i, d);
      const std::string what = fmt::format("with {} extra {} pad(s) per row", p, side == 0 ? "left" : "right");
      Verdict v = oracle.CheckSelf(got, base.out, rows, what);
      if (!v.passed()) {
        v.At(side == 0 ? "with extra left pads" : "with extra right pads", Role::kNumeric);
        v.expected_visibility = s.visible;
        return v;
      }
    }
  }
  return Verdict::Pass();
}

}  // namespace attncheck
