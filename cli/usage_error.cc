// A CLI11 parse error as one line: an unknown subcommand or option names the
// closest one (cases/did_you_mean.h) instead of CLI11's own text; other parse
// errors keep CLI11's first line. Printed by main with exit code 2.
#include <fmt/format.h>

#include "cases/did_you_mean.h"
#include "cli/commands.h"

namespace attncheck::cli {
namespace {

// "--seed", "-s", … of `app`; positionals have no such names.
std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// The first argument the parser could not place (CLI11 keeps them in command-line
// order); an option without its "=value".
std::string Unplaced(const std::vector<std::string>& arguments) {
  if (arguments.empty()) return {};
  const std::string& first = arguments.front();
  return first.starts_with("-") ? first.substr(0, first.find('=')) : first;
}

}  // namespace

std::string UsageError(CLI::App& program, const CLI::ParseError& error) {
  CLI::App* app = &program;
  if (error.get_name() != program.get_name()) {
    for (CLI::App* sub : program.get_subcommands([](CLI::App*) { return true; })) {
      if (sub->get_name() == error.get_name()) app = sub;
    }
  }
  const std::string argument = Unplaced(app->remaining(false));
  const bool extras = error.get_exit_code() == static_cast<int>(CLI::ExitCodes::ExtrasError);
  const bool no_subcommand = app == &program && error.get_exit_code() == static_cast<int>(CLI::ExitCodes::RequiredError);
  if (argument.empty() || !(extras || no_subcommand)) return FirstLine(error.what()) + " (see --help)";
  const std::string command = app == &program ? "attncheck" : "attncheck " + app->get_name();
  const std::string help = command + " --help";
  if (argument.starts_with("-")) {
    return (app == &program ? "" : app->get_name() + ": ") + UnknownName("option", argument, OptionNames(*app), help);
  }
  if (app != &program) return fmt::format("{}: unexpected argument '{}' (see {})", app->get_name(), argument, help);
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : program.get_subcommands([](CLI::App*) { return true; })) {
    subcommands.push_back(sub->get_name());
  }
  return UnknownName("subcommand", argument, subcommands, help);
}

}  // namespace attncheck::cli
