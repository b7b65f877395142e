// make_seeds: writes the seed corpus of every fuzz target (fuzz/README.md).
//   make_seeds --out DIR [--corpus corpora/seeds] [--adapter eigen] [--random N] [--parser NAME]…
// DIR/<law_target>/ gets each corpus case encoded as FdpSource bytes
// (fuzz/seed_encoding.h) under the adapter's capabilities, N cases drawn by
// RandomSource (which must encode exactly: exit 1 otherwise) and the empty
// input; each parser target NAME gets DIR/NAME/ with the empty input and, for
// case_json, the same cases as JSON text.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/decode.h"
#include "cases/error.h"
#include "cases/random_source.h"
#include "fuzz/seed_encoding.h"
#include "properties/laws.h"

namespace {

namespace fs = std::filesystem;
using namespace attncheck;

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw InputError(path.string(), "", "cannot write");
}

std::string TargetName(std::string_view law) {
  std::string name(law);
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

struct Seed {
  std::string name;  // file stem
  Case c;
  bool must_be_exact = false;
};

int Run(int argc, char** argv) {
  std::string out_dir, corpus_dir = "corpora/seeds", adapter_name = "eigen";
  int random_cases = 24;
  std::vector<std::string> parsers;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError::Option(arg, "needs a value");
      return argv[++i];
    };
    if (arg == "--out") {
      out_dir = value();
    } else if (arg == "--corpus") {
      corpus_dir = value();
    } else if (arg == "--adapter") {
      adapter_name = value();
    } else if (arg == "--parser") {
      parsers.push_back(value());
    } else if (arg == "--random") {
      random_cases = std::stoi(value());
    } else {
      throw InputError::Option(arg, "unknown option (make_seeds --out DIR [--corpus DIR] [--adapter A] [--random N] [--parser NAME]…)");
    }
  }
  if (out_dir.empty()) throw InputError::Option("--out", "required");
  const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);
  const Capabilities caps = adapter->capabilities();

  std::vector<Seed> seeds;
  for (const CorpusEntry& e : ReadCorpus(corpus_dir)) {
    seeds.push_back({fs::path(e.case_file).stem().string(), e.c, false});
  }
  for (int i = 0; i < random_cases; ++i) {
    RandomSource source(1, static_cast<uint64_t>(i));
    seeds.push_back({fmt::format("random-{:03d}", i), Decode(source, caps), true});
  }

  std::vector<std::string> targets;
  for (const Law& law : AllLaws()) targets.push_back(TargetName(law.name));
  for (const std::string& t : targets) fs::create_directories(fs::path(out_dir) / t);
  for (const std::string& p : parsers) {
    fs::create_directories(fs::path(out_dir) / p);
    WriteBytes(fs::path(out_dir) / p / "empty", {});
  }
  const bool case_json = std::find(parsers.begin(), parsers.end(), "case_json") != parsers.end();

  int exact = 0, nearest = 0, failures = 0;
  for (const std::string& t : targets) WriteBytes(fs::path(out_dir) / t / "empty", {});
  for (const Seed& s : seeds) {
    const SeedEncoding e = EncodeCase(s.c, caps);
    (e.exact ? exact : nearest) += 1;
    if (!e.exact && s.must_be_exact) {
      ++failures;
      std::fprintf(stderr, "%s: drawn inside the capabilities but not encoded exactly\n  want %s\n  got  %s\n",
                   s.name.c_str(), ToLine(s.c).c_str(), ToLine(e.decoded).c_str());
    }
    for (const std::string& t : targets) WriteBytes(fs::path(out_dir) / t / s.name, e.bytes);
    if (case_json) {
      const std::string text = ToJson(s.c).dump(2) + "\n";
      WriteBytes(fs::path(out_dir) / "case_json" / (s.name + ".json"), {text.begin(), text.end()});
    }
  }
  std::printf("make_seeds: %zu cases for %zu law targets under %s: %d encoded exactly, %d as the nearest case "
              "%s can run\n",
              seeds.size(), targets.size(), out_dir.c_str(), exact, nearest, adapter_name.c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 2;
  }
}
