// For the report tests (html_render, handover_report): run one law on one case
// and enrich the verdict as a gate does before it writes a report.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "properties/laws.h"
#include "reports/enrich.h"

namespace attncheck::test {

inline FailureReport EnrichedFailure(const std::string& law_name, const std::string& adapter_name, const Case& c,
                                     const EnrichOptions& options = {}) {
  const Law* law = FindLaw(law_name);
  EXPECT_NE(law, nullptr) << law_name;
  const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);
  FailureReport report;
  report.law = law_name;
  report.adapter = adapter_name;
  report.seed = 1;
  report.c = c;
  report.verdict = law->check(*adapter, c, Options{});
  EnrichFailure(report, *adapter, *law, options);
  return report;
}

}  // namespace attncheck::test
