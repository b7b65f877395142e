// `attncheck list`: every adapter (correct or mutant, what it is, what it
// supports) and every law; with --adapter X, what the harness read from that one
// adapter (for plugin:<path>, the plugin's table as loaded), as text or --json.
#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "adapters/process/process_adapter.h"  // CapabilitiesToJson
#include "adapters/registry.h"
#include "cli/commands.h"
#include "cli/run_engine.h"

namespace attncheck::cli {
namespace {

template <class Values>
std::string NameList(const Values& values) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : ",") + std::string(Name(value));
  return text.empty() ? std::string("-") : text;
}

std::string_view YesNo(bool b) { return b ? "yes" : "no"; }

std::string CapabilitySummary(const Capabilities& caps) {
  std::string text = fmt::format("dtypes {}; masks {}; owns rope {}; owns bias {}; session {}",
                                 NameList(caps.dtypes), NameList(caps.masks), YesNo(caps.owns_rope),
                                 YesNo(caps.owns_bias), YesNo(caps.has_session));
  text += fmt::format("\ncontract: masked rows {}; blocking {}; NaN isolation {}", Name(caps.masked_rows),
                      Name(caps.blocking), YesNo(caps.nan_isolation));
  text += fmt::format("\nencodings {}; rope layouts {}; rope scalings {}; gqa {}; softcap {}; rope stage {}",
                      NameList(caps.encodings), NameList(caps.rope_layouts), NameList(caps.rope_scalings),
                      YesNo(caps.gqa), YesNo(caps.softcap), YesNo(caps.has_rope_stage));
  text += fmt::format("\nlimits: batch {}, heads {}, tokens {}, head dim {}, position {}", caps.max_batch,
                      caps.max_heads, caps.max_tokens, caps.max_head_dim, caps.max_position);
  text += fmt::format("\naccuracy: {}", Describe(caps.accuracy));
  return text;
}

// One adapter, made as the gate makes it: its name, description and capabilities.
int RunListAdapter(const std::string& name, bool json) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
  const Capabilities caps = adapter->capabilities();
  if (json) {
    const nlohmann::json j = {{"adapter", name},
                              {"name", adapter->name()},
                              {"description", adapter->description()},
                              {"capabilities", process::CapabilitiesToJson(caps)}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}  {}\n{}\n", name, adapter->description(), CapabilitySummary(caps));
  }
  return kExitHeld;
}

// The capability summary of every adapter, made as the gate makes them. A library
// adapter served by a process (torch-*, jax-*, hf-*, …) starts its backend to read the
// hello, seconds each, so they are made `workers` at a time (as the gate runs pairs:
// each on its own thread and instance) and printed in registration order. An adapter
// registered as unavailable (its description says why) gets no second line.
// On a terminal, stderr counts the adapters made meanwhile.
std::vector<std::string> Summaries(const std::vector<AdapterInfo>& adapters) {
  std::vector<std::string> summaries(adapters.size());
  std::atomic<size_t> next{0}, made{0};
  ProgressLine progress(/*quiet=*/false);
  auto work = [&] {
    for (size_t n = next++; n < adapters.size(); n = next++) {
      const AdapterInfo& info = adapters[n];
      if (info.kind != AdapterKind::kScheme && UnavailableReason(info.name).empty()) {
        try {
          const std::unique_ptr<Adapter> adapter = MakeAdapter(info.name);
          summaries[n] = CapabilitySummary(adapter->capabilities());
        } catch (const std::exception& e) {
          summaries[n] = fmt::format("unavailable: {}", FirstLine(e.what()));
        }
      }
      ++made;
      progress.ShowText([&] { return fmt::format("[list] {}/{} adapters made", made.load(), adapters.size()); });
    }
  };
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 2, 16);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < workers; ++t) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
  progress.Clear();
  return summaries;
}

int RunList() {
  const std::vector<AdapterInfo> adapters = ListAdapters();
  size_t name_width = 0;
  const auto is_scheme = [](const AdapterInfo& info) { return info.kind == AdapterKind::kScheme; };
  for (const AdapterInfo& info : adapters) name_width = std::max(name_width, info.name.size() + (is_scheme(info) ? 5 : 0));
  const std::string indent(2 + name_width + 2 + 7 + 2, ' ');
  const std::vector<std::string> summaries = Summaries(adapters);

  fmt::print("Adapters (the default gate runs the correct ones; gate a library or a mutant by name):\n");
  for (size_t n = 0; n < adapters.size(); ++n) {
    const AdapterInfo& info = adapters[n];
    const std::string name = is_scheme(info) ? info.name + "<arg>" : info.name;
    fmt::print("  {:<{}}  {:<7}  {}\n", name, name_width, Name(info.kind), info.description);
    const std::string& summary = summaries[n];
    if (summary.empty()) continue;  // a scheme needs an argument to exist; or said above
    size_t start = 0;
    while (start <= summary.size()) {
      const size_t end = summary.find('\n', start);
      fmt::print("{}{}\n", indent, summary.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }

  size_t law_width = 0;
  for (const Law& law : AllLaws()) law_width = std::max(law_width, law.name.size());
  fmt::print("\nLaws:\n");
  for (const Law& law : AllLaws()) fmt::print("  {:<{}}  {}\n", law.name, law_width, law.description);
  return kExitHeld;
}

}  // namespace

Command AddListCommand(CLI::App& program) {
  struct ListOptions {
    std::string adapter;
    bool json = false;
  };
  auto options = std::make_shared<ListOptions>();
  CLI::App* app = program.add_subcommand("list", "List adapters (with their capabilities) and laws");
  CLI::Option* adapter = app->add_option(
      "--adapter,-a", options->adapter,
      "Only this adapter (any name the gate takes, plugin:<path> too): what the harness read from it");
  app->add_flag("--json", options->json, "With --adapter: print it as one JSON object (name, description, capabilities)")
      ->needs(adapter);
  return {app, [options] { return options->adapter.empty() ? RunList() : RunListAdapter(options->adapter, options->json); }};
}

}  // namespace attncheck::cli
