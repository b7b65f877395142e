// How `attncheck probe` prints its report (properties/probe.h): one line per item,
// "declared / observed / agrees", the evidence under it; the same as JSON.
#include <fmt/format.h>

#include "properties/probe.h"

namespace attncheck {

std::string ToText(const ProbeReport& report) {
  std::string text = fmt::format("probe {}: contract declared vs. observed\n", report.adapter);
  for (const ProbeItem& item : report.items) {
    text += fmt::format("  {:<52} declared {:<30} observed {:<30} {}\n", item.name, item.declared, item.observed,
                        item.agrees ? "agrees" : "CONTRADICTS");
    if (!item.evidence.empty()) text += fmt::format("      evidence: {}\n", item.evidence);
  }
  if (!report.fault.empty()) {
    text += fmt::format("adapter fault (the probe stopped): {}\n", report.fault);
  } else if (report.agrees()) {
    text += "every observation agrees with the declaration\n";
  } else {
    int contradictions = 0;
    for (const ProbeItem& item : report.items) contradictions += item.agrees ? 0 : 1;
    text += fmt::format("{} observation(s) contradict the declaration\n", contradictions);
  }
  return text;
}

nlohmann::json ToJson(const ProbeReport& report) {
  nlohmann::json items = nlohmann::json::array();
  for (const ProbeItem& item : report.items) {
    items.push_back({{"name", item.name},
                     {"declared", item.declared},
                     {"observed", item.observed},
                     {"agrees", item.agrees},
                     {"evidence", item.evidence}});
  }
  return {{"adapter", report.adapter}, {"agrees", report.agrees()}, {"fault", report.fault}, {"items", items}};
}

}  // namespace attncheck
