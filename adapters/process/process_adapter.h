// Adapters that run in another process (DESIGN §5): `exec:COMMAND` starts
// COMMAND under /bin/sh and speaks the process protocol (PROTOCOL.md) over its
// stdin/stdout; `isolated:NAME` runs the in-tree adapter NAME in a forked child
// that serves the same protocol. Either way a crash (signal), a hang (per-call
// time limit: the child is killed) or a malformed answer becomes an AdapterError
// with its class, and the next call starts a fresh child.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "adapters/adapter.h"
#include "adapters/registrar.h"

namespace attncheck::process {

// Per-call time limit: ATTNCHECK_CALL_TIMEOUT (seconds, > 0) when set, else 10 s.
// The hello handshake gets at least 30 s (an interpreter importing numpy).
// A malformed value throws InputError.
std::chrono::milliseconds CallTimeout();

// Capabilities as the protocol writes them (PROTOCOL.md "capabilities"), and
// back; FromJson throws ProtocolError naming the field.
nlohmann::json CapabilitiesToJson(const Capabilities& caps);
Capabilities CapabilitiesFromJson(const nlohmann::json& j);

// `exec:COMMAND`: starts COMMAND and shakes hands; a backend that cannot start or
// answers hello wrongly throws InputError (field --adapter, one line).
// `name` replaces "exec:COMMAND" as the adapter's name (the ort-* adapters). A hello
// with "versions" {library: version} notes them for the fingerprint. `min_call_timeout`
// raises the per-call limit for a backend known to need longer (a compiling one).
std::unique_ptr<Adapter> MakeExecAdapter(std::string_view command, std::string name = {},
                                         std::chrono::milliseconds min_call_timeout = {});

// Runs `inner` in a forked child serving the protocol. The parent keeps `inner`
// for its name, capabilities and unsupported(); every call goes to the child.
// `options` tweak the child for fault-injection tests.
struct ServeOptions {
  bool wrong_output_shape = false;  // attention with odd Tq answers Dv + 1 (tests only)
};
std::unique_ptr<Adapter> MakeIsolatedAdapter(std::unique_ptr<Adapter> inner, std::string name,
                                             ServeOptions options = {});

// The protocol server loop over `adapter`: reads requests from in_fd, answers on
// out_fd, until shutdown or the end of input. Adapter exceptions become error
// answers. Returns the process exit status to use (0 after shutdown or EOF).
int ServeAdapter(Adapter& adapter, int in_fd, int out_fd, ServeOptions options = {});

// Registers the `exec:` and `isolated:` schemes and the fault-injection test
// adapters (`fault:segv`, `fault:hang`, `fault:nan`, `fault:throw`,
// `fault:wrong-shape`; AdapterKind::kDefective, so `*` never picks them).
// `isolated:NAME` makes its inner adapter with make_inner(NAME) (the registry's
// MakeAdapter), so this backend never depends on the registry.
void RegisterProcessAdapters(Registrar& registry,
                             std::function<std::unique_ptr<Adapter>(std::string_view name)> make_inner);

}  // namespace attncheck::process
