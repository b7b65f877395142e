// The laws (DESIGN §6), one file each: properties/<law>.cc defines
// check_<law>(Adapter&, const Case&, const Options&). This table is each law's
// one identity (name, check, texts, suite) for the program, the suites, the
// fuzzers, the reports and the corpus replay; RunLaw is the one way to run one.
#pragma once

#include <span>
#include <string_view>

#include "adapters/adapter.h"
#include "cases/case.h"
#include "cases/law_needs.h"
#include "properties/verdict.h"

namespace attncheck {

Verdict check_non_interference(Adapter&, const Case&, const Options&);
Verdict check_left_padding(Adapter&, const Case&, const Options&);
Verdict check_packed_isolation(Adapter&, const Case&, const Options&);
Verdict check_rope_relative(Adapter&, const Case&, const Options&);
Verdict check_decode_consistency(Adapter&, const Case&, const Options&);
Verdict check_masked_rows(Adapter&, const Case&, const Options&);
Verdict check_reference_agreement(Adapter&, const Case&, const Options&);
Verdict check_mask_conventions(Adapter&, const Case&, const Options&);
Verdict check_gqa(Adapter&, const Case&, const Options&);
// The backward pass (properties/backward_*.cc), on adapters with Capabilities::has_backward.
Verdict check_backward_agreement(Adapter&, const Case&, const Options&);
Verdict check_backward_non_interference(Adapter&, const Case&, const Options&);
Verdict check_backward_masked_rows(Adapter&, const Case&, const Options&);
Verdict check_backward_gqa(Adapter&, const Case&, const Options&);
Verdict check_backward_packed_isolation(Adapter&, const Case&, const Options&);
Verdict check_backward_self_consistency(Adapter&, const Case&, const Options&);

using LawCheck = Verdict (*)(Adapter&, const Case&, const Options&);

struct Law {
  std::string_view name;         // "non-interference"
  std::string_view description;  // one line (`attncheck list`)
  LawCheck check;
  std::string_view requirement;  // what the law requires, a few sentences (reports)
  std::string_view suite;        // the RapidCheck suite of its properties (properties/laws_suite.cc)
  // What its cases need: drivers draw the law's stream as
  // Decode(source, *NarrowToNeeds(caps, needs, &why), needs) (cases/law_needs.h).
  LawNeeds needs = {};
};

std::span<const Law> AllLaws();
const Law* FindLaw(std::string_view name);
// The row of a check function of the table (for the law files: properties/law_run.h).
const Law& LawOf(LawCheck check);

// Runs the law; anything thrown becomes an error verdict carrying the law's name
// ("<law> threw: <what>").
Verdict RunLaw(const Law& law, Adapter& adapter, const Case& c, const Options& options) noexcept;

}  // namespace attncheck
