// Backend processes (backend.h): socketpair + fork under one lock (so no other
// thread's child inherits a socket end), poll-bounded reads and writes, and
// waitpid to say how a child ended.
#include "adapters/process/backend.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <thread>

namespace attncheck::process {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex& ForkMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* text = strsignal(sig);
    return fmt::format("killed by signal {} ({})", sig, text ? text : "unknown");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

// The hello waits at least this long: a backend imports its library first (torch
// takes over 30 s on a loaded two-core machine), once per start.
constexpr std::chrono::milliseconds kHandshakeMinimum{120000};

}  // namespace

Backend::Backend(std::string label, Launch launch, std::chrono::milliseconds call_timeout)
    : label_(std::move(label)), launch_(std::move(launch)), timeout_(call_timeout) {}

Backend::~Backend() { Stop(); }

void Backend::Start() {
  int fds[2];
  pid_t pid = -1;
  {
    const std::lock_guard<std::mutex> lock(ForkMutex());
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw AdapterError(AdapterFault::kCrash, fmt::format("{}: socketpair failed: {}", label_, std::strerror(errno)));
    }
    pid = fork();
    if (pid == 0) {
      // The child dies with the harness (a killed gate leaves no hung backend behind).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[0]);
      launch_(fds[1]);
      _exit(127);
    }
    close(fds[1]);
  }
  if (pid < 0) {
    close(fds[0]);
    throw AdapterError(AdapterFault::kCrash, fmt::format("{}: fork failed: {}", label_, std::strerror(errno)));
  }
  pid_ = pid;
  fd_ = fds[0];
  ++generation_;
  const Deadline deadline = Clock::now() + std::max(timeout_, kHandshakeMinimum);
  Message answer;
  try {
    WriteAll(fd_, EncodeMessage({{"op", "hello"}, {"protocol", kProtocolVersion}}, {}), deadline);
    answer = ReadMessage(fd_, deadline);
  } catch (const PeerClosed& e) {
    Died("the hello handshake", e.what());
  } catch (const AdapterError& e) {
    Kill();
    throw AdapterError(e.fault(), fmt::format("{}: during the hello handshake: {}", label_, e.what()));
  }
  auto bad = [&](const std::string& why) {
    Kill();
    throw AdapterError(AdapterFault::kGarbage, fmt::format("{}: bad hello answer: {}", label_, why));
  };
  if (answer.op() == "error") bad(answer.header.value("message", std::string("(no message)")));
  if (answer.op() != "hello") bad(fmt::format("op '{}', expected 'hello'", answer.op()));
  if (!answer.header.contains("protocol") || !answer.header["protocol"].is_number_integer() ||
      answer.header["protocol"].get<int64_t>() < kOldestProtocolVersion ||
      answer.header["protocol"].get<int64_t>() > kProtocolVersion) {
    bad(fmt::format("protocol {} (this harness speaks {} to {})", answer.header.value("protocol", nlohmann::json()).dump(),
                    kOldestProtocolVersion, kProtocolVersion));
  }
  hello_ = std::move(answer.header);
}

const nlohmann::json& Backend::Hello() {
  if (fd_ < 0) Start();
  return hello_;
}

Message Backend::Call(nlohmann::json header, const std::vector<Tensor>& tensors, std::string_view expect) {
  if (fd_ < 0) Start();
  const std::string op = header.value("op", std::string());
  const Deadline deadline = Clock::now() + timeout_;
  Message answer;
  try {
    WriteAll(fd_, EncodeMessage(std::move(header), tensors), deadline);
    answer = ReadMessage(fd_, deadline);
  } catch (const PeerClosed& e) {
    Died(fmt::format("'{}'", op), e.what());
  } catch (const AdapterError& e) {
    Kill();  // a stalled or garbled stream cannot be resynchronised
    if (e.fault() == AdapterFault::kTimeout) {
      throw AdapterError(AdapterFault::kTimeout,
                         fmt::format("{}: '{}' took longer than {:.3g} s; backend killed", label_, op,
                                     std::chrono::duration<double>(timeout_).count()));
    }
    throw AdapterError(e.fault(), fmt::format("{}: answer to '{}': {}", label_, op, e.what()));
  }
  if (answer.op() == "error" && answer.header.value("kind", nlohmann::json()) == "contract") {
    // The backend saw its kernel break the buffer contract: a law failure (memory safety).
    throw AdapterError(AdapterFault::kContract, answer.header.value("message", std::string("(no message)")));
  }
  if (answer.op() == "error" && answer.header.value("kind", nlohmann::json()) == "refused") {
    throw CaseRefused(answer.header.value("message", std::string("(no reason)")));  // a skip
  }
  if (answer.op() == "error") {
    throw AdapterError(AdapterFault::kException,
                       fmt::format("{}: '{}' failed: {}", label_, op,
                                   answer.header.value("message", std::string("(no message)"))));
  }
  if (answer.op() != expect) {
    throw ProtocolError(fmt::format("{}: answer to '{}' has op '{}', expected '{}'", label_, op, answer.op(), expect));
  }
  return answer;
}

void Backend::Kill() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

void Backend::Stop() {
  if (fd_ < 0) return;
  try {
    WriteAll(fd_, EncodeMessage({{"op", "shutdown"}}, {}), Clock::now() + std::chrono::milliseconds(200));
  } catch (...) {  // it is going either way
  }
  close(fd_);
  fd_ = -1;
  // Give it a moment to exit on its own, then kill it.
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(500);
  int status = 0;
  while (pid_ > 0 && Clock::now() < deadline) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_ || (done < 0 && errno != EINTR)) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Kill();
}

void Backend::Died(std::string_view during, std::string_view detail) {
  close(fd_);
  fd_ = -1;
  // The stream ended: the child has exited or is about to; wait a little, then kill.
  int status = 0;
  std::string how = "closed its output";
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(1000);
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      how = HowItEnded(status);
      break;
    }
    if (done < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      how = "closed its output and was killed";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pid_ = -1;
  const std::string note = detail == "stream ended" ? std::string() : fmt::format(" ({})", detail);
  throw AdapterError(AdapterFault::kCrash,
                     fmt::format("{}: backend process {} during {}{}", label_, how, during, note));
}

}  // namespace attncheck::process
