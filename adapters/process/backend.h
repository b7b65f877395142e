// One backend process (process_adapter.h): a child started by fork (and, for
// `exec:`, /bin/sh -c COMMAND) whose stdin/stdout is one end of a socket pair.
// Calls are request/answer pairs with a deadline; a child that dies, stalls or
// breaks the framing is killed and reported as an AdapterError of its class, and
// the next call starts a fresh child (its generation counter moves on).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/process/protocol.h"

namespace attncheck::process {

class Backend {
 public:
  // Runs in the child with the socket as `fd`; must not return (call _exit).
  using Launch = std::function<void(int fd)>;

  Backend(std::string label, Launch launch, std::chrono::milliseconds call_timeout);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Starts the child when none runs and returns its hello answer.
  const nlohmann::json& Hello();
  // Sends a request and returns the answer, whose op must be `expect`; an
  // {"op": "error"} answer throws AdapterError(kException) with its message.
  Message Call(nlohmann::json header, const std::vector<Tensor>& tensors, std::string_view expect);
  // Counts child starts: a session opened in an earlier generation is gone.
  uint64_t generation() const { return generation_; }
  bool running() const { return fd_ >= 0; }

 private:
  void Start();
  void Stop();  // polite shutdown, then SIGKILL
  void Kill();
  // Reaps the child after its stream ended; throws AdapterError(kCrash) saying how it ended.
  [[noreturn]] void Died(std::string_view during, std::string_view detail);

  std::string label_;
  Launch launch_;
  std::chrono::milliseconds timeout_;
  pid_t pid_ = -1;
  int fd_ = -1;
  uint64_t generation_ = 0;
  nlohmann::json hello_;
};

}  // namespace attncheck::process
