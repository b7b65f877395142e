// See fuzz/law_target.h.
#include "fuzz/law_target.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "adapters/mutants/mutants.h"
#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/decode.h"
#include "fuzz/fdp_source.h"
#include "properties/laws.h"

#ifndef ATTNCHECK_FUZZ_DEFAULT_ADAPTER
#define ATTNCHECK_FUZZ_DEFAULT_ADAPTER "eigen"
#endif

namespace attncheck::fuzz {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "attncheck fuzz: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

// Everything a target needs across inputs, made on the first input.
struct Target {
  const Law* law = nullptr;
  std::string adapter_name;
  std::unique_ptr<Adapter> adapter;
  Capabilities caps;
  std::string out_dir;
};

Target& TargetFor(std::string_view law_name) {
  static Target* target = [&] {
    auto* t = new Target;  // never destroyed: libFuzzer exits from anywhere
    t->law = FindLaw(law_name);
    if (t->law == nullptr) Die(fmt::format("unknown law '{}'", law_name));
    t->adapter_name = FuzzAdapterName(law_name);
    try {
      t->adapter = MakeAdapter(t->adapter_name);
    } catch (const std::exception& e) {
      Die(fmt::format("ATTNCHECK_FUZZ_ADAPTER: {}", e.what()));
    }
    t->caps = FuzzCapabilities(t->adapter->capabilities());
    const char* out = std::getenv("ATTNCHECK_FUZZ_OUT");
    t->out_dir = out != nullptr && *out != '\0' ? out : ".";
    return t;
  }();
  return *target;
}

}  // namespace

std::string FuzzAdapterName(std::string_view law) {
  const char* env = std::getenv("ATTNCHECK_FUZZ_ADAPTER");
  std::string name = env != nullptr && *env != '\0' ? env : ATTNCHECK_FUZZ_DEFAULT_ADAPTER;
  if (name != "mutant:auto") return name;
  for (const mutants::MutantInfo& m : mutants::Mutants()) {
    for (const std::string& l : m.laws) {
      if (l == law) return m.name;
    }
  }
  Die(fmt::format("mutant:auto: no mutant lists the law '{}'", law));
}

Capabilities FuzzCapabilities(Capabilities caps) {
  const char* small = std::getenv("ATTNCHECK_FUZZ_SMALL");
  if (small != nullptr && std::string_view(small) == "1") {
    caps.max_batch = std::min(caps.max_batch, 2);
    caps.max_heads = std::min(caps.max_heads, 2);
    caps.max_tokens = std::min(caps.max_tokens, 8);
    caps.max_head_dim = std::min(caps.max_head_dim, 8);
  }
  return caps;
}

int RunLawTarget(std::string_view law_name, const uint8_t* data, size_t size) {
  Target& t = TargetFor(law_name);
  FdpSource source(data, size);
  const Case c = Decode(source, t.caps);
  if (const std::optional<std::string> problem = Validate(c)) {
    // Decode must only make valid cases: this is a bug of the decoder itself.
    Die(fmt::format("Decode made an invalid case ({}):\n{}", *problem, ToJson(c).dump()));
  }
  if (t.adapter->unsupported(c)) return -1;

  const Verdict v = RunLaw(*t.law, *t.adapter, c, Options{});
  if (v.skipped()) return -1;
  if (v.passed()) return 0;

  CorpusMeta meta;
  meta.law = std::string(t.law->name);
  meta.adapters = {t.adapter_name};
  meta.expect = "fail";
  meta.note = fmt::format("found by the libFuzzer target for {}", t.law->name);
  std::string written;
  try {
    written = WriteCorpusEntry(t.out_dir, c, meta);
  } catch (const std::exception& e) {
    written = fmt::format("(not written: {})", e.what());
  }
  Die(fmt::format("{} {} on {}: {}\n  {}\n  case: {}\n  replay: attncheck replay {} --adapter {}", t.law->name,
                  Name(v.outcome), t.adapter_name, v.message, ToLine(c), written, written, t.adapter_name));
}

}  // namespace attncheck::fuzz
