// The adapter registry: every adapter the program can name (DESIGN §8), the
// built-in ones registered lazily on first use. Other parts add theirs through
// RegisterAdapter from an explicit registration function (no global
// constructors: a static library drops translation units nobody references).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"

namespace attncheck {

struct AdapterInfo {
  std::string name;         // "tiled-f16", "mutant:off-by-one", or a scheme "plugin:"
  std::string description;  // one line for `attncheck list`
  bool correct = true;      // listed in the default gate (mutants are not)
  bool scheme = false;      // name is a prefix taking an argument ("exec:<command>")
  bool external = false;    // a real library under test (ggml): correct by intent, but
                            // gated by name, not by default (its findings are its own)
};

using AdapterFactory = std::function<std::unique_ptr<Adapter>()>;
using AdapterSchemeFactory = std::function<std::unique_ptr<Adapter>(std::string_view argument)>;

// Adds (or replaces, keeping its place) the adapter `name`.
void RegisterAdapter(std::string name, std::string description, bool correct, AdapterFactory make);
// Adds (or replaces) a scheme: MakeAdapter("plugin:lib.so") calls make("lib.so")
// for prefix "plugin:". Schemes are never expanded by patterns.
void RegisterAdapterScheme(std::string prefix, std::string description, AdapterSchemeFactory make);

// Registers reference, eigen, tiled-f32, tiled-f16, tiled-bf16. Called by the
// registry itself on first use; calling it again does nothing.
void RegisterBuiltinAdapters();

// Every registered adapter and scheme, in registration order (built-ins first).
std::vector<AdapterInfo> ListAdapters();
// Names of the default-gate adapters, in registration order: reference, eigen,
// tiled-f32, tiled-f16, tiled-bf16, then later correct registrations; external
// libraries (ggml*) and mutants are gated by name or pattern only.
std::vector<std::string> AdapterNames();

// A fresh adapter; throws InputError("", "--adapter", "unknown adapter 'x' (known: …)").
std::unique_ptr<Adapter> MakeAdapter(std::string_view name);

// Names matching a pattern with `*` (any run of characters) and `?` (one
// character): "tiled-*" → tiled-f32, tiled-f16, tiled-bf16. A pattern without
// wildcards is returned as is when it names an adapter or a scheme. Adapters
// registered as not correct (mutants) match only a pattern that does not start
// with a wildcard ("mutant:*" yes, "*" no). Throws InputError when nothing matches.
std::vector<std::string> ExpandAdapterPattern(std::string_view pattern);

// `*` (any run of characters) and `?` (one character) glob match, as used for
// adapter and law patterns.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace attncheck
