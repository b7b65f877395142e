// What a written failure report measures beyond the verdict (DESIGN §7), done
// only for failures that get a report so gates stay fast: the influence map of
// the case's attention call set against the expected visibility, the per-row
// error (kept from a differential law; else adapter vs oracle for orientation),
// and the rerun classification.
#pragma once

#include "adapters/adapter.h"
#include "properties/laws.h"
#include "reports/markdown.h"

namespace attncheck {

struct EnrichOptions {
  int reruns = 2;                 // reruns for the classification
  int max_influence_keys = 512;   // larger cases get no influence map (2 adapter calls per key)
};

// Fills report.verdict.expected_visibility and .influence ([B, Tq, Tk] of the
// scenario the law ran: verdict.ran_case where the law extended the case, else
// the case's own; replacing data of another derived scenario), .row_errors when
// the law left them empty, and report.classification. Never throws: what cannot
// be measured stays empty and the report says so. `adapter` is the instance the
// failure came from (its state is part of the story).
void EnrichFailure(FailureReport& report, Adapter& adapter, const Law& law, const EnrichOptions& options = {});

}  // namespace attncheck
