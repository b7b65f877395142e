// The machine and library fingerprint of a report (DESIGN §7): what built
// attncheck (compiler, build type, version, git commit — the last three passed
// by CMake as compile definitions) and where it ran (CPU model, OS, kernel), so
// a failure handed to another team says what produced it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attncheck {

struct Fingerprint {
  std::string version;     // attncheck version ("0.1.0")
  std::string git_commit;  // commit at configure time, "unknown" outside a git checkout
  std::string build_type;  // CMAKE_BUILD_TYPE
  std::string compiler;    // "gcc 12.2.0", "clang 14.0.6"
  std::string cpu;         // /proc/cpuinfo "model name", with the number of logical CPUs
  std::string os;          // /etc/os-release PRETTY_NAME
  std::string kernel;      // uname: sysname release machine

  // (label, value) in display order.
  std::vector<std::pair<std::string, std::string>> Fields() const;
  // One line: "attncheck 0.1.0 (abc1234, RelWithDebInfo, gcc 12.2.0); Debian 12; Linux 6.1 x86_64; CPU …".
  std::string Line() const;
};

// This process's fingerprint (computed once).
const Fingerprint& ThisMachine();

}  // namespace attncheck
