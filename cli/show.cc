// `attncheck show`: a case made concrete for a person — positions, validity,
// documents, the visibility matrix of one batch row and one oracle attention row
// (reference/show.h). From a case file or a named worked example.
#include <memory>

#include <fmt/format.h>

#include "cases/case_json.h"
#include "cases/error.h"
#include "cli/commands.h"
#include "reference/examples.h"
#include "reference/scenario.h"
#include "reference/show.h"

namespace attncheck::cli {
namespace {

struct ShowOptions {
  std::string file;
  std::string example;
  int row = 0;
  int query = -1;
};

int RunShow(const ShowOptions& options) {
  if (options.file.empty() == options.example.empty()) {
    throw InputError::Option("show", "give either a case file or --example NAME (not both)");
  }
  Case c;
  if (!options.example.empty()) {
    const std::optional<Case> example = reference::ExampleCase(options.example);
    if (!example) {
      std::string names;
      for (std::string_view name : reference::ExampleNames()) names += (names.empty() ? "" : ", ") + std::string(name);
      throw InputError::Option("--example", fmt::format("unknown example '{}' (examples: {})", options.example, names));
    }
    c = *example;
  } else {
    c = ReadCaseFile(ResolveCaseFile(options.file));
  }
  const reference::Scenario scenario = reference::MakeScenario(c);
  if (options.row < 0 || options.row >= scenario.batch) {
    throw InputError::Option("--row", fmt::format("{} is not a batch row of the case (0 … {})", options.row, scenario.batch - 1));
  }
  if (options.query < -1 || options.query >= scenario.tq) {
    throw InputError::Option("--query", fmt::format("{} is not a query of the case (0 … {}, or -1 for the last)",
                                                options.query, scenario.tq - 1));
  }
  fmt::print("{}", reference::Show(scenario, options.row, options.query));
  return kExitHeld;
}

}  // namespace

Command AddShowCommand(CLI::App& program) {
  auto options = std::make_shared<ShowOptions>();
  CLI::App* app = program.add_subcommand(
      "show", "Print a case's positions, visibility matrix and one attention row");
  app->add_option("case", options->file, "Case file (JSON) or a report folder holding case.json");
  std::string names;
  for (std::string_view name : reference::ExampleNames()) names += (names.empty() ? "" : ", ") + std::string(name);
  app->add_option("--example,-e", options->example, "A worked example instead of a file: " + names);
  app->add_option("--row,-b", options->row, "Batch row to print (default 0)");
  app->add_option("--query,-i", options->query, "Query index whose keys and attention row to print (default -1: the last)");
  return {app, [options] { return RunShow(*options); }};
}

}  // namespace attncheck::cli
