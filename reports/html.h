// The HTML failure report and run index (DESIGN §7): report.html beside
// report.md in each failure folder, self-contained (inline CSS and SVG, no
// external assets), and one index.html per run linking every failure.
//
// The influence heatmap sets the measured influence map against the reference
// visibility, one cell per (query row i, key slot j): a leak (influence where the
// key is not visible) is red, over-masking (visible, no influence) blue, agreement
// grey (visible, read) or white (blocked, not read).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "properties/verdict.h"
#include "reports/markdown.h"
#include "reports/summary.h"

namespace attncheck {

// & < > " ' escaped, control characters other than \n and \t dropped.
std::string HtmlEscaped(std::string_view text);

// What one cell of the influence heatmap shows. A key read by a row with no
// visible key is a leak, unless the law said the adapter's contract lets such
// rows read (Verdict::empty_rows_may_read): then it is kEmptyRowRead (policy).
enum class CellKind { kReadVisible, kBlocked, kLeak, kOverMasked, kEmptyRowRead };
CellKind ClassifyCell(bool visible, bool influenced, bool row_has_visible_key, bool empty_rows_may_read = false);
std::string_view CellColor(CellKind kind);  // "#d62728" for a leak, …

// One batch row's heatmaps: expected visibility (dark = visible), and the
// influence map against it. visible / influence: [B, Tq, Tk].
std::string VisibilitySvg(const std::vector<uint8_t>& visible, int b, int tq, int tk);
std::string InfluenceSvg(const std::vector<uint8_t>& visible, const std::vector<uint8_t>& influence, int b, int tq,
                         int tk, bool empty_rows_may_read = false);
// Per-row error: one cell per (b, h) line and query row i, coloured by error / bound.
std::string RowErrorSvg(const RowErrors& rows);

// A ready-to-paste gtest regression test with the case JSON inline.
std::string GtestRegression(const FailureReport& report);

// The report.html text; `dir` is the folder it lives in (for the replay command).
std::string HtmlReport(const FailureReport& report, std::string_view dir);

// The index.html text of a run whose report folder is `report_dir`: a law ×
// adapter matrix (pass / fail / error / hazard / skip / under-covered, linking
// the groups of each cell), one section per failure group (reports/failure_groups.h:
// its case, report.html, rerun classification and every pair it breaks), then
// every pair's counts and its declared feature pairs under kUnderCoveredFeaturePair
// (reports/coverage.h).
std::string IndexHtml(const std::string& report_dir, const RunSummary& summary);
// Writes <report_dir>/index.html (atomic) and returns its path.
std::string WriteIndexHtml(const std::string& report_dir, const RunSummary& summary);

}  // namespace attncheck
