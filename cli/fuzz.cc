// `attncheck fuzz`: a time- or case-bounded campaign (DESIGN §8, §9). Cases are
// numbered globally: case g checks law laws[g mod L] on case ⌊g / L⌋ of that law's
// stream, Decode(RandomSource(LawStreamSeed(seed, law), ⌊g / L⌋), capabilities
// narrowed by the law's needs, steered as the gate's: cases/features.h), on every adapter (a pair with nothing to draw is
// one skip, at its case 0). `--shard i/n` keeps the g with g mod n == i, so n shards with
// the same seed and --cases check exactly the cases of one unsharded run. The
// --jobs worker processes (fork) split a shard's cases round-robin. A worker
// shrinks each failure, and for a shrunk case it has not seen yet enriches it on
// its own adapter (influence map, rerun classification) and writes its report
// folder; it sends every finding to the parent as a JSON line over a pipe. A
// failure's identity is its signature (properties/signature.h: law, comparison
// step, role of the worst element, mask form): a worker shrinks and reports the
// first failure of each signature on each adapter and only counts the later ones
// ("repeat" lines). The parent deduplicates across workers (adapter, signature),
// counts every failing check per signature, --max-findings counts signatures per adapter, and
// writes each distinct finding as a corpus entry and one fsync'd line of
// <report-dir>/findings.jsonl the moment it arrives, so a killed campaign loses
// nothing it already reported. (A report folder of a finding past --max-findings
// may exist without its findings line.) At the end the parent merges the
// workers' per-pair tallies (cli/fuzz_tally.h) and the findings it wrote into a
// RunSummary and writes summary.json, index.html, --json and --junit as the gate
// does (reports/run_outputs.h); those are this run's own, findings.jsonl, the
// report folders and the corpus accumulate across campaigns.
// SIGINT / SIGTERM stop the workers cleanly (a shrink in progress ends early and
// is still written). Signals, progress line, the per-pair case step, records and
// exit code are the run engine's (cli/run_engine.h), shared with `gate`.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/corpus.h"
#include "cases/error.h"
#include "cli/commands.h"
#include "cli/fuzz_tally.h"
#include "cli/run_engine.h"
#include "properties/verdict_json.h"
#include "reports/finding.h"
#include "reports/findings_log.h"
#include "reports/replay_command.h"
#include "reports/run_outputs.h"

namespace attncheck::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct FuzzOptions {
  std::vector<std::string> adapters;
  std::vector<std::string> laws;
  std::vector<std::string> skip_laws;  // --skip-law
  double time = 0.0;   // seconds; 0 = no time bound
  int64_t cases = -1;  // global case indices 0..cases-1; -1 = no case bound
  uint64_t seed = 1;
  int jobs = 1;
  std::string shard = "0/1";
  std::string corpus = "attncheck-corpus";
  std::string report_dir = "attncheck-report";
  std::string json;   // --json
  std::string junit;  // --junit
  int max_findings = 10;
  double shrink_seconds = 10.0;
  std::string trace;  // hidden: one line "<hash16> <g> <law> <adapter>" per checked case
  bool quiet = false;
  HazardPolicy hazards = HazardPolicy::kReport;  // --hazards
};

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;
};


Shard ParseShard(const std::string& text) {
  const auto bad = [&] {
    return InputError::Option("--shard", "expected i/n with 0 <= i < n (e.g. 0/4), got '" + text + "'");
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad();
  Shard shard;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [i_end, i_error] = std::from_chars(begin, begin + slash, shard.index);
  const auto [n_end, n_error] = std::from_chars(begin + slash + 1, end, shard.count);
  if (i_error != std::errc{} || i_end != begin + slash || n_error != std::errc{} || n_end != end ||
      shard.count == 0 || shard.index >= shard.count) {
    throw bad();
  }
  return shard;
}

std::string Line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// Writes all of `text` to `fd` (retrying short writes and EINTR).
bool WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// An empty tally of one law × adapter pair.
LawResult PairResult(std::string_view law, const std::string& adapter) {
  LawResult r;
  r.law = std::string(law);
  r.adapter = adapter;
  return r;
}

// ---- a worker process ----

struct Plan {
  std::vector<const Law*> laws;
  std::vector<std::string> adapters;
  Shard shard;
  int jobs = 1;
  Clock::time_point start;
};

// One worker process: checks its share of the cases (the shard's k-th case is
// g = k·n + i; worker w takes k ≡ w (mod jobs)) on every adapter, and sends each
// finding, its progress and its end to the parent over `fd`, one JSON line each.
class FuzzWorker {
 public:
  FuzzWorker(int w, int fd, const FuzzOptions& options, const Plan& plan)
      : w_(w),
        fd_(fd),
        options_(options),
        plan_(plan),
        // Reports are written here, where the adapter is (the enrichment reruns it),
        // once per case this worker shrank to; the parent deduplicates across workers.
        pipeline_({.report_dir = options.report_dir, .skip_repeats = true, .should_stop = Stopping}) {}
  ~FuzzWorker() {
    if (trace_fd_ >= 0) ::close(trace_fd_);
  }

  // Never throws: an error ends the worker with a "fatal" message.
  void Run() {
    try {
      Open();
      for (uint64_t k = static_cast<uint64_t>(w_);; k += static_cast<uint64_t>(plan_.jobs)) {
        const uint64_t g = k * plan_.shard.count + plan_.shard.index;
        if (options_.cases >= 0 && g >= static_cast<uint64_t>(options_.cases)) break;
        if (Stopping()) break;
        if (options_.time > 0.0 && Seconds(Clock::now() - plan_.start) >= options_.time) break;
        CheckCase(g);
      }
      if (trace_fd_ >= 0) WriteAll(trace_fd_, trace_);
      json done = Counts("done");
      done["pairs"] = json::array();
      for (PairRunner& pair : pairs_) done["pairs"].push_back(TallyJson(pair.tally()));
      Send(done);
    } catch (const InputError& e) {
      Send({{"type", "fatal"}, {"input", true}, {"message", FirstLine(e.what())}});
    } catch (const std::exception& e) {
      Send({{"type", "fatal"}, {"input", false}, {"message", FirstLine(e.what())}});
    }
  }

 private:
  void Send(const json& j) { WriteAll(fd_, Line(j)); }
  json Counts(const char* type) const {
    return {{"type", type}, {"cases", cases_}, {"checks", checks_}, {"failures", failures_}};
  }

  // The worker's own adapter instances (one per adapter, shared by its laws), its
  // pairs and the trace file.
  void Open() {
    std::vector<std::shared_ptr<Adapter>> adapters;
    for (const std::string& name : plan_.adapters) adapters.push_back(MakeAdapter(name));
    for (const Law* law : plan_.laws) {
      for (size_t a = 0; a < adapters.size(); ++a) {
        pairs_.emplace_back(*law, adapters[a], plan_.adapters[a], options_.seed, PairRunner::Accuracy::kNone);
      }
    }
    if (!options_.trace.empty()) {
      trace_fd_ = ::open(options_.trace.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
      if (trace_fd_ < 0) throw InputError(options_.trace, "", std::string("cannot open: ") + std::strerror(errno));
    }
    last_progress_ = Clock::now();
  }

  // Global case g on every adapter, then progress at most every 100 ms.
  void CheckCase(uint64_t g) {
    const uint64_t laws = plan_.laws.size();
    const uint64_t index = g / laws;
    for (size_t a = 0; a < plan_.adapters.size(); ++a) {
      PairRunner& pair = pairs_[(g % laws) * plan_.adapters.size() + a];
      PairRunner::BeforeRun trace;
      if (trace_fd_ >= 0) trace = [&](const Case& c, uint64_t) { Trace(c, g, pair); };
      const CheckedCase checked = pair.Check(index, trace);
      if (!pair.can_draw()) continue;
      ++checks_;
      if (!IsFinding(checked.verdict.outcome)) continue;
      ++failures_;
      const std::string signature = SignatureOf(pair.law().name, checked.c, checked.verdict).Key();
      if (!signatures_.insert(pair.adapter_name() + "\t" + signature).second) {
        Send({{"type", "repeat"}, {"adapter", pair.adapter_name()}, {"signature", signature}});
        continue;
      }
      Report(pair, g, checked, signature);
    }
    ++cases_;
    if (Clock::now() - last_progress_ >= std::chrono::milliseconds(100)) {
      last_progress_ = Clock::now();
      Send(Counts("progress"));
    }
  }

  // Whole lines, appended with one write each (O_APPEND keeps them whole).
  void Trace(const Case& c, uint64_t g, const PairRunner& pair) {
    trace_ += fmt::format("{:016x} {} {} {}\n", Hash(c), g, pair.law().name, pair.adapter_name());
    if (trace_.size() > 3000) {
      WriteAll(trace_fd_, trace_);
      trace_.clear();
    }
  }

  // Shrinks the failure, writes its report folder unless this worker wrote that
  // case before (then the message is a duplicate) and sends it to the parent.
  void Report(PairRunner& pair, uint64_t g, const CheckedCase& checked, const std::string& signature) {
    const Finding f = pipeline_.Run(pair.law(), pair.adapter(), pair.adapter_name(), checked.c, checked.verdict,
                                    checked.from, options_.shrink_seconds);
    json message = {{"type", "finding"},
                    {"law", pair.law().name},
                    {"signature", signature},
                    {"adapter", pair.adapter_name()},
                    {"g", g},
                    {"case_index", checked.from.case_index},
                    {"stream_seed", checked.from.stream_seed},
                    {"original_hash", fmt::format("{:016x}", Hash(checked.c))},
                    {"case", ToJson(f.report.c)},
                    {"verdict", VerdictJson(f.report.verdict)},
                    {"shrink",
                     {{"attempts", f.shrink.attempts},
                      {"accepted", f.shrink.accepted},
                      {"stopped", f.shrink.stopped},
                      {"seconds", f.shrink.seconds}}}};
    if (f.repeat) {
      message["duplicate"] = true;
    } else {
      message["report"] = f.written.dir;
      message["report_file"] = f.written.report_file;
      message["case_file"] = f.written.case_file;
      if (f.report.original) message["found_case"] = ToJson(*f.report.original);
      if (f.report.classification) message["classification"] = std::string(Name(f.report.classification->kind));
    }
    Send(message);
  }

  const int w_;
  const int fd_;
  const FuzzOptions& options_;
  const Plan& plan_;
  FailurePipeline pipeline_;
  std::vector<PairRunner> pairs_;     // law-major, adapters in plan order
  std::set<std::string> signatures_;  // adapter \t signature of every failure reported
  int trace_fd_ = -1;
  std::string trace_;
  int64_t cases_ = 0, checks_ = 0, failures_ = 0;
  Clock::time_point last_progress_{};
};

// ---- the parent ----

struct Worker {
  pid_t pid = -1;
  int fd = -1;  // read end of its pipe; -1 once closed
  std::string buffer;
  int64_t cases = 0, checks = 0, failures = 0;
  bool done = false;  // sent "done"
};

class Campaign {
 public:
  Campaign(const FuzzOptions& options, const Plan& plan)
      : options_(options), plan_(plan), findings_(options.report_dir), progress_(options.quiet) {
    for (const Law* law : plan.laws) {
      for (const std::string& adapter : plan.adapters) results_.push_back(PairResult(law->name, adapter));
    }
  }

  int Run();

 private:
  void OpenOutputs();
  void StartWorkers();
  void ReadWorkers();
  void ReadFrom(Worker& worker);
  void CheckStop();
  void ReapWorkers();
  int PrintSummary();
  RunSummary Summary() const;
  LawResult& ResultOf(const std::string& law, const std::string& adapter);
  void Handle(Worker& worker, const json& j);
  void WriteFinding(const json& j);
  void CountRepeat(const std::string& key);
  void StopWorkers(int signal);
  void ShowProgress(bool force);
  void ClearProgress() { progress_.Clear(); }
  // Distinct findings written: failures, hazards and errors.
  int findings() const { return findings_failed_ + findings_hazards_ + findings_errors_; }
  int64_t Total(int64_t Worker::*field) const {
    int64_t sum = 0;
    for (const Worker& w : workers_) sum += w.*field;
    return sum;
  }

  const FuzzOptions& options_;
  const Plan& plan_;
  std::vector<Worker> workers_;
  // adapter \t signature → failing checks of it (the finding written and its repeats)
  std::map<std::string, int> seen_;
  // adapter \t signature → its record: the pair's result and the index in its failures
  std::map<std::string, std::pair<LawResult*, size_t>> records_;
  std::map<std::string, int> written_per_adapter_;  // findings written per adapter (--max-findings each)
  std::vector<LawResult> results_;  // law-major: the workers' tallies and the findings written
  int findings_failed_ = 0, findings_errors_ = 0, findings_hazards_ = 0, duplicates_ = 0;
  int worker_faults_ = 0;
  int over_limit_ = 0;  // distinct findings past --max-findings, not written
  int fatal_input_ = 0, fatal_other_ = 0;
  std::string last_fatal_;
  FindingsLog findings_;
  ProgressLine progress_;
  bool stopping_ = false;
  std::string stop_reason_;
  Clock::time_point stop_sent_{};
  bool killed_ = false;  // SIGKILL sent to the workers
};

void Campaign::StopWorkers(int signal) {
  for (Worker& w : workers_) {
    if (w.pid > 0) ::kill(w.pid, signal);
  }
}

void Campaign::ShowProgress(bool force) {
  progress_.Show(
      [&] {
        const double elapsed = Seconds(Clock::now() - plan_.start);
        return ProgressCounts{.label = "fuzz",
                              .cases = Total(&Worker::cases),
                              .seconds = elapsed,
                              .failures = Total(&Worker::failures),
                              .findings = findings(),
                              .tail = fmt::format("  {:.1f} s{}", elapsed, stopping_ ? "  (stopping)" : "")};
      },
      force);
}

// A worker's finding, as the worker's pipeline returned it (its report folder written there).
void Campaign::WriteFinding(const json& j) {
  Finding finding;
  FailureReport& report = finding.report;
  report.law = j.at("law").get<std::string>();
  report.adapter = j.at("adapter").get<std::string>();
  report.c = FromJson(j.at("case"), "worker message");
  const std::string& law = report.law;
  const std::string& adapter = report.adapter;
  const Case& minimal = report.c;
  const std::string key = adapter + "\t" + j.at("signature").get<std::string>();
  // A signature found before (by another worker), or a case this worker wrote for
  // another signature: counted, not written again.
  if (++seen_[key] > 1 || j.value("duplicate", false)) {
    CountRepeat(key);
    return;
  }
  if (written_per_adapter_[adapter] >= options_.max_findings) {
    ++over_limit_;  // this adapter's cap reached (or found by a worker before it heard the campaign stop)
    return;
  }
  ++written_per_adapter_[adapter];
  report.verdict = VerdictFromJson(j.at("verdict"));
  report.seed = options_.seed;
  report.stream_seed = j.at("stream_seed").get<uint64_t>();
  report.case_index = j.at("case_index").get<uint64_t>();
  if (j.contains("found_case")) report.original = FromJson(j.at("found_case"), "worker message");
  finding.written.dir = j.value("report", std::string());
  finding.written.case_file = j.value("case_file", std::string());
  finding.written.report_file = j.value("report_file", std::string());
  const Verdict& verdict = report.verdict;
  (IsAdapterError(verdict.outcome) ? findings_errors_
   : verdict.hazard()               ? findings_hazards_
                                    : findings_failed_) += 1;

  CorpusMeta meta;
  meta.law = law;
  meta.adapters = {adapter};
  meta.expect = verdict.hazard() ? "hazard" : "fail";
  meta.note = fmt::format("attncheck fuzz --seed {}: case {} (stream case {}), shrunk from {}", options_.seed,
                          j.at("g").get<uint64_t>(), j.at("case_index").get<uint64_t>(),
                          j.at("original_hash").get<std::string>().substr(0, 8));
  const std::string corpus_file = WriteCorpusEntry(options_.corpus, minimal, meta);

  // The keys of gate's findings.jsonl lines (replaying the corpus entry), plus the campaign's own.
  FindingEntry entry = EntryOf(finding, corpus_file);
  json& line = entry.line;
  line["hash"] = fmt::format("{:016x}", Hash(minimal));
  line["g"] = j.at("g");
  line["stream_seed"] = j.at("stream_seed");
  line["original_hash"] = j.at("original_hash");
  line["shrink"] = j.at("shrink");
  line["elapsed"] = Seconds(Clock::now() - plan_.start);
  line["corpus_file"] = corpus_file;
  line["classification"] = j.value("classification", std::string());
  line["signature"] = j.at("signature");
  findings_.Append(line);
  if (entry.record) {
    LawResult& result = ResultOf(law, adapter);
    result.failures.push_back(std::move(*entry.record));
    records_[key] = {&result, result.failures.size() - 1};
  }
  ClearProgress();
  fmt::print("{} {} × {}: {}\n  case:   {}\n  corpus: {}\n  report: {}\n  replay: {}\n",
             IsAdapterError(verdict.outcome) ? "ERROR" : verdict.hazard() ? "HAZARD" : "FAIL", law, adapter,
             FirstLine(verdict.message), ToLine(minimal), corpus_file, finding.written.report_file,
             ReplayCommand(corpus_file, adapter, law));
  std::fflush(stdout);
}

// Another failing check of a signature found before: counted on its record.
void Campaign::CountRepeat(const std::string& key) {
  ++duplicates_;
  if (const auto it = records_.find(key); it != records_.end()) ++it->second.first->failures[it->second.second].repeats;
}

void Campaign::Handle(Worker& worker, const json& j) {
  const std::string type = j.at("type").get<std::string>();
  if (type == "progress" || type == "done") {
    worker.cases = j.at("cases").get<int64_t>();
    worker.checks = j.at("checks").get<int64_t>();
    worker.failures = j.at("failures").get<int64_t>();
    if (type == "done") {
      worker.done = true;
      for (const json& tally : j.at("pairs")) {
        const LawResult r = TallyFromJson(tally);
        ResultOf(r.law, r.adapter).Merge(r);
      }
    }
  } else if (type == "finding") {
    WriteFinding(j);
  } else if (type == "repeat") {
    const std::string key = j.at("adapter").get<std::string>() + "\t" + j.at("signature").get<std::string>();
    ++seen_[key];
    CountRepeat(key);
  } else if (type == "fatal") {
    const std::string message = j.at("message").get<std::string>();
    if (message != last_fatal_) {  // every worker meets the same bad adapter: say it once
      ClearProgress();
      fmt::print(stderr, "attncheck: {}\n", message);
      last_fatal_ = message;
    }
    (j.at("input").get<bool>() ? fatal_input_ : fatal_other_) += 1;
    worker.done = true;
  }
}

// The corpus and report folders, findings.jsonl (created empty) and the trace
// file (truncated once here; the workers append).
void Campaign::OpenOutputs() {
  for (const std::string& dir : {options_.corpus, options_.report_dir}) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) throw InputError(dir, "", "cannot create the folder: " + error.message());
  }
  findings_.Open();
  if (!options_.trace.empty()) {
    const int fd = ::open(options_.trace.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw InputError(options_.trace, "", std::string("cannot open: ") + std::strerror(errno));
    ::close(fd);
  }
}

// Forks the --jobs workers, each writing to its own pipe.
void Campaign::StartWorkers() {
  std::fflush(stdout);
  std::fflush(stderr);
  for (int w = 0; w < plan_.jobs; ++w) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      for (const Worker& other : workers_) ::close(other.fd);
      findings_.Close();
      FuzzWorker(w, fds[1], options_, plan_).Run();
      ::close(fds[1]);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(0);
    }
    ::close(fds[1]);
    Worker worker;
    worker.pid = pid;
    worker.fd = fds[0];
    workers_.push_back(std::move(worker));
  }
}

// Reads the workers until every pipe is closed.
void Campaign::ReadWorkers() {
  for (;;) {
    std::vector<pollfd> polls;
    std::vector<Worker*> owners;
    for (Worker& w : workers_) {
      if (w.fd >= 0) {
        polls.push_back({w.fd, POLLIN, 0});
        owners.push_back(&w);
      }
    }
    if (polls.empty()) break;
    const int ready = ::poll(polls.data(), polls.size(), 100);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    for (size_t p = 0; ready > 0 && p < polls.size(); ++p) {
      if ((polls[p].revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadFrom(*owners[p]);
    }
    CheckStop();
    ShowProgress(false);
  }
}

// One read from a worker's pipe; each whole line is handled.
void Campaign::ReadFrom(Worker& w) {
  char chunk[65536];
  const ssize_t n = ::read(w.fd, chunk, sizeof chunk);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    ::close(w.fd);
    w.fd = -1;
    return;
  }
  w.buffer.append(chunk, static_cast<size_t>(n));
  for (size_t end = w.buffer.find('\n'); end != std::string::npos; end = w.buffer.find('\n')) {
    const std::string line = w.buffer.substr(0, end);
    w.buffer.erase(0, end + 1);
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;
    Handle(w, j);
  }
}

// Stops the workers (SIGTERM) on Ctrl-C, --max-findings or long past --time;
// kills them (SIGKILL) 10 s later.
void Campaign::CheckStop() {
  if (!stopping_) {
    if (Stopping()) {
      stopping_ = true;
      stop_reason_ = "interrupted";
    } else if (std::all_of(plan_.adapters.begin(), plan_.adapters.end(), [&](const std::string& adapter) {
                 const auto it = written_per_adapter_.find(adapter);
                 return it != written_per_adapter_.end() && it->second >= options_.max_findings;
               })) {
      stopping_ = true;
      stop_reason_ = fmt::format("--max-findings {} reached", options_.max_findings);
    } else if (options_.time > 0.0 &&
               Seconds(Clock::now() - plan_.start) > options_.time + options_.shrink_seconds + 30.0) {
      // The workers stop themselves at --time; this catches one stuck in an adapter call.
      stopping_ = true;
      stop_reason_ = "--time long past";
    }
    if (stopping_) {
      StopWorkers(SIGTERM);
      stop_sent_ = Clock::now();
    }
  } else if (!killed_ && Seconds(Clock::now() - stop_sent_) > 10.0) {
    // A worker stuck in an adapter call does not hold the campaign hostage.
    StopWorkers(SIGKILL);
    killed_ = true;
  }
}

// Waits for every worker; one that died or never said "done" is a fault
// (unless the campaign killed it).
void Campaign::ReapWorkers() {
  for (Worker& w : workers_) {
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if ((!clean || !w.done) && !killed_) {
      ClearProgress();
      ++worker_faults_;
      fmt::print(stderr, "attncheck: fuzz worker {} {} before it finished\n", &w - workers_.data(),
                 WIFSIGNALED(status) ? fmt::format("died of signal {}", WTERMSIG(status))
                                     : fmt::format("exited with status {}", WEXITSTATUS(status)));
    }
    w.pid = -1;
  }
}

// The two summary lines (unless --quiet with nothing found); the exit code.
int Campaign::PrintSummary() {
  const double elapsed = Seconds(Clock::now() - plan_.start);
  const int64_t cases = Total(&Worker::cases);
  const int findings = this->findings();
  if (!options_.quiet || findings > 0) {
    const std::string shard =
        plan_.shard.count > 1 ? fmt::format(" (shard {}/{})", plan_.shard.index, plan_.shard.count) : "";
    fmt::print("fuzz{}: {} cases, {} checks in {:.1f} s ({:.0f} cases/s, {} worker{}){}\n", shard, cases,
               Total(&Worker::checks), elapsed, elapsed > 0.0 ? static_cast<double>(cases) / elapsed : 0.0,
               plan_.jobs, plan_.jobs == 1 ? "" : "s", stop_reason_.empty() ? "" : "; " + stop_reason_);
    fmt::print("findings: {} ({} failed, {} hazards, {} errors; {} failing checks, {} duplicates{})\n", findings,
               findings_failed_, findings_hazards_, findings_errors_, Total(&Worker::failures), duplicates_,
               over_limit_ > 0 ? fmt::format(", {} more past --max-findings not written", over_limit_) : "");
    if (!seen_.empty()) {
      fmt::print("signatures: {} (failing checks of each; one finding per signature and adapter)\n", seen_.size());
      for (const auto& [key, count] : seen_) {
        const size_t tab = key.find('\t');
        fmt::print("  {:>6}  {}  ({})\n", count, key.substr(tab + 1), key.substr(0, tab));
      }
    }
    if (findings > 0) fmt::print("written: {}, corpus {}\n", findings_.path(), options_.corpus);
    fmt::print("summary: {}\n", (std::filesystem::path(options_.report_dir) / "summary.json").string());
  }
  std::fflush(stdout);
  // A campaign stopped by Ctrl-C has run: its exit code says what it found.
  return RunExitCode({.failed = findings_failed_,
                      .errors = findings_errors_,
                      .hazards = findings_hazards_,
                      .policy = options_.hazards,
                      .worker_faults = worker_faults_ + fatal_other_,
                      .fatal_input = fatal_input_ > 0});
}

LawResult& Campaign::ResultOf(const std::string& law, const std::string& adapter) {
  for (LawResult& r : results_) {
    if (r.law == law && r.adapter == adapter) return r;
  }
  throw std::runtime_error(fmt::format("fuzz worker sent an unknown pair {} × {}", law, adapter));
}

// The run as the gate's writers take it: what each pair checked, the findings
// written, and the failing checks no folder was written for.
RunSummary Campaign::Summary() const {
  RunSummary summary;
  summary.version = std::string(Version());
  summary.seed = options_.seed;
  summary.hazards = options_.hazards;
  summary.results = results_;
  for (LawResult& r : summary.results) {
    r.unreported_failures = std::max(0, r.failed + r.errors + r.hazards - static_cast<int>(r.failures.size()));
  }
  if (stop_reason_ == "interrupted") summary.interrupted_by = StopSignalName(StopSignal());
  return summary;
}

int Campaign::Run() {
  OpenOutputs();
  {
    const StopSignals signals(SecondStop::kIsCaught);  // the workers inherit them
    StartWorkers();
    ReadWorkers();
    ReapWorkers();
  }
  ClearProgress();
  findings_.Close();
  WriteRunOutputs({options_.report_dir, options_.json, options_.junit}, Summary());
  return PrintSummary();
}

int RunFuzz(FuzzOptions options) {
  if (options.time <= 0.0 && options.cases < 0) options.time = 60.0;
  Plan plan;
  plan.shard = ParseShard(options.shard);
  plan.laws = ResolveLaws(options.laws, options.skip_laws);
  plan.adapters = ResolveAdapters(options.adapters);
  plan.jobs = options.jobs;
  plan.start = Clock::now();
  // Every adapter made and through its handshake before the corpus and report
  // folders are touched (DESIGN §8), and ended before the workers fork (each makes its own).
  ReadyAdapters(plan.adapters).Release();
  Campaign campaign(options, plan);
  return campaign.Run();
}

}  // namespace

Command AddFuzzCommand(CLI::App& program) {
  auto options = std::make_shared<FuzzOptions>();
  CLI::App* app = program.add_subcommand(
      "fuzz",
      "Fuzzing campaign: check laws on generated cases until --time-budget or --cases runs out; every failure is "
      "shrunk and written to the corpus, a report folder and <report-dir>/findings.jsonl. A run rewrites "
      "<report-dir>/summary.json and index.html (and --json, --junit) for itself, as gate does; findings.jsonl, "
      "the <law>-<hash8>/ report folders and the corpus are kept and added to, so a campaign resumes");
  app->add_option("--adapter,-a", options->adapters,
                  "Adapter to fuzz, or a pattern with * (repeatable; default: every correct adapter)")
      ->allow_extra_args(false);
  app->add_option("--law,-l", options->laws, "Law to check, or a pattern with * (repeatable; default: every law)")
      ->allow_extra_args(false);
  app->add_option("--time-budget,--time,-t", options->time,
                  "Wall-clock seconds for the campaign (default 60 when --cases is not given); --time is the "
                  "older spelling of the same option")
      ->check(PositiveSeconds());
  app->add_option("--cases,-n", options->cases,
                  "Check global cases 0..N-1 over all laws together (case g: law g mod L, stream case g / L, on every "
                  "adapter), so fuzz --cases N·L checks what gate --cases N does; shards split them")
      ->check(IntIn(0, int64_t{1} << 52));
  app->add_option("--skip-law", options->skip_laws, "Law not to check, or a pattern with * (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--seed,-s", options->seed, "Seed of the case streams")->capture_default_str()->check(Seed());
  app->add_option("--jobs,-j", options->jobs, "Worker processes")->capture_default_str()->check(IntIn(1, 1024));
  app->add_option("--shard", options->shard,
                  "Check only the cases g with g mod n == i (i/n; n shards cover one unsharded run)")
      ->capture_default_str();
  app->add_option("--corpus", options->corpus, "Folder for the shrunk failing cases (corpus entries)")
      ->capture_default_str();
  app->add_option("--report-dir", options->report_dir,
                  "Folder for summary.json and index.html (this run's), findings.jsonl (appended) and one "
                  "<law>-<hash8>/ report per finding, named as gate names them")
      ->capture_default_str();
  app->add_option("--json", options->json, "Also write the JSON summary to this file");
  app->add_option("--junit", options->junit, "Write JUnit XML (one testcase per law × adapter) to this file");
  AddHazardsOption(app, &options->hazards);
  app->add_option("--max-findings", options->max_findings,
                  "Write at most this many distinct findings per adapter: signatures (law, comparison step, role of "
                  "the worst element, mask form); later failures of a signature are counted, not written. The "
                  "campaign stops when every adapter has reached it")
      ->capture_default_str()
      ->check(IntIn(1, 1000000));
  app->add_option("--shrink-seconds", options->shrink_seconds, "Seconds to shrink each failure (0: do not shrink)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app->add_option("--trace", options->trace, "Write one line per checked case (hash, g, law, adapter)")
      ->group("");
  app->add_flag("--quiet,-q", options->quiet, "No progress line and no summary unless something was found");
  return {app, [options] { return RunFuzz(*options); }};
}

}  // namespace attncheck::cli
