// The laws (DESIGN §6), one file each: properties/<law>.cc defines
// check_<law>(Adapter&, const Case&, const Options&). This table names them for
// the program, the suites, the fuzzers and the corpus replay.
#pragma once

#include <span>
#include <string_view>

#include "adapters/adapter.h"
#include "cases/case.h"
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

using LawCheck = Verdict (*)(Adapter&, const Case&, const Options&);

struct Law {
  std::string_view name;         // "non-interference"
  std::string_view description;  // one line
  LawCheck check;
};

std::span<const Law> AllLaws();
const Law* FindLaw(std::string_view name);

}  // namespace attncheck
