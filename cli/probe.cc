// `attncheck probe --adapter X`: a kernel's contract inferred by experiment and
// printed beside its declaration (properties/probe.h). Exit 1 when an observation
// contradicts the declaration, 3 when the adapter crashed or answered garbage.
#include <memory>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cli/commands.h"
#include "properties/probe.h"

namespace attncheck::cli {
namespace {

struct ProbeOptions {
  std::string adapter;
  std::string json;
  uint64_t seed = 1;
};

int RunProbe(const ProbeOptions& options) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(options.adapter);
  const ProbeReport report = Probe(*adapter, options.seed);
  fmt::print("{}", ToText(report));
  if (!options.json.empty()) WriteFileAtomic(options.json, ToJson(report).dump(2) + "\n");
  if (!report.fault.empty()) return kExitError;
  return report.agrees() ? kExitHeld : kExitFailed;
}

}  // namespace

Command AddProbeCommand(CLI::App& program) {
  auto options = std::make_shared<ProbeOptions>();
  CLI::App* app = program.add_subcommand(
      "probe",
      "Infer an adapter's contract by experiment (causal alignment, blocking values, masked-row output, NaN "
      "isolation, GQA mapping, RoPE, softcap) and print it beside the declared one.\nExit codes: 0 every "
      "observation agrees (or is not observable), 1 one contradicts the declaration, 2 bad input, 3 the adapter "
      "crashed or answered garbage.");
  app->add_option("--adapter,-a", options->adapter, "The adapter to probe (attncheck list shows all)")->required();
  app->add_option("--json", options->json, "Also write the report as JSON to FILE");
  app->add_option("--seed", options->seed, "Seed of the q, k, v values (default 1)")->check(Seed());
  return {app, [options] { return RunProbe(*options); }};
}

}  // namespace attncheck::cli
