// Out-of-process adapters (adapters/process): the strict protocol reader on
// malformed bytes, live backends that break the protocol, the fault:* adapters
// through the `attncheck gate` binary (classification, exit code, every case
// run), findings.jsonl surviving a killed harness, isolated: against in-process,
// and the numpy example backend against eigen.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/harness.h"
#include "adapters/process/process_adapter.h"
#include "adapters/process/protocol.h"
#include "adapters/registry.h"
#include "cases/error.h"
#include "properties/laws.h"
#include "reference/scenario.h"
#include "tests/cli_support.h"
#include "tests/law_stream.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;
using process::EncodeMessage;
using process::Message;
using process::ParseMessage;
using process::ProtocolError;
using process::Tensor;

// ---- protocol reader ----------------------------------------------------

std::vector<uint8_t> Framed(const std::string& header, const std::string& payload = "") {
  std::vector<uint8_t> bytes;
  const uint32_t n = static_cast<uint32_t>(header.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(n >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

// The one-line message ParseMessage throws for `bytes` (empty when it parses).
std::string Rejection(const std::vector<uint8_t>& bytes) {
  try {
    ParseMessage(bytes);
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.fault(), AdapterFault::kGarbage);
    return e.what();
  }
  return "";
}

TEST(ProtocolReader, RoundTripsHeaderAndTensors) {
  const std::vector<float> q = {1.5f, -2.0f, 0.25f, 3.0f, 4.0f, -0.0f};
  const std::vector<int> positions = {0, 7, 65536};
  const std::vector<uint8_t> mask = {1, 0, 1};
  const std::vector<Tensor> tensors = {Tensor::F32("q", {1, 2, 3}, q), Tensor::I32("positions", {3}, positions),
                                       Tensor::U8("mask", {1, 3}, mask)};
  const Message m = ParseMessage(EncodeMessage({{"op", "attention"}, {"scale", 0.125}}, tensors));
  EXPECT_EQ(m.op(), "attention");
  EXPECT_EQ(m.header["scale"], 0.125);
  ASSERT_EQ(m.tensors.size(), 3u);
  const std::span<const float> got = m.Get("q", process::TensorDtype::kF32, {1, 2, 3}).f32();
  EXPECT_EQ(std::vector<float>(got.begin(), got.end()), q);
  const std::span<const int32_t> got_positions = m.Get("positions", process::TensorDtype::kI32, {3}).i32();
  EXPECT_EQ(std::vector<int>(got_positions.begin(), got_positions.end()), positions);
  EXPECT_EQ(m.tensors[2].bytes, mask);
  // A tensor asked for with another shape or dtype is one garbage line.
  EXPECT_THROW(m.Get("q", process::TensorDtype::kF32, {1, 3, 2}), ProtocolError);
  EXPECT_THROW(m.Get("mask", process::TensorDtype::kF32, {1, 3}), ProtocolError);
  EXPECT_THROW(m.Get("k", process::TensorDtype::kF32, {1}), ProtocolError);
}

TEST(ProtocolReader, RejectsMalformedMessagesWithOneLine) {
  const std::string f32x2 = R"({"op":"result","tensors":[{"name":"out","dtype":"f32","shape":[2]}]})";
  struct Bad {
    std::vector<uint8_t> bytes;
    std::string says;
  };
  std::vector<uint8_t> huge_length = {0x00, 0x00, 0x00, 0x80};  // 2^31
  std::string deep(100, '[');
  const std::vector<Bad> bad = {
      {{}, "no length prefix"},
      {{0x05, 0x00}, "no length prefix"},
      {{0, 0, 0, 0}, "header length is 0"},
      {huge_length, "over the limit"},
      {{0x40, 0, 0, 0, '{', '}'}, "header length 64 but only 2 bytes follow"},
      {Framed("{nope"), "not valid JSON"},
      {Framed("[1,2]"), "not a JSON object"},
      {Framed(R"({"operation":"hello"})"), "no string field 'op'"},
      {Framed(R"({"op":7})"), "no string field 'op'"},
      {Framed(R"({"op":"x","tensors":{}})"), "not an array"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"f64","shape":[1]}]})", "12345678"), "unknown dtype 'f64'"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"f32","shape":[-1]}]})"), "not a non-negative integer"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"f32","shape":[1.5]}]})"), "not a non-negative integer"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"f32","shape":[1099511627776]}]})"), "message limit"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"f32","shape":[65536,65536]}]})"), "message limit"},
      {Framed(R"({"op":"x","tensors":[{"name":"a","dtype":"u8","shape":[1]},{"name":"a","dtype":"u8","shape":[1]}]})",
              "xy"),
       "listed twice"},
      {Framed(R"({"op":"x","tensors":[{"dtype":"u8","shape":[1]}]})", "x"), "name is missing"},
      {Framed(f32x2, std::string(7, '\0')), "states 8 bytes of tensors but 7 bytes follow"},
      {Framed(f32x2, std::string(9, '\0')), "states 8 bytes of tensors but 9 bytes follow"},
      {Framed(R"({"op":"x","a":)" + deep + std::string(100, ']') + "}"), "nests deeper"},
  };
  for (const Bad& b : bad) {
    const std::string why = Rejection(b.bytes);
    EXPECT_NE(why.find(b.says), std::string::npos) << "said: " << why << "\nexpected: " << b.says;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  // The same framing, well-formed, parses (the table above is not rejecting everything).
  EXPECT_EQ(Rejection(Framed(f32x2, std::string(8, '\0'))), "");
}

TEST(ProtocolReader, CapabilitiesRoundTripAndRejectUnknownNames) {
  const std::unique_ptr<Adapter> eigen = MakeAdapter("eigen");
  const Capabilities caps = eigen->capabilities();
  const Capabilities back = process::CapabilitiesFromJson(process::CapabilitiesToJson(caps));
  // Every convention, the descriptor and its forms too (protocol 2).
  EXPECT_EQ(back.masks, caps.masks);
  EXPECT_NE(std::find(back.masks.begin(), back.masks.end(), MaskConvention::kDescriptor), back.masks.end());
  EXPECT_TRUE(back.descriptor_forms.causal_bottom_right && back.descriptor_forms.seqused_k);
  EXPECT_FALSE(back.descriptor_forms.varlen);
  EXPECT_EQ(back.encodings, caps.encodings);
  EXPECT_EQ(back.rope_scalings, caps.rope_scalings);
  EXPECT_EQ(back.has_session, caps.has_session);
  EXPECT_EQ(back.masked_rows, caps.masked_rows);
  try {
    process::CapabilitiesFromJson({{"masks", {"add-inf", "add-nan"}}});
    ADD_FAILURE() << "an unknown mask convention was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("capabilities.masks: unknown name 'add-nan'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(process::CapabilitiesFromJson({{"gqa", "yes"}}), ProtocolError);
  EXPECT_THROW(process::CapabilitiesFromJson({{"max_tokens", -3}}), ProtocolError);
}

// The declared accuracy crosses the handshake; each key is optional (default: strict).
TEST(ProtocolReader, AccuracyRoundTripsWithOptionalKeys) {
  Capabilities caps;
  caps.accuracy = {.score_accum = Dtype::kF32, .pv_accum = Dtype::kF16, .p_in_input_dtype = true};
  EXPECT_EQ(process::CapabilitiesFromJson(process::CapabilitiesToJson(caps)).accuracy, caps.accuracy);
  EXPECT_EQ(process::CapabilitiesFromJson(nlohmann::json::object()).accuracy, Accuracy{});
  const Accuracy partial = process::CapabilitiesFromJson({{"accuracy", {{"scores_in_input_dtype", true}}}}).accuracy;
  EXPECT_EQ(partial, (Accuracy{.scores_in_input_dtype = true}));
  EXPECT_THROW(process::CapabilitiesFromJson({{"accuracy", {{"pv_accum", "f8"}}}}), ProtocolError);
  EXPECT_THROW(process::CapabilitiesFromJson({{"accuracy", {{"p_in_input_dtype", 1}}}}), ProtocolError);
}

// ---- guard margins survive isolation ---------------------------------------

enum class Misbehaviour { kNone, kWritePastEnd, kModifyK, kLeaveTail };

class BadAdapter final : public Adapter {
 public:
  explicit BadAdapter(Misbehaviour m) : misbehaviour_(m) {}
  std::string name() const override { return "bad"; }
  std::string description() const override { return "breaks the buffer contract"; }
  Capabilities capabilities() const override { return Capabilities{}; }
  void attention(const AttentionArgs& args) override {
    std::fill(args.out.begin(), args.out.end() - (misbehaviour_ == Misbehaviour::kLeaveTail ? 2 : 0), 0.0f);
    if (misbehaviour_ == Misbehaviour::kWritePastEnd) args.out.data()[args.out.size()] = 1.0f;
    if (misbehaviour_ == Misbehaviour::kModifyK) const_cast<float*>(args.k.data())[0] += 1.0f;
  }

 private:
  Misbehaviour misbehaviour_;
};

AdapterRun RunIsolated(Misbehaviour m) {
  Case c;
  c.rows = {RowSpec{.documents = {5}}};
  c.query_len = 5;
  c.head_dim = 8;
  c.value_dim = 8;
  c.seed = 7;
  const std::unique_ptr<Adapter> isolated =
      process::MakeIsolatedAdapter(std::make_unique<BadAdapter>(m), "isolated:bad");
  return RunAttention(*isolated, reference::MakeScenario(c));
}

// In the child the adapter works inside guard margins too: a contract breach is
// still a contract fault (a law failure), not lost and not an adapter error.
TEST(IsolatedGuards, ContractBreachesAreReportedFromTheChild) {
  const AdapterRun good = RunIsolated(Misbehaviour::kNone);
  EXPECT_TRUE(good.ok()) << good.fault;
  struct Expect {
    Misbehaviour m;
    const char* says;
  };
  for (const Expect& e : {Expect{Misbehaviour::kWritePastEnd, "adapter wrote outside its output (0 elements before, 1 after)"},
                          Expect{Misbehaviour::kModifyK, "adapter modified input k"},
                          Expect{Misbehaviour::kLeaveTail, "adapter left 2 output elements unwritten"}}) {
    const AdapterRun run = RunIsolated(e.m);
    EXPECT_EQ(run.kind, AdapterFault::kContract) << run.fault;
    EXPECT_NE(run.fault.find(e.says), std::string::npos) << run.fault;
  }
}

// ---- the gate binary ------------------------------------------------------

using GateRun = test::CliRun;
using test::Quoted;
using test::ReadText;

std::vector<nlohmann::json> JsonLines(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

class ProcessGateTest : public test::ScratchDirTest {
 protected:
  // `attncheck <args>` from the source folder, with a short per-call limit.
  GateRun Gate(const std::string& args, const std::string& env = "ATTNCHECK_CALL_TIMEOUT=0.3") {
    return test::RunAttncheck(dir_, ATTNCHECK_SOURCE_DIR, args, env);
  }
  nlohmann::json Summary(const std::string& report) { return nlohmann::json::parse(ReadText(dir_ / report / "summary.json")); }
};

struct FaultCase {
  const char* adapter;
  int exit_code;
  const char* outcome;  // of the faulty cases
  const char* fault;    // Fault name on error verdicts, "none" on failures
  const char* says;     // in the verdict message
};

void PrintTo(const FaultCase& f, std::ostream* os) { *os << f.adapter; }

class FaultAdapters : public ProcessGateTest, public ::testing::WithParamInterface<FaultCase> {};

// Each fault:* adapter misbehaves on attention calls with odd Tq: the gate runs
// every case, classifies each bad one, writes reports and findings.jsonl, and
// exits 3 (1 for NaN, which is the kernel's wrong answer, not a fault).
TEST_P(FaultAdapters, ClassifiedReportedAndTheRunFinishes) {
  const FaultCase& f = GetParam();
  const int cases = 12;
  const std::string report = "report";
  const GateRun run = Gate(fmt::format("gate --adapter {} --law reference-agreement --cases {} --report-dir {} -q",
                                   f.adapter, cases, Quoted((dir_ / report).string())));
  EXPECT_EQ(run.code, f.exit_code) << run.out << run.err;
  const nlohmann::json summary = Summary(report);
  ASSERT_EQ(summary["results"].size(), 1u);
  const nlohmann::json& r = summary["results"][0];
  const int bad = std::string(f.outcome) == "error" ? r["errors"].get<int>() : r["failed"].get<int>();
  EXPECT_EQ(r["cases"], cases) << r.dump();
  EXPECT_GT(bad, 0) << r.dump();
  EXPECT_GT(r["passed"].get<int>(), 0) << "no good case ran: " << r.dump();
  EXPECT_EQ(r["passed"].get<int>() + bad, cases) << r.dump();

  // findings.jsonl: one line per bad case, each classified, with its case; the
  // first 3 of the pair written up (a report folder and a replay command) unless
  // their case was written already.
  const std::vector<nlohmann::json> findings = JsonLines(dir_ / report / "findings.jsonl");
  ASSERT_EQ(static_cast<int>(findings.size()), bad);
  int written = 0;
  for (const nlohmann::json& line : findings) {
    EXPECT_EQ(line["outcome"], f.outcome);
    EXPECT_EQ(line["fault"], f.fault);
    EXPECT_NE(line["message"].get<std::string>().find(f.says), std::string::npos) << line["message"];
    EXPECT_TRUE(line.contains("case"));
    written += line.contains("replay") ? 1 : 0;
  }
  EXPECT_TRUE(findings.front().contains("replay"));
  EXPECT_LE(written, 3);
  // A good case ran after a bad one: the harness went on (faulty cases are
  // not all at the end of the stream).
  EXPECT_LT(findings.front()["case_index"].get<int>(), cases - 1);

  // The report folder names the classification.
  const fs::path folder = findings.front()["report"].get<std::string>();
  const nlohmann::json meta = nlohmann::json::parse(ReadText(folder / "meta.json"));
  EXPECT_EQ(meta["outcome"], f.outcome);
  if (std::string(f.outcome) == "error") {
    EXPECT_EQ(meta["fault"], f.fault);
    EXPECT_NE(ReadText(folder / "report.md").find(fmt::format("Classification: **{}**", f.fault)), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Process, FaultAdapters,
    ::testing::Values(FaultCase{"fault:segv", 3, "error", "crash", "killed by signal 11"},
                      FaultCase{"fault:hang", 3, "error", "timeout", "took longer than 0.3 s; backend killed"},
                      FaultCase{"fault:throw", 3, "error", "exception", "injected fault: kernel launch failed"},
                      FaultCase{"isolated:fault:throw", 3, "error", "exception", "injected fault"},
                      FaultCase{"fault:wrong-shape", 3, "error", "garbage", "tensor 'out' is f32"},
                      FaultCase{"fault:nan", 1, "fail", "none", "non-finite output nan"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) {
      std::string name = info.param.adapter;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

// Backends that break the protocol mid-run: each bad answer is one classified
// line, and the gate still runs every case.
TEST_F(ProcessGateTest, BrokenBackendsAreClassifiedAndTheRunGoesOn) {
  struct Broken {
    const char* mode;
    const char* fault;
    const char* says;
  };
  for (const Broken& b : {Broken{"oversize", "garbage", "header length 2147483648 is over the limit"},
                          Broken{"bad-json", "garbage", "header is not valid JSON"},
                          Broken{"short", "crash", "stream ended in the middle of a message"},
                          Broken{"wrong-op", "garbage", "has op 'surprise', expected 'result'"},
                          Broken{"exit", "crash", "exited with status 7"},
                          Broken{"error", "exception", "cuda out of memory"}}) {
    SCOPED_TRACE(b.mode);
    const std::string report = std::string("broken-") + b.mode;
    const GateRun run = Gate(fmt::format("gate --adapter 'exec:python3 tests/data/process/broken_backend.py {}' "
                                     "--law reference-agreement --cases 4 --report-dir {} -q",
                                     b.mode, Quoted((dir_ / report).string())));
    EXPECT_EQ(run.code, 3) << run.out << run.err;
    const nlohmann::json r = Summary(report)["results"][0];
    EXPECT_EQ(r["cases"], 4);
    EXPECT_EQ(r["errors"], 4) << r.dump();
    const std::vector<nlohmann::json> findings = JsonLines(dir_ / report / "findings.jsonl");
    ASSERT_EQ(findings.size(), 4u);
    for (const nlohmann::json& line : findings) {
      EXPECT_EQ(line["fault"], b.fault);
      const std::string message = line["message"];
      EXPECT_NE(message.find(b.says), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST_F(ProcessGateTest, BackendThatCannotStartIsOneUsageLine) {
  for (const char* adapter : {"'exec:/nonexistent/backend'", "'exec:printf xyz'", "exec:"}) {
    SCOPED_TRACE(adapter);
    const GateRun run = Gate(fmt::format("gate --adapter {} --cases 1 --report-dir {}", adapter,
                                     Quoted((dir_ / "r").string())));
    EXPECT_EQ(run.code, 2) << run.out << run.err;
    // One line of ours (the backend's own stderr, e.g. the shell's "not found", passes through).
    std::vector<std::string> ours;
    std::stringstream lines(run.err);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("attncheck: ", 0) == 0) ours.push_back(line);
    }
    ASSERT_EQ(ours.size(), 1u) << run.err;
    EXPECT_NE(ours[0].find("--adapter"), std::string::npos) << ours[0];
  }
  const GateRun bad_timeout =
      Gate("gate --adapter fault:hang --cases 1 --report-dir " + Quoted((dir_ / "t").string()), "ATTNCHECK_CALL_TIMEOUT=soon");
  EXPECT_EQ(bad_timeout.code, 2);
  EXPECT_NE(bad_timeout.err.find("ATTNCHECK_CALL_TIMEOUT"), std::string::npos) << bad_timeout.err;
}

// findings.jsonl is written as findings happen: a gate killed mid-run (no
// summary.json yet) has already put every finding so far on disk.
TEST_F(ProcessGateTest, FindingsSurviveAKilledHarness) {
  const fs::path report = dir_ / "killed";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("ATTNCHECK_CALL_TIMEOUT", "0.1", 1);
    execl(ATTNCHECK_BINARY, "attncheck", "gate", "--adapter", "fault:hang", "--law", "reference-agreement", "--cases",
          "100000", "--report-dir", report.c_str(), "-q", static_cast<char*>(nullptr));
    _exit(127);
  }
  const fs::path findings = report / "findings.jsonl";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    std::error_code ignored;
    const std::string text = fs::exists(findings, ignored) ? ReadText(findings) : std::string();
    if (std::count(text.begin(), text.end(), '\n') >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(report / "summary.json"));
  const std::vector<nlohmann::json> lines = JsonLines(findings);  // every line whole JSON
  ASSERT_GE(lines.size(), 3u);
  for (const nlohmann::json& line : lines) EXPECT_EQ(line["fault"], "timeout");
}

// isolated:NAME gives the same verdicts as NAME in-process.
TEST_F(ProcessGateTest, IsolatedEigenMatchesEigen) {
  const std::string laws = "--law reference-agreement --law decode-consistency --law rope-relative --law masked-rows";
  const GateRun direct = Gate("gate --adapter eigen " + laws + " --cases 40 -q --report-dir " + Quoted((dir_ / "a").string()));
  const GateRun isolated =
      Gate("gate --adapter isolated:eigen " + laws + " --cases 40 -q --report-dir " + Quoted((dir_ / "b").string()),
           "ATTNCHECK_CALL_TIMEOUT=30");
  EXPECT_EQ(direct.code, 0) << direct.out << direct.err;
  EXPECT_EQ(isolated.code, 0) << isolated.out << isolated.err;
  const nlohmann::json a = Summary("a")["results"], b = Summary("b")["results"];
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    for (const char* field : {"law", "cases", "passed", "failed", "errors", "skipped"}) {
      EXPECT_EQ(a[i][field], b[i][field]) << field << " of " << a[i]["law"];
    }
  }
}

// The numpy example backend passes the gate at the same case counts as eigen,
// and a copy with a one-line defect (masks ignored) fails it.
TEST_F(ProcessGateTest, NumpyBackendPassesLikeEigen) {
  if (!test::HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const std::string backend = "'exec:/usr/bin/python3 examples/process/attention_backend.py'";
  // isolated:eigen: eigen as the process protocol offers it (every convention, the
  // descriptor too over protocol 2), so both draw the same cases.
  const GateRun eigen =
      Gate("gate --adapter isolated:eigen --cases 100 -q --report-dir " + Quoted((dir_ / "eigen").string()));
  const GateRun numpy = Gate("gate --adapter " + backend + " --cases 100 -q --report-dir " + Quoted((dir_ / "numpy").string()),
                         "ATTNCHECK_CALL_TIMEOUT=30");
  EXPECT_EQ(eigen.code, 0) << eigen.out << eigen.err;
  EXPECT_EQ(numpy.code, 0) << numpy.out << numpy.err;
  nlohmann::json a = Summary("eigen")["results"], b = Summary("numpy")["results"];
  // isolated:eigen answers the backward call through the protocol (the example has none):
  // its backward-* laws pass there; the forward laws are compared below.
  nlohmann::json forward_a = nlohmann::json::array(), forward_b = nlohmann::json::array();
  for (const nlohmann::json& r : a) {
    if (!FindLaw(r["law"].get<std::string>())->needs.backward) {
      forward_a.push_back(r);
      continue;
    }
    EXPECT_EQ(r["failed"], 0) << r["law"];
    EXPECT_GT(r["passed"].get<int>(), 50) << r["law"];
  }
  for (const nlohmann::json& r : b)
    if (!FindLaw(r["law"].get<std::string>())->needs.backward) forward_b.push_back(r);
  a = forward_a;
  b = forward_b;
  ASSERT_EQ(a.size(), b.size());
  int passed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const char* field : {"law", "cases", "failed"}) {
      EXPECT_EQ(a[i][field], b[i][field]) << field << " of " << a[i]["law"];
    }
    // A case whose declared bound cannot tell a right row from a wrong one is a skip
    // unless the kernel's own output sits within the floor (properties/tolerance.h):
    // two correct float32 kernels may split such a case differently, never fail it.
    EXPECT_EQ(a[i]["passed"].get<int>() + a[i]["skipped"].get<int>(),
              b[i]["passed"].get<int>() + b[i]["skipped"].get<int>()) << a[i]["law"];
    // So every skip one has and the other has not is such a case, named as one.
    for (const auto& [x, y] : {std::pair{&a[i], &b[i]}, std::pair{&b[i], &a[i]}}) {
      const nlohmann::json& mine = (*x).value("skip_reasons", nlohmann::json::object());
      const nlohmann::json& theirs = (*y).value("skip_reasons", nlohmann::json::object());
      for (const auto& [reason, count] : mine.items()) {
        if (theirs.contains(reason) && theirs[reason] == count) continue;
        EXPECT_NE(reason.find("uninformative"), std::string::npos) << a[i]["law"] << ": " << reason;
      }
    }
    passed += b[i]["passed"].get<int>();
  }
  EXPECT_GT(passed, 0);

  // One-line defect: a bool "may attend" mask is ignored (every key visible).
  const fs::path broken = dir_ / "broken_backend.py";
  std::string text = ReadText(fs::path(ATTNCHECK_SOURCE_DIR) / "examples/process/attention_backend.py");
  const std::string line = "    blocked, bias = attncheck.additive_blocked(call)\n";
  ASSERT_NE(text.find(line), std::string::npos);
  text.replace(text.find(line), line.size(),
               "    blocked, bias = attncheck.additive_blocked(call)\n"
               "    blocked &= call.mask_convention != \"bool-visible\"\n");
  std::ofstream(broken) << text;
  const GateRun defect = Gate("gate --adapter " + Quoted("exec:/usr/bin/python3 " + broken.string()) +
                                  " --law non-interference --cases 40 -q --report-dir " +
                                  Quoted((dir_ / "defect").string()),
                              "ATTNCHECK_CALL_TIMEOUT=30 PYTHONPATH=" + Quoted(ATTNCHECK_SOURCE_DIR "/python"));
  EXPECT_EQ(defect.code, 1) << defect.out << defect.err;
}

}  // namespace
}  // namespace attncheck
