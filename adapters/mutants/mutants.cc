// The mutant table (mutants.h): every bug class's mutants in one list, their
// factories, and the registration the adapter registry calls.
#include "adapters/mutants/mutants.h"

#include <stdexcept>

#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

const std::vector<MutantDef>& Definitions() {
  static const std::vector<MutantDef>* definitions = [] {
    auto* all = new std::vector<MutantDef>;  // never destroyed (used from the registry's statics)
    for (std::vector<MutantDef> (*group)() : {MaskMutants, PositionMutants, RopeMutants, NumericMutants, ExtremeMutants,
                                                     DescriptorMutants, VarlenMutants, BackwardMutants}) {
      for (MutantDef& def : group()) all->push_back(std::move(def));
    }
    return all;
  }();
  return *definitions;
}

const MutantDef* FindDefinition(std::string_view name) {
  for (const MutantDef& def : Definitions())
    if (def.info.name == name) return &def;
  return nullptr;
}

}  // namespace

const std::vector<MutantInfo>& Mutants() {
  static const std::vector<MutantInfo>* infos = [] {
    auto* list = new std::vector<MutantInfo>;
    for (const MutantDef& def : Definitions()) list->push_back(def.info);
    return list;
  }();
  return *infos;
}

const MutantInfo* FindMutant(std::string_view name) {
  const MutantDef* def = FindDefinition(name);
  return def ? &def->info : nullptr;
}

std::unique_ptr<Adapter> MakeMutant(std::string_view name, bool defective) {
  const MutantDef* def = FindDefinition(name);
  if (!def) throw std::invalid_argument("unknown mutant '" + std::string(name) + "'");
  std::unique_ptr<MutantAdapter> adapter = def->make();
  adapter->Configure(def->info.name, def->info.description, defective);
  return adapter;
}

void RegisterMutantAdapters(Registrar& registry) {
  for (const MutantDef& def : Definitions()) {
    const std::string name = def.info.name;
    registry.Add({name, def.info.description, AdapterKind::kDefective}, [name] { return MakeMutant(name); });
  }
}

}  // namespace attncheck::mutants
