// The HTML failure report and run index (see html.h). Everything is inline:
// one <style> block, SVG heatmaps drawn cell by cell, no scripts, no fonts, no
// external references, so the file reads the same when mailed or attached to CI.
#include "reports/html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cases/case_json.h"
#include "reference/scenario.h"
#include "reports/compared_row.h"
#include "reports/coverage.h"
#include "reports/failure_groups.h"
#include "reports/fingerprint.h"
#include "reports/replay_command.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxBatchRowsDrawn = 8;   // heatmaps drawn per report
constexpr int kMaxErrorLinesDrawn = 64;  // (b, h) lines of the row-error heatmap

constexpr std::string_view kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1340px; }
h1 { font-size: 22px; margin: 0 0 8px 0; }
h2 { font-size: 17px; margin: 22px 0 8px 0; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 14px; }
th { background: #f0f0f0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 9px; color: #fff; font-weight: bold; }
.fail { background: #c0392b; } .error { background: #8e44ad; } .pass { background: #2e8b57; } .skip { background: #888; }
.kind { background: #34495e; }
.maps { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 0; } figcaption { font-size: 13px; color: #444; margin-top: 2px; }
.legend span.sw { display: inline-block; width: 14px; height: 14px; border: 1px solid #999; vertical-align: middle;
  margin: 0 4px 0 12px; }
.legend { font-size: 14px; margin: 6px 0; }
.legend span.item { white-space: nowrap; display: inline-block; margin-right: 6px; }
tr.worst td { background: #fdf0ee; font-weight: bold; }
.note { color: #555; font-size: 14px; }
tr.held td { background: #f3faf5; } tr.broken td { background: #fdf0ee; } tr.under td { background: #fbf5e0; }
tr.hazard td { background: #fdf6ec; } .badge.hazard { background: #d68910; }
p.interrupted { background: #fdf0ee; padding: 0.4em; }
td.m-pass { background: #e3f4e8; } td.m-fail { background: #f8d7d2; } td.m-hazard { background: #fbe5c4; }
td.m-skip { background: #e6e6e6; } td.m-under { background: #f7ecc0; } table.matrix td { font-size: 13px; }
)css";

int CellSize(int columns, int rows) {
  const int by_width = 560 / std::max(columns, 1);  // two maps side by side in 1400 px
  const int by_height = 900 / std::max(rows, 1);
  return std::clamp(std::min(by_width, by_height), 3, 22);
}

// Tick spacing: 1, 2, 5, 10, 20, 50 … so labels stay ≥ 22 px apart.
int TickStep(int cell) {
  for (int step : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}) {
    if (step * cell >= 22) return step;
  }
  return 2000;
}

struct Grid {
  int columns, rows, cell, left, top, width, height;
  std::string_view column_title, row_title;
};

// Roughly the width in px of `text` at font-size 12 (axis titles).
int TitleWidth(std::string_view text) { return static_cast<int>(text.size()) * 7 + 16; }

// The grid and an SVG large enough for its axis titles: the column title runs
// right from the grid's left edge, the row title down from its top edge.
Grid MakeGrid(int columns, int rows, std::string_view column_title, std::string_view row_title, int left = 64) {
  Grid g{columns, rows, CellSize(columns, rows), left, 46, 0, 0, column_title, row_title};
  g.width = std::max(g.left + columns * g.cell + 10, g.left + TitleWidth(column_title));
  g.height = std::max(g.top + rows * g.cell + 10, g.top + TitleWidth(row_title));
  return g;
}

// The SVG opening, axis titles, tick labels and frame; `row_label(r)` names row r.
template <class RowLabel>
std::string SvgOpen(const Grid& g, RowLabel row_label) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      g.width, g.height, g.width, g.height);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", g.width, g.height);
  svg += fmt::format("<text x=\"{}\" y=\"13\" font-size=\"12\" fill=\"#333\">{} &#8594;</text>\n", g.left,
                     HtmlEscaped(g.column_title));
  svg += fmt::format(
      "<text x=\"10\" y=\"{}\" font-size=\"12\" fill=\"#333\" transform=\"rotate(90 10 {})\">{} "
      "&#8594;</text>\n",
      g.top, g.top, HtmlEscaped(g.row_title));
  const int step = TickStep(g.cell);
  for (int c = 0; c < g.columns; c += step) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                       g.left + c * g.cell + g.cell / 2.0, g.top - 6, c);
  }
  const int row_step = std::max(step, g.cell >= 12 ? 1 : TickStep(g.cell));
  for (int r = 0; r < g.rows; r += row_step) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">{}</text>\n", g.left - 4,
                       g.top + r * g.cell + g.cell / 2.0 + 4, HtmlEscaped(row_label(r)));
  }
  return svg;
}

std::string SvgClose(const Grid& g) {
  std::string svg;
  if (g.cell >= 8) {  // faint grid
    svg += "<g stroke=\"#e4e4e4\" stroke-width=\"0.5\">\n";
    for (int c = 1; c < g.columns; ++c)
      svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", g.left + c * g.cell, g.top,
                         g.top + g.rows * g.cell);
    for (int r = 1; r < g.rows; ++r)
      svg += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/>", g.top + r * g.cell, g.left,
                         g.left + g.columns * g.cell);
    svg += "\n</g>\n";
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#777\"/>\n", g.left,
                     g.top, g.columns * g.cell, g.rows * g.cell);
  return svg + "</svg>\n";
}

// A run of `count` cells of one row starting at `column` (runs keep big maps small).
std::string Cell(const Grid& g, int column, int row, std::string_view css_class, std::string_view color,
                 std::string_view title, int count = 1) {
  std::string rect = fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
                                 css_class, g.left + column * g.cell, g.top + row * g.cell, count * g.cell, g.cell,
                                 color);
  if (title.empty()) return rect + "/>\n";
  return rect + "><title>" + HtmlEscaped(title) + "</title></rect>\n";
}

std::string_view CellClass(CellKind kind) {
  switch (kind) {
    case CellKind::kReadVisible: return "read";
    case CellKind::kBlocked: return "blocked";
    case CellKind::kLeak: return "leak";
    case CellKind::kOverMasked: return "overmask";
    case CellKind::kEmptyRowRead: return "emptyrow";
  }
  return "?";
}

std::string_view CellMeaning(CellKind kind) {
  switch (kind) {
    case CellKind::kReadVisible: return "visible and read (agreement)";
    case CellKind::kBlocked: return "blocked and not read (agreement)";
    case CellKind::kLeak: return "LEAK: not visible, but perturbing it changed the row";
    case CellKind::kOverMasked: return "OVER-MASKED: visible, but perturbing it changed nothing";
    case CellKind::kEmptyRowRead: return "row with no visible key: read, as the adapter's contract allows";
  }
  return "?";
}

bool RowHasVisibleKey(const std::vector<uint8_t>& visible, int b, int i, int tq, int tk) {
  const size_t row = (static_cast<size_t>(b) * tq + i) * tk;
  return std::any_of(visible.begin() + row, visible.begin() + row + tk, [](uint8_t x) { return x != 0; });
}

std::string Swatch(std::string_view color, std::string_view label) {
  return fmt::format("<span class=\"item\"><span class=\"sw\" style=\"background:{}\"></span>{}</span>", color,
                     HtmlEscaped(label));
}

// Colour of a row's error / bound: greys up to the bound, reds beyond it.
std::string ErrorColor(double ratio) {
  if (std::isnan(ratio)) return "#f0f0f0";
  if (ratio <= 1.0) {
    const int level = static_cast<int>(std::lround(255 - 90 * std::clamp(ratio, 0.0, 1.0)));
    return fmt::format("#{0:02x}{0:02x}{0:02x}", level);
  }
  if (std::isinf(ratio)) return "#67001f";
  const double t = std::clamp(std::log10(ratio) / 3.0, 0.0, 1.0);  // 1× … 1000×
  const auto mix = [t](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xf4, 0xb2), mix(0xa5, 0x18), mix(0x82, 0x2b));
}

std::string OutcomeBadge(Outcome o) {
  return fmt::format("<span class=\"badge {}\">{}</span>", Name(o), Name(o));
}

std::string RelativeLink(const fs::path& target, const std::string& from_dir) {
  std::error_code error;
  fs::path rel = fs::relative(target, from_dir, error);
  if (error || rel.empty()) rel = target;
  return rel.generic_string();
}

std::string ReadClassification(const fs::path& folder) {
  std::ifstream in(folder / "meta.json");
  if (!in) return "";
  const nlohmann::json meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("classification") || !meta["classification"].is_string()) return "";
  return meta["classification"].get<std::string>();
}

std::string FingerprintTable() {
  std::string html = "<table>\n";
  for (const auto& [label, value] : ThisMachine().Fields())
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", HtmlEscaped(label), HtmlEscaped(value));
  return html + "</table>\n";
}

// The worst element's row, got against want (reports/compared_row.h); empty
// when the law kept no row.
std::string ComparedRowTable(const WorstElement& w, Dtype dtype) {
  const ComparedRow row = CompareRow(w, dtype);
  if (row.lines.empty()) return "";
  std::string html = fmt::format("<h2>Got against want on {}[b={}, h={}, i={}, &#183;]</h2>\n<table>\n<tr>",
                                 HtmlEscaped(w.tensor), w.b, w.h, w.i);
  for (const std::string& name : row.header) html += "<th>" + HtmlEscaped(name) + "</th>";
  html += "</tr>\n";
  for (size_t n = 0; n < row.lines.size(); ++n) {
    html += row.worst[n] ? "<tr class=\"worst\">" : "<tr>";
    for (const std::string& cell : row.lines[n]) html += "<td>" + HtmlEscaped(cell) + "</td>";
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (static_cast<int>(row.lines.size()) < row.dims)
    html += fmt::format("<p class=\"note\">{} of the row's {} dims: those with the largest error.</p>\n",
                        row.lines.size(), row.dims);
  return html;
}

}  // namespace

std::string HtmlEscaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((u < 0x20 && ch != '\n' && ch != '\t') || u == 0x7F) break;
        out += ch;
    }
  }
  return out;
}

CellKind ClassifyCell(bool visible, bool influenced, bool row_has_visible_key, bool empty_rows_may_read) {
  if (!row_has_visible_key) {
    if (!influenced) return CellKind::kBlocked;
    return empty_rows_may_read ? CellKind::kEmptyRowRead : CellKind::kLeak;
  }
  if (visible) return influenced ? CellKind::kReadVisible : CellKind::kOverMasked;
  return influenced ? CellKind::kLeak : CellKind::kBlocked;
}

std::string_view CellColor(CellKind kind) {
  switch (kind) {
    case CellKind::kReadVisible: return "#9a9a9a";
    case CellKind::kBlocked: return "#ffffff";
    case CellKind::kLeak: return "#d62728";
    case CellKind::kOverMasked: return "#1f77b4";
    case CellKind::kEmptyRowRead: return "#f0dfa8";
  }
  return "#000000";
}

std::string VisibilitySvg(const std::vector<uint8_t>& visible, int b, int tq, int tk) {
  const Grid g = MakeGrid(tk, tq, "key slot j", "query row i");
  std::string svg = SvgOpen(g, [](int r) { return std::to_string(r); });
  for (int i = 0; i < tq; ++i) {
    const size_t row = (static_cast<size_t>(b) * tq + i) * tk;
    for (int j = 0; j < tk;) {
      int end = j;
      while (end < tk && visible[row + end] == visible[row + j]) ++end;
      if (visible[row + j]) svg += Cell(g, j, i, "visible", "#3d3d3d", "", end - j);
      j = end;
    }
  }
  return svg + SvgClose(g);
}

std::string InfluenceSvg(const std::vector<uint8_t>& visible, const std::vector<uint8_t>& influence, int b, int tq,
                         int tk, bool empty_rows_may_read) {
  const Grid g = MakeGrid(tk, tq, "key slot j (perturbed)", "query row i");
  std::string svg = SvgOpen(g, [](int r) { return std::to_string(r); });
  for (int i = 0; i < tq; ++i) {
    const bool has_key = RowHasVisibleKey(visible, b, i, tq, tk);
    const size_t row = (static_cast<size_t>(b) * tq + i) * tk;
    const auto kind_at = [&](int j) {
      return ClassifyCell(visible[row + j] != 0, influence[row + j] != 0, has_key, empty_rows_may_read);
    };
    for (int j = 0; j < tk;) {
      const CellKind kind = kind_at(j);
      int end = j + 1;
      while (end < tk && kind_at(end) == kind) ++end;
      if (kind != CellKind::kBlocked) {
        const bool finding = kind == CellKind::kLeak || kind == CellKind::kOverMasked;
        const std::string keys = end - j == 1 ? std::to_string(j) : fmt::format("{}..{}", j, end - 1);
        svg += Cell(g, j, i, CellClass(kind), CellColor(kind),
                    finding ? fmt::format("b={} i={} j={}: {}", b, i, keys, CellMeaning(kind)) : std::string(),
                    end - j);
      }
      j = end;
    }
  }
  return svg + SvgClose(g);
}

std::string RowErrorSvg(const RowErrors& rows) {
  const int lines = std::min(rows.batch * rows.heads, kMaxErrorLinesDrawn);
  const Grid g = MakeGrid(rows.tq, lines, "query row i", "batch row b, head h", 72);
  std::string svg = SvgOpen(g, [&](int r) { return fmt::format("b{} h{}", r / rows.heads, r % rows.heads); });
  for (int line = 0; line < lines; ++line) {
    const int b = line / rows.heads, h = line % rows.heads;
    for (int i = 0; i < rows.tq; ++i) {
      const size_t at = rows.index(b, h, i);
      const double ratio = rows.ratio[at];
      const std::string title =
          std::isnan(ratio) ? fmt::format("b={} h={} i={}: not compared", b, h, i)
                            : fmt::format("b={} h={} i={}: max |error| {:.4g}, {:.3g}x the bound", b, h, i,
                                          rows.max_abs[at], ratio);
      svg += Cell(g, i, line, ratio > 1.0 ? "over" : "within", ErrorColor(ratio), title);
    }
  }
  return svg + SvgClose(g);
}

std::string GtestRegression(const FailureReport& report) {
  const std::string json = ToJson(report.c).dump(2);
  std::string delimiter = "case";
  for (int n = 1; json.find(")" + delimiter + "\"") != std::string::npos; ++n) delimiter = fmt::format("case{}", n);
  std::string adapter_literal = "\"";
  for (char ch : report.adapter) {
    if (ch == '"' || ch == '\\') adapter_literal += '\\';
    adapter_literal += ch;
  }
  adapter_literal += '"';
  std::string test;
  test += "#include <gtest/gtest.h>\n#include <nlohmann/json.hpp>\n\n";
  test += "#include \"adapters/registry.h\"\n#include \"cases/case_json.h\"\n#include \"properties/laws.h\"\n\n";
  test += fmt::format("// {} on {}: the law must hold (this test fails until the bug is fixed).\n", report.law,
                      report.adapter);
  test += fmt::format("TEST(Regression, {}_{}) {{\n", LawTestName(report.law), Hash8(report.c));
  test += fmt::format("  const attncheck::Case c = attncheck::FromJson(nlohmann::json::parse(R\"{}(\n{}\n){}\"));\n",
                      delimiter, json, delimiter);
  test += fmt::format("  const std::unique_ptr<attncheck::Adapter> adapter = attncheck::MakeAdapter({});\n",
                      adapter_literal);
  test += fmt::format("  const attncheck::Verdict v = attncheck::{}(*adapter, c, attncheck::Options{{}});\n",
                      LawCheckFunction(report.law));
  test += "  EXPECT_TRUE(v.passed()) << v.message;\n}\n";
  return test;
}

namespace {

// Markdown text without its code fences (the lines opening or closing one).
std::string Unfenced(const std::string& markdown) {
  std::string text;
  for (size_t at = 0; at < markdown.size();) {
    const size_t end = std::min(markdown.find('\n', at), markdown.size());
    if (markdown.compare(at, 3, "```") != 0) text += markdown.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return text;
}

}  // namespace

std::string HtmlReport(const FailureReport& report, std::string_view dir) {
  const Verdict& v = report.verdict;
  const WorstElement& w = v.worst;
  const bool error = IsAdapterError(v.outcome);
  const std::string case_file = (fs::path(dir) / "case.json").string();
  const std::string title = ReportTitle(report);

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<title>" + HtmlEscaped(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  html += "<h1>" + HtmlEscaped(title) + "</h1>\n";
  if (const std::string note = HazardNote(report); !note.empty()) html += "<p>" + HtmlEscaped(note) + "</p>\n";
  html += "<p>" + OutcomeBadge(v.outcome);
  if (report.classification) {
    html += fmt::format(" <span class=\"badge kind\">{}</span> {}", HtmlEscaped(Name(report.classification->kind)),
                        HtmlEscaped(report.classification->detail));
  } else {
    html += " (not classified: no rerun was made)";
  }
  html += fmt::format("<br><span class=\"note\">case {} of the {} stream of seed {} (stream seed {:#018x})</span></p>\n",
                      report.case_index, HtmlEscaped(report.law), report.seed, report.stream_seed);
  html += "<h2>Case</h2>\n<pre>" + HtmlEscaped(ToLine(report.c)) + "</pre>\n";
  if (report.original) {
    html += "<p class=\"note\">Shrunk from the case the run found (" + HtmlEscaped(report.shrink_note) +
            "):</p>\n<pre>" + HtmlEscaped(ToLine(*report.original)) + "</pre>\n";
  }
  if (const std::optional<RanScenario> ran = DescribeRanScenario(report)) {
    html += "<h2>Scenario the law ran</h2>\n";
    for (const std::string& note : ran->notes) html += "<p>" + HtmlEscaped(note) + "</p>\n";
    if (!ran->case_line.empty()) html += "<pre>" + HtmlEscaped(ran->case_line) + "</pre>\n";
  }
  html += "<h2>What the law requires</h2>\n<p>" + HtmlEscaped(LawRequirement(report.law)) + "</p>\n";
  html += "<h2>What happened</h2>\n<pre>" + HtmlEscaped(v.message.empty() ? "(no message)" : v.message) + "</pre>\n";
  if (!v.passed()) {
    const Signature signature = SignatureOf(report.law, report.c, v);
    html += fmt::format("<p>Signature: <code>{}</code>: {}.</p>\n", HtmlEscaped(signature.Key()),
                        HtmlEscaped(Info(signature.role).meaning));
  }

  // Heatmaps of the scenario the law ran [B, Tq, Tk].
  html += "<h2>Expected visibility and measured influence</h2>\n";
  int batch = 0, tq = 0, tk = 0;
  try {
    const reference::Scenario layout = reference::MakeLayout(v.ran_case ? *v.ran_case : report.c);
    batch = layout.batch;
    tq = layout.tq;
    tk = layout.tk;
  } catch (const std::exception&) {
  }
  const size_t cells = static_cast<size_t>(batch) * tq * tk;
  if (cells == 0 || v.expected_visibility.size() != cells) {
    html += "<p class=\"note\">No visibility data for this case.</p>\n";
  } else {
    const bool have_influence = v.influence.size() == cells;
    if (have_influence) {
      int counts[5] = {0, 0, 0, 0, 0};
      for (int b = 0; b < batch; ++b)
        for (int i = 0; i < tq; ++i) {
          const bool has_key = RowHasVisibleKey(v.expected_visibility, b, i, tq, tk);
          for (int j = 0; j < tk; ++j) {
            const size_t at = (static_cast<size_t>(b) * tq + i) * tk + j;
            ++counts[static_cast<int>(
                ClassifyCell(v.expected_visibility[at] != 0, v.influence[at] != 0, has_key, v.empty_rows_may_read))];
          }
        }
      html += fmt::format(
          "<p>{} <b>{} leaking cell{}</b>, <b>{} over-masked cell{}</b>.</p>\n",
          v.influence_of_gradients
              ? "Gradient influence map (dK/dV): the backward ran once per query row i with an upstream gradient on "
                "that row alone, and every key slot j whose dk or dv became nonzero was marked: a leak is a key that "
                "received gradient from a row that cannot see it."
              : "Influence map: each key slot j was perturbed by a large finite value (twice, with the signs "
                "flipped) and every query row whose output changed bitwise was marked.",
          counts[static_cast<int>(CellKind::kLeak)], counts[static_cast<int>(CellKind::kLeak)] == 1 ? "" : "s",
          counts[static_cast<int>(CellKind::kOverMasked)],
          counts[static_cast<int>(CellKind::kOverMasked)] == 1 ? "" : "s");
      if (counts[static_cast<int>(CellKind::kLeak)] + counts[static_cast<int>(CellKind::kOverMasked)] == 0 &&
          v.role == Role::kNumeric) {
        html += "<p class=\"note\">Every key the adapter reads is one the reference makes visible: this failure "
                "is in the numbers, not in the mask (see got against want below).</p>\n";
      }
      html += "<div class=\"legend\">Influence: " +
              Swatch(CellColor(CellKind::kLeak), "leak: read but not visible (a row with no visible key included)") +
              Swatch(CellColor(CellKind::kOverMasked), "over-masked: visible but not read") +
              Swatch(CellColor(CellKind::kReadVisible), "visible and read") +
              Swatch(CellColor(CellKind::kBlocked), "blocked and not read") +
              (v.empty_rows_may_read
                   ? Swatch(CellColor(CellKind::kEmptyRowRead), "row with no visible key, read as the contract allows")
                   : std::string()) +
              "</div>\n";
    } else {
      html += error ? "<p class=\"note\">The adapter did not answer, so no influence map was measured.</p>\n"
                    : "<p class=\"note\">The influence map was not measured (the adapter cannot run this case's "
                      "attention call, or the case has too many key slots).</p>\n";
    }
    html += "<div class=\"legend\">Expected: " + Swatch("#3d3d3d", "visible (reference)") +
            Swatch("#ffffff", "not visible") + "</div>\n";
    for (int b = 0; b < std::min(batch, kMaxBatchRowsDrawn); ++b) {
      html += "<div class=\"maps\">\n<figure>\n" + VisibilitySvg(v.expected_visibility, b, tq, tk) +
              fmt::format("<figcaption>batch row {}: expected visibility (reference)</figcaption>\n</figure>\n", b);
      if (have_influence) {
        html += "<figure>\n" + InfluenceSvg(v.expected_visibility, v.influence, b, tq, tk, v.empty_rows_may_read) +
                fmt::format("<figcaption>batch row {}: measured {} vs expected</figcaption>\n</figure>\n", b,
                            v.influence_of_gradients ? "gradient influence (dK/dV)" : "influence");
      }
      html += "</div>\n";
    }
    if (batch > kMaxBatchRowsDrawn)
      html += fmt::format("<p class=\"note\">{} more batch rows not drawn.</p>\n", batch - kMaxBatchRowsDrawn);
  }

  html += "<h2>Worst element</h2>\n";
  if (error) {
    html += "<p>None: the adapter crashed, hung, threw or broke the buffer contract before any element could be "
            "compared.</p>\n";
  } else {
    const bool key = w.key >= 0;
    html += fmt::format("<table>\n<tr><th>b</th><th>h</th><th>i</th><th>{}</th>{}<th>got</th><th>want</th>"
                        "<th>error</th><th>bound</th></tr>\n",
                        w.last_index(), key ? "<th>key</th>" : "");
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}"
                        "</td></tr>\n</table>\n",
                        w.b, w.h, w.i, w.j, key ? fmt::format("<td>{}</td>", w.key) : "", Exact(w.got), Exact(w.want),
                        Exact(w.error), HtmlEscaped(BoundText(w.bound, w.got, w.want, report.c.dtype)));
    html += fmt::format("<p class=\"note\">max abs {}, max rel {}, bound {}</p>\n", Exact(v.max_abs), Exact(v.max_rel),
                        HtmlEscaped(BoundText(v.bound, w.got, w.want, report.c.dtype)));
    if (!w.tensor.empty()) html += "<p class=\"note\">element " + HtmlEscaped(Describe(w)) + "</p>\n";
    html += ComparedRowTable(w, report.c.dtype);
  }

  if (!v.row_errors.empty()) {
    html += "<h2>Per-row error</h2>\n";
    html += "<p>" + HtmlEscaped(v.row_errors.what) +
            ": the largest |got − want| of each (batch row, head, query row), coloured by its ratio to the "
            "bound.</p>\n";
    html += "<div class=\"legend\">" + Swatch(ErrorColor(0.0), "0") + Swatch(ErrorColor(1.0), "at the bound") +
            Swatch(ErrorColor(2.0), "over the bound") + Swatch(ErrorColor(1000.0), "1000× the bound") +
            Swatch(ErrorColor(std::nan("")), "not compared") + "</div>\n";
    html += "<figure>\n" + RowErrorSvg(v.row_errors) + "</figure>\n";
    if (v.row_errors.batch * v.row_errors.heads > kMaxErrorLinesDrawn)
      html += fmt::format("<p class=\"note\">Only the first {} (b, h) lines are drawn.</p>\n", kMaxErrorLinesDrawn);
  }

  html += "<h2>Replay</h2>\n<p class=\"note\">On this machine:</p>\n<pre>" +
          HtmlEscaped(ReportReplayCommand(report, case_file)) +
          "</pre>\n<p class=\"note\">From inside this folder, also once it is copied or zipped and sent "
          "elsewhere:</p>\n<pre>" + HtmlEscaped(ReportFolderReplayCommand(report, dir)) + "</pre>\n";
  html += "<p class=\"note\">It exits 1 while the law still fails, 0 once it holds.</p>\n";
  if (HandsOffDownstream(report)) {  // the user's project: its corpus, installed files only
    html += "<h2>Regression test</h2>\n<p class=\"note\">As report.md says (a case file in your corpus folder, "
            "replayed by attncheck_add_corpus):</p>\n<pre>" + HtmlEscaped(Unfenced(DownstreamRegression(report, case_file))) +
            "</pre>\n";
  } else {
    html += "<h2>Regression test</h2>\n<p class=\"note\">Ready to paste into a tests/*_test.cc file (the case is "
            "inline):</p>\n<pre>" + HtmlEscaped(GtestRegression(report)) + "</pre>\n";
  }
  html += "<h2>Machine and library</h2>\n" + FingerprintTable();
  html += "<p class=\"note\">Variables that change a run: " + HtmlEscaped(EnvironmentLine()) + "</p>\n";
  html += "</body>\n</html>\n";
  return html;
}

namespace {

// A law × adapter cell of the index's matrix: its CSS class suffix and word.
struct MatrixStatus {
  std::string_view css, word;
};

MatrixStatus StatusOf(const LawResult& r) {
  if (!r.held()) return {"fail", r.failed > 0 ? "fail" : "error"};
  if (NothingChecked(r)) return {"skip", "skip"};
  if (UnderCovered(r)) return {"under", "under-covered"};
  if (r.hazards > 0) return {"hazard", "hazard"};
  return {"pass", "pass"};
}

// Law rows × adapter columns, each cell a status linking the groups of its pair.
std::string MatrixHtml(const RunSummary& summary, const std::vector<FailureGroup>& groups) {
  std::vector<std::string> laws, adapters;
  for (const LawResult& r : summary.results) {
    if (std::find(laws.begin(), laws.end(), r.law) == laws.end()) laws.push_back(r.law);
    if (std::find(adapters.begin(), adapters.end(), r.adapter) == adapters.end()) adapters.push_back(r.adapter);
  }
  std::string html = "<table class=\"matrix\">\n<tr><th>law \\ adapter</th>";
  for (const std::string& adapter : adapters) html += "<th>" + HtmlEscaped(adapter) + "</th>";
  html += "</tr>\n";
  for (const std::string& law : laws) {
    html += "<tr><th>" + HtmlEscaped(law) + "</th>";
    for (const std::string& adapter : adapters) {
      const auto r = std::find_if(summary.results.begin(), summary.results.end(),
                                  [&](const LawResult& x) { return x.law == law && x.adapter == adapter; });
      if (r == summary.results.end()) {
        html += "<td></td>";
        continue;
      }
      const MatrixStatus status = StatusOf(*r);
      std::string links;
      for (const FailureGroup& g : groups) {
        for (const GroupMember& m : g.members) {
          if (m.law == law && m.adapter == adapter) links += fmt::format(" <a href=\"#{}\">{}</a>", g.id, g.id);
        }
      }
      html += fmt::format("<td class=\"m-{}\" title=\"{} cases: {} passed, {} failed, {} hazards, {} errors, {} "
                          "skipped; {}\">{}{}</td>",
                          status.css, r->cases, r->passed, r->failed, r->hazards, r->errors, r->skipped,
                          HtmlEscaped(CoverageCell(*r)), status.word, links);
    }
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

// What every failure record of the run shares: "mask=bool-visible, batch row 1,
// visibility=causal, dtype=f32" (only the parts all records agree on); empty
// when there is no record or they share none of them.
std::string CommonToAllFailures(const RunSummary& summary) {
  struct Part {
    std::string_view label;
    std::string FailureRecord::*text;  // null: the batch row
  };
  constexpr Part kParts[] = {{"mask=", &FailureRecord::mask},
                             {"batch row ", nullptr},
                             {"visibility=", &FailureRecord::visibility},
                             {"dtype=", &FailureRecord::dtype}};
  std::vector<const FailureRecord*> records;
  for (const LawResult& r : summary.results)
    for (const FailureRecord& f : r.failures) records.push_back(&f);
  if (records.empty()) return "";
  std::vector<std::string> shared;
  for (const Part& part : kParts) {
    const auto value = [&](const FailureRecord* f) {
      if (part.text != nullptr) return f->*part.text;
      return f->batch_row >= 0 ? std::to_string(f->batch_row) : std::string();
    };
    const std::string first = value(records.front());
    if (first.empty()) continue;
    if (std::all_of(records.begin(), records.end(), [&](const FailureRecord* f) { return value(f) == first; })) {
      shared.push_back(std::string(part.label) + first);
    }
  }
  std::string line;
  for (const std::string& part : shared) line += (line.empty() ? "" : ", ") + part;
  return line;
}

// One section per group: its case, its report, and every pair it breaks.
std::string GroupsHtml(const std::string& report_dir, const std::vector<FailureGroup>& groups) {
  if (groups.empty()) return "<p>No failures.</p>\n";
  std::string html;
  for (const FailureGroup& g : groups) {
    const fs::path folder = fs::path(g.report->case_file).parent_path();
    const fs::path page = fs::exists(folder / "report.html") ? folder / "report.html" : fs::path(g.report->report_file);
    const std::string kind = ReadClassification(folder);
    html += fmt::format("<h3 id=\"{}\">{} · {} pair{} · <a href=\"{}\">report</a></h3>\n", g.id, g.id,
                        g.members.size(), g.members.size() == 1 ? "" : "s",
                        HtmlEscaped(RelativeLink(page, report_dir)));
    if (!g.signature.empty()) {
      html += fmt::format("<p>signature <code>{}</code>{}</p>\n", HtmlEscaped(g.signature),
                          g.repeats > 0 ? fmt::format(" · {} more failing checks of it", g.repeats) : "");
    }
    html += fmt::format("<p><code>{}</code>{}</p>\n",
                        HtmlEscaped(GroupCaseLine(g)),
                        kind.empty() ? std::string() : " rerun: <span class=\"badge kind\">" + HtmlEscaped(kind) + "</span>");
    html += "<table>\n<tr><th>law</th><th>adapter</th><th>outcome</th><th>message</th><th>more failing cases not "
            "written</th></tr>\n";
    for (const GroupMember& m : g.members) {
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"note\">{}</td><td>{}</td></tr>\n",
                          HtmlEscaped(m.law), HtmlEscaped(m.adapter), OutcomeBadge(m.first->outcome),
                          HtmlEscaped(m.first->message.substr(0, m.first->message.find('\n'))), m.pair_not_written);
    }
    html += "</table>\n";
  }
  return html;
}

// Every declared feature pair under kUnderCoveredFeaturePair (reports/coverage.h),
// by law × adapter, saying which cannot reach it by construction.
std::string FeaturePairsHtml(const RunSummary& summary) {
  std::string rows;
  size_t declared = 0, under = 0;
  for (const LawResult& r : summary.results) {
    declared += r.feature_pairs.size();
    for (const FeaturePairShare& p : UnderCoveredFeaturePairs(r)) {
      ++under;
      const std::string note = p.count.max_share == 0.0 ? "never drawn together: " + p.count.limit
                               : p.unreachable()
                                   ? fmt::format("at most {:.1f}% by construction ({})", 100.0 * p.count.max_share,
                                                 p.count.limit)
                                   : std::string();
      rows += fmt::format("<tr class=\"under\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td>"
                          "<td class=\"note\">{}</td></tr>\n",
                          HtmlEscaped(r.law), HtmlEscaped(r.adapter), HtmlEscaped(p.pair), p.cases, 100.0 * p.share,
                          HtmlEscaped(note));
    }
  }
  std::string html = fmt::format("<h2>Feature pairs: {} of {} declared under {:.0f}% of the cases</h2>\n", under,
                                 declared, 100.0 * kUnderCoveredFeaturePair);
  if (rows.empty()) return html;
  return html + "<table>\n<tr><th>law</th><th>adapter</th><th>pair</th><th>cases</th><th>share</th><th>note</th></tr>\n" +
         rows + "</table>\n";
}

}  // namespace

std::string IndexHtml(const std::string& report_dir, const RunSummary& summary) {
  int failures = 0, hazards = 0;
  int unchecked = 0;  // pairs that checked nothing: never shown as held
  for (const LawResult& r : summary.results) {
    failures += r.failed + r.errors;
    hazards += r.hazards;
    unchecked += NothingChecked(r) ? 1 : 0;
  }
  const std::vector<FailureGroup> groups = GroupFailures(summary);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>attncheck run";
  html += "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  html += fmt::format("<h1>attncheck run: {}</h1>\n",
                      failures > 0    ? fmt::format("{} failing cases", failures)
                      : unchecked > 0 ? fmt::format("no failure, but {} pairs checked nothing", unchecked)
                      : hazards > 0   ? fmt::format("every law held; {} hazards", hazards)
                                      : std::string("every law held"));
  html += fmt::format("<p class=\"note\">seed {} · {}</p>\n", summary.seed, HtmlEscaped(ThisMachine().Line()));
  if (!summary.interrupted_by.empty()) {
    html += fmt::format("<p class=\"interrupted\"><strong>Interrupted by {}</strong>: the counts are of the cases "
                        "that ran.</p>\n", HtmlEscaped(summary.interrupted_by));
  }
  if (const std::string common = CommonToAllFailures(summary); !common.empty()) {
    html += "<p class=\"common\"><strong>every failure: " + HtmlEscaped(common) + "</strong></p>\n";
  }
  html += "<h2>Laws × adapters</h2>\n" + MatrixHtml(summary, groups);
  html += fmt::format("<h2>Failures by cause: {} signature{}</h2>\n", groups.size(), groups.size() == 1 ? "" : "s");
  html += GroupsHtml(report_dir, groups);

  html += "<h2>Counts</h2>\n<table>\n<tr><th>law</th><th>adapter</th><th>cases</th><th>passed</th>"
          "<th>failed</th><th>hazards</th><th>errors</th><th>skipped</th><th>coverage</th><th>seconds</th></tr>\n";
  for (const LawResult& r : summary.results) {
    html += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{:.2f}</td>"
        "</tr>\n",
        !r.held() ? "broken" : UnderCovered(r) ? "under" : r.hazards > 0 ? "hazard" : "held", HtmlEscaped(r.law),
        HtmlEscaped(r.adapter), r.cases, r.passed, r.failed, r.hazards, r.errors, r.skipped,
        HtmlEscaped(CoverageCell(r)), r.seconds);
  }
  html += "</table>\n" + FeaturePairsHtml(summary) + "</body>\n</html>\n";
  return html;
}

std::string WriteIndexHtml(const std::string& report_dir, const RunSummary& summary) {
  const std::string path = (fs::path(report_dir) / "index.html").string();
  WriteFileAtomic(path, IndexHtml(report_dir, summary));
  return path;
}

}  // namespace attncheck
