// Mutant adapters: the eigen kernel with exactly one classic attention bug each,
// named `mutant:<name>` and registered as not correct (the default gate and `*`
// skip them; `mutant:*` names them all). They prove every law catches the bugs it
// exists for: tests/mutation_score_test.cc and `attncheck bench --kill` run them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registrar.h"

namespace attncheck::mutants {

struct MutantInfo {
  std::string name;         // "mutant:causal-off-by-one"
  std::string description;  // the defect, one line (`attncheck list`)
  // The laws (properties/laws.h names) that exist to catch this bug; at least one
  // of them must fail on it. reference-agreement is listed only where no other law
  // is about the bug's class.
  std::vector<std::string> laws;
};

// Every mutant, in registration order.
const std::vector<MutantInfo>& Mutants();

// The MutantInfo of `name` ("mutant:…"), or nullptr.
const MutantInfo* FindMutant(std::string_view name);

// A fresh mutant adapter. With defective = false its one defect is switched off:
// the same capabilities and code path without the bug (the control a test runs
// on a killing case to show the law failed because of the defect).
// Throws std::invalid_argument for an unknown name.
std::unique_ptr<Adapter> MakeMutant(std::string_view name, bool defective = true);

// Hands every mutant to the registry as AdapterKind::kDefective.
void RegisterMutantAdapters(Registrar& registry);

}  // namespace attncheck::mutants
