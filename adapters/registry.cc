// The adapter registry: a function-local static table guarded by a mutex, seeded
// with the built-in adapters the first time anyone looks at it.
#include "adapters/registry.h"

#include <algorithm>
#include <fmt/format.h>
#include <mutex>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/mutants/mutants.h"
#include "adapters/onnxruntime/ort_adapters.h"
#include "adapters/plugin/plugin_adapter.h"
#include "adapters/process/process_adapter.h"
#ifdef ATTNCHECK_HAVE_GGML
#include "adapters/ggml/ggml_adapter.h"
#endif
#include "adapters/jax/jax_adapters.h"
#include "adapters/libtorch/libtorch_adapter.h"  // names only; no torch headers
#include "adapters/libtorch/loader.h"
#include "adapters/onnxruntime/ort_python_adapters.h"
#include "adapters/openvino/openvino_adapters.h"
#include "adapters/reference/reference_adapter.h"
#include "adapters/torch/torch_adapters.h"
#include "adapters/transformers/transformers_adapters.h"
#include "adapters/tiled/tiled_adapter.h"
#include "cases/did_you_mean.h"
#include "cases/error.h"

#if !defined(ATTNCHECK_HAVE_LIBTORCH) && !defined(ATTNCHECK_LIBTORCH_REASON)
#define ATTNCHECK_LIBTORCH_REASON "libtorch adapters not built"
#endif

namespace attncheck {
namespace {

struct Entry {
  AdapterInfo info;
  AdapterFactory make;              // plain adapters
  AdapterSchemeFactory make_with;   // schemes
  std::string unavailable;          // not built, and why: listed, never expanded by a pattern
};

struct Registry final : Registrar {
  std::mutex mutex;
  std::vector<Entry> entries;

  // Registrar: the built-ins, registered before anyone else can see the registry.
  void Add(AdapterInfo info, AdapterFactory make) override {
    entries.push_back({std::move(info), std::move(make), nullptr, {}});
  }
  void AddScheme(AdapterInfo info, AdapterSchemeFactory make) override {
    entries.push_back({std::move(info), nullptr, std::move(make), {}});
  }

  void Put(Entry entry) {
    const std::lock_guard<std::mutex> lock(mutex);
    for (Entry& e : entries) {
      if (e.info.name == entry.info.name) {
        e = std::move(entry);
        return;
      }
    }
    entries.push_back(std::move(entry));
  }
  std::vector<Entry> Snapshot() {
    const std::lock_guard<std::mutex> lock(mutex);
    return entries;
  }
};

void AddBuiltin(Registrar& registry, AdapterFactory make, AdapterKind kind = AdapterKind::kCorrect) {
  const std::unique_ptr<Adapter> adapter = make();
  registry.Add({adapter->name(), adapter->description(), kind}, std::move(make));
}

// The libtorch adapters: registered when their module was built and is found
// (made through it, loaded on first use: adapters/libtorch/loader.h), else listed
// as unavailable with the reason.
void AddLibtorch(Registry& registry) {
#ifdef ATTNCHECK_HAVE_LIBTORCH
  const std::string missing = FindLibtorchModule().missing;
#else
  const std::string missing = ATTNCHECK_LIBTORCH_REASON;
#endif
  for (const LibtorchAdapterName& known : kLibtorchAdapters) {
    const std::string adapter(known.name);
    if (missing.empty()) {
      registry.Add({adapter, std::string(known.description), AdapterKind::kLibrary},
                   [adapter] { return MakeLibtorchAdapter(adapter); });
      continue;
    }
    AdapterFactory unavailable = [adapter, missing]() -> std::unique_ptr<Adapter> {
      throw InputError::Option("--adapter", fmt::format("{} is not built: {}", adapter, missing));
    };
    registry.entries.push_back({{adapter, fmt::format("unavailable: {}", missing), AdapterKind::kLibrary},
                                std::move(unavailable), nullptr, missing});
  }
}

// Adapters that run a script backend (the ONNX Runtime 1.30 adapters, a Node process each;
// the PyTorch, JAX, OpenVINO and ONNX Runtime 1.31 adapters, a Python process each):
// registered when `lookup` found their interpreter and packages, else each of `table`
// listed as unavailable with the reason.
template <class Lookup, class Table, class Make>
void AddScriptAdapters(Registry& registry, const Lookup& lookup, const Table& table, Make make) {
  for (const auto& known : table) {
    const std::string adapter(known.name);
    if (lookup.missing.empty()) {
      registry.Add({adapter, std::string(known.description), AdapterKind::kLibrary},
                   [lookup, &known, make] { return make(lookup, known); });
      continue;
    }
    AdapterFactory unavailable = [adapter, missing = lookup.missing]() -> std::unique_ptr<Adapter> {
      throw InputError::Option("--adapter", fmt::format("{} is not available: {}", adapter, missing));
    };
    registry.entries.push_back({{adapter, fmt::format("unavailable: {}", lookup.missing), AdapterKind::kLibrary},
                                std::move(unavailable), nullptr, lookup.missing});
  }
}

void AddBuiltins(Registry& registry) {
  AddBuiltin(registry, [] { return MakeReferenceAdapter(); });
  AddBuiltin(registry, [] { return MakeEigenAdapter(); });
  for (Dtype dtype : {Dtype::kF32, Dtype::kF16, Dtype::kBf16}) {
    AddBuiltin(registry, [dtype] { return MakeTiledAdapter(dtype); });
  }
  // Gated by name or pattern ('tiled-*'), not by default: descriptor only, so
  // mask-conventions has nothing to compare and sessions packing documents skip.
  AddBuiltin(registry, [] { return MakeTiledVarlenAdapter(Dtype::kF32, 0); }, AdapterKind::kLibrary);
  AddBuiltin(registry, [] { return MakeTiledVarlenAdapter(Dtype::kBf16, 16); }, AdapterKind::kLibrary);
#ifdef ATTNCHECK_HAVE_GGML
  for (auto& make : GgmlAdapterFactories()) AddBuiltin(registry, std::move(make), AdapterKind::kLibrary);
#endif
  registry.AddScheme({"plugin:", std::string(kPluginSchemeDescription), AdapterKind::kScheme},
                     [](std::string_view path) { return MakePluginAdapter(path); });
  AddLibtorch(registry);
  AddScriptAdapters(registry, FindOrtBackend(), kOrtAdapters, MakeOrtAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kTorchLibrary), kTorchAdapters, MakePythonAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kTorchCudaLibrary), kTorchCudaAdapters, MakePythonAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kJaxLibrary), kJaxAdapters, MakePythonAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kTransformersLibrary), kTransformersAdapters, MakePythonAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kOpenVinoLibrary), kOpenVinoAdapters, MakePythonAdapter);
  AddScriptAdapters(registry, FindPythonBackend(kOrtPythonLibrary), kOrtPythonAdapters, MakePythonAdapter);
  // Mutants last among the in-tree adapters (`mutant:*` names them, `*` does not).
  mutants::RegisterMutantAdapters(registry);
  // exec: and isolated: schemes, and the fault:* test adapters; isolated:NAME
  // makes NAME through the registry.
  process::RegisterProcessAdapters(registry, [](std::string_view name) { return MakeAdapter(name); });
}

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;  // never destroyed: usable from other statics' destructors
    AddBuiltins(*r);
    return r;
  }();
  return *registry;
}

}  // namespace

// Glob match with `*` and `?` (iterative, backtracking to the last star).
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

bool IsScheme(const AdapterInfo& info) { return info.kind == AdapterKind::kScheme; }

// Every adapter name and scheme prefix, for "did you mean" (cases/did_you_mean.h).
std::vector<std::string> KnownNames(const std::vector<Entry>& entries) {
  std::vector<std::string> known;
  for (const Entry& e : entries) known.push_back(e.info.name);
  return known;
}

}  // namespace

void RegisterAdapter(AdapterInfo info, AdapterFactory make) {
  GetRegistry().Put({std::move(info), std::move(make), nullptr, {}});
}

void RegisterAdapterScheme(std::string prefix, std::string description, AdapterSchemeFactory make) {
  GetRegistry().Put({{std::move(prefix), std::move(description), AdapterKind::kScheme}, nullptr, std::move(make), {}});
}

std::vector<AdapterInfo> ListAdapters() {
  std::vector<AdapterInfo> infos;
  for (const Entry& e : GetRegistry().Snapshot()) infos.push_back(e.info);
  return infos;
}

std::string UnavailableReason(std::string_view name) {
  for (const Entry& e : GetRegistry().Snapshot()) {
    if (e.info.name == name) return e.unavailable;
  }
  return "";
}

std::vector<std::string> AdapterNames() {
  std::vector<std::string> names;
  for (const Entry& e : GetRegistry().Snapshot()) {
    if (InDefaultGate(e.info.kind)) names.push_back(e.info.name);
  }
  return names;
}

std::unique_ptr<Adapter> MakeAdapter(std::string_view name) {
  const std::vector<Entry> entries = GetRegistry().Snapshot();
  for (const Entry& e : entries) {
    if (!IsScheme(e.info) && e.info.name == name) return e.make();
  }
  for (const Entry& e : entries) {
    if (IsScheme(e.info) && name.starts_with(e.info.name)) return e.make_with(name.substr(e.info.name.size()));
  }
  throw InputError::Option("--adapter", UnknownName("adapter", name, KnownNames(entries)));
}

std::vector<std::string> ExpandAdapterPattern(std::string_view pattern) {
  const std::vector<Entry> entries = GetRegistry().Snapshot();
  const bool wildcard = pattern.find_first_of("*?") != std::string_view::npos;
  std::vector<std::string> names;
  if (!wildcard) {
    for (const Entry& e : entries) {
      if (IsScheme(e.info) ? pattern.starts_with(e.info.name) : e.info.name == pattern) {
        return {std::string(pattern)};
      }
    }
    throw InputError::Option("--adapter", UnknownName("adapter", pattern, KnownNames(entries)));
  }
  const bool leading_wildcard = pattern.front() == '*' || pattern.front() == '?';
  std::string not_built;  // the first unavailable adapter the pattern matched
  for (const Entry& e : entries) {
    if (IsScheme(e.info) || (leading_wildcard && !PickedByLeadingWildcard(e.info.kind))) continue;
    if (!GlobMatch(pattern, e.info.name)) continue;
    if (e.unavailable.empty()) {
      names.push_back(e.info.name);
    } else if (not_built.empty()) {
      not_built = fmt::format("{} is not built: {}", e.info.name, e.unavailable);
    }
  }
  if (names.empty() && !not_built.empty()) {
    throw InputError::Option("--adapter", fmt::format("no built adapter matches '{}' ({})", pattern, not_built));
  }
  if (names.empty()) {
    throw InputError::Option("--adapter", fmt::format("no adapter matches '{}' (attncheck list shows all)", pattern));
  }
  return names;
}

}  // namespace attncheck
