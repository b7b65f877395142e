// The run engine of `gate` and `fuzz` (run_engine.h): stop signals, the progress
// line, adapter readiness, the per-pair case step, the record builder and the exit code.
#include "cli/run_engine.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/random_source.h"
#include "cli/commands.h"
#include "reports/findings_log.h"

namespace attncheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{0};  // the signal received; 0 while none
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void OnStopSignal(int signal) { g_stop_signal = signal; }

void SetStopHandlers(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = flags;  // never SA_RESTART
  for (const int signal : {SIGINT, SIGTERM}) sigaction(signal, &action, nullptr);
}

}  // namespace

StopSignals::StopSignals(SecondStop second) {
  g_stop_signal = 0;
  SetStopHandlers(OnStopSignal, second == SecondStop::kKills ? SA_RESETHAND : 0);
}

StopSignals::~StopSignals() { SetStopHandlers(SIG_DFL, 0); }

bool Stopping() { return g_stop_signal != 0; }

int StopSignal() { return g_stop_signal; }

std::string StopSignalName(int signal) {
  if (signal == 0) return "";
  return signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

ProgressLine::ProgressLine(bool quiet) : enabled_(!quiet && isatty(fileno(stderr)) != 0) {}

void ProgressLine::Show(const std::function<ProgressCounts()>& counts, bool force) {
  ShowText(
      [&] {
        const ProgressCounts c = counts();
        const double rate = c.seconds > 0.0 ? static_cast<double>(c.cases) / c.seconds : 0.0;
        return fmt::format("[{}] {}{} cases  {:.0f} cases/s  {} failures{}{}", c.label, c.cases,
                           c.planned >= 0 ? fmt::format("/{}", c.planned) : "", rate, c.failures,
                           c.findings >= 0 ? fmt::format("  {} findings", c.findings) : "", c.tail);
      },
      force);
}

void ProgressLine::ShowText(const std::function<std::string()>& text, bool force) {
  if (!enabled_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  fmt::print(stderr, "\r{}\033[K", text());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::Clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

ReadyAdapters::ReadyAdapters(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (!made_.contains(name)) made_.emplace(name, MakeAdapter(name));
  }
}

std::unique_ptr<Adapter> ReadyAdapters::Take(const std::string& name) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = made_.find(name);
    if (it != made_.end() && it->second) return std::move(it->second);
  }
  return MakeAdapter(name);
}

void ReadyAdapters::Release() {
  const std::lock_guard<std::mutex> lock(mutex_);
  made_.clear();
}

PairRunner::PairRunner(const Law& law, std::shared_ptr<Adapter> adapter, std::string adapter_name, uint64_t seed,
                       Accuracy accuracy, const ShapeLimits& limits)
    : law_(&law),
      adapter_(std::move(adapter)),
      seed_(seed),
      stream_seed_(LawStreamSeed(seed, law.name)),
      accuracy_(accuracy),
      caps_(NarrowToNeeds(Narrow(adapter_->capabilities(), limits), law.needs, &no_draw_)) {
  tally_.law = std::string(law.name);
  tally_.adapter = std::move(adapter_name);
  if (!caps_) return;
  steering_ = FeatureSteering(*caps_, law.needs, stream_seed_);
  tally_.DeclarePairs(steering_.pairs());
}

CheckedCase PairRunner::Check(uint64_t index, const BeforeRun& before) {
  CheckedCase checked{.from = {seed_, stream_seed_, index}, .c = {}, .verdict = {}};
  if (!caps_) {  // nothing to draw: one skip for the pair, not one per case
    checked.verdict = Verdict::Skip(no_draw_);
    if (index == 0) tally_.Add(checked.verdict);
    return checked;
  }
  checked.c = steering_.Draw(stream_seed_, index, *caps_, law_->needs);
  if (before) before(checked.c, index);
  const Clock::time_point start = Clock::now();
  checked.verdict = RunLaw(*law_, *adapter_, checked.c, Options{});
  tally_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  tally_.Add(checked.verdict, steering_.PairsOf(checked.c));  // what the case really has, steered or not
  if (accuracy_ == Accuracy::kProfile) tally_.accuracy.Add(checked.c, law_->name, checked.verdict);
  return checked;
}

FindingEntry EntryOf(const Finding& finding, std::string_view replay_file) {
  FindingEntry entry;
  const bool written = !finding.written.dir.empty();
  if (written || finding.joined) entry.record = finding.Record();
  // Joined: its folder is another pair's (LinkGroupFiles fills the record in);
  // neither written nor joined: over the report limit, logged without a folder.
  if (!written && replay_file.empty()) {
    entry.line = FindingJson(finding.report);
  } else {
    entry.line = FindingJson(finding.report, finding.written.dir,
                             replay_file.empty() ? std::string_view(finding.written.case_file) : replay_file);
  }
  return entry;
}

int RunExitCode(const RunEnd& end) {
  if (end.stop_signal != 0) return 128 + end.stop_signal;
  if (end.fatal_input && end.failed + end.errors + end.hazards == 0) return kExitUsage;
  return std::max(ExitCode(end.failed, end.errors + end.worker_faults, end.hazards, end.policy),
                  end.under_covered ? kExitFailed : kExitHeld);
}

}  // namespace attncheck::cli
