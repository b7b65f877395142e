// What a backend hands to the adapter registry (adapters/registry.h): each
// adapter's name, kind and factory. Backends depend on this header only, never on
// the registry, so the registry can sit above every backend without a cycle.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

// How the program treats an adapter (one table: adapters/registrar.cc).
enum class AdapterKind {
  kCorrect,    // in-tree and believed correct: the default gate runs it
  kLibrary,    // a real library under test: correct by intent, gated by name or pattern
  kDefective,  // broken on purpose (mutants, fault injection): named explicitly, `*` never picks it
  kScheme,     // a prefix taking an argument: "exec:<command>", "plugin:<path>"
};

// "correct", "library", "mutant", "scheme" (the column of `attncheck list`).
std::string_view Name(AdapterKind kind);
// The default gate runs it (kCorrect only).
bool InDefaultGate(AdapterKind kind);
// A pattern that starts with a wildcard ("*", "?…") may pick it (not kDefective, not kScheme).
bool PickedByLeadingWildcard(AdapterKind kind);

struct AdapterInfo {
  std::string name;         // "tiled-f16", "mutant:off-by-one", or a scheme's prefix "plugin:"
  std::string description;  // one line for `attncheck list`
  AdapterKind kind = AdapterKind::kCorrect;
};

using AdapterFactory = std::function<std::unique_ptr<Adapter>()>;
using AdapterSchemeFactory = std::function<std::unique_ptr<Adapter>(std::string_view argument)>;

// The registry as a backend sees it while registering.
class Registrar {
 public:
  virtual ~Registrar() = default;
  virtual void Add(AdapterInfo info, AdapterFactory make) = 0;
  // info.kind is kScheme; MakeAdapter("plugin:lib.so") calls make("lib.so").
  virtual void AddScheme(AdapterInfo info, AdapterSchemeFactory make) = 0;
};

}  // namespace attncheck
