// The adapter registry: every adapter the program can name (DESIGN §8). It sits
// above the backends (its own library, attncheck_registry): each backend hands its
// adapters over through adapters/registrar.h on first use. Other parts add theirs
// through RegisterAdapter (no global constructors: a static library drops
// translation units nobody references).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registrar.h"

namespace attncheck {

// Adds (or replaces, keeping its place) the adapter `info.name`.
void RegisterAdapter(AdapterInfo info, AdapterFactory make);
// Adds (or replaces) a scheme: MakeAdapter("plugin:lib.so") calls make("lib.so")
// for prefix "plugin:". Schemes are never expanded by patterns.
void RegisterAdapterScheme(std::string prefix, std::string description, AdapterSchemeFactory make);

// Every registered adapter and scheme, in registration order: reference, eigen,
// tiled-f32, tiled-f16, tiled-bf16, the ggml adapters, plugin:, the libtorch
// adapters (listed as unavailable, with the reason, where not built), the mutants,
// then exec:, isolated: and the fault:* test adapters; later registrations last.
std::vector<AdapterInfo> ListAdapters();
// Why the adapter `name` cannot be made here (not built, or its library not installed),
// as its listed description says; empty when it can (or when no adapter has the name).
std::string UnavailableReason(std::string_view name);
// Names of the default-gate adapters (AdapterKind::kCorrect), in registration order.
std::vector<std::string> AdapterNames();

// A fresh adapter; throws InputError::Option("--adapter", "unknown adapter 'x'; did you mean 'y'? …").
std::unique_ptr<Adapter> MakeAdapter(std::string_view name);

// Names matching a pattern with `*` (any run of characters) and `?` (one
// character): "tiled-*" → tiled-f32, tiled-f16, tiled-bf16. A pattern without
// wildcards is returned as is when it names an adapter or a scheme. Defective
// adapters (mutants, fault injection) match only a pattern that does not start
// with a wildcard ("mutant:*" yes, "*" no). Throws InputError when nothing matches.
std::vector<std::string> ExpandAdapterPattern(std::string_view pattern);

// `*` (any run of characters) and `?` (one character) glob match, as used for
// adapter and law patterns.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace attncheck
