// Failures grouped by signature (failure_groups.h): the records of every pair,
// keyed by signature (by case hash for records without one), in the order the
// results list them.
#include "reports/failure_groups.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cases/case_json.h"

namespace attncheck {
namespace {

std::string GroupKey(const FailureRecord& f) {
  if (!f.signature.empty()) return "signature:" + f.signature;
  return f.case_hash.empty() ? "file:" + f.case_file : f.case_hash;
}

int FindingCount(const LawResult& r) { return r.failed + r.errors + r.hazards; }

}  // namespace

std::vector<FailureGroup> GroupFailures(const RunSummary& summary) {
  std::vector<FailureGroup> groups;
  std::map<std::string, size_t> index;  // key → groups[i]
  for (const LawResult& r : summary.results) {
    for (const FailureRecord& f : r.failures) {
      const auto [it, added] = index.try_emplace(GroupKey(f), groups.size());
      if (added) {
        groups.emplace_back();
        groups.back().id = fmt::format("g{}", groups.size());
        groups.back().case_hash = f.case_hash;
        groups.back().signature = f.signature;
      }
      FailureGroup& group = groups[it->second];
      if (group.report == nullptr && !f.case_file.empty()) group.report = &f;
      auto member = std::find_if(group.members.begin(), group.members.end(), [&](const GroupMember& m) {
        return m.law == r.law && m.adapter == r.adapter;
      });
      if (member == group.members.end()) {
        member = group.members.insert(group.members.end(), {r.law, r.adapter, &f, 0, r.unreported_failures});
      }
      ++member->records;
      group.repeats += f.repeats;
    }
  }
  std::erase_if(groups, [](const FailureGroup& g) { return g.report == nullptr; });
  return groups;
}

std::string GroupCaseLine(const FailureGroup& group) {
  if (!group.report->case_line.empty()) return group.report->case_line;
  try {
    return ToLine(ReadCaseFile(group.report->case_file));
  } catch (const std::exception& e) {
    return std::string("(case file unreadable: ") + e.what() + ")";
  }
}

void LinkGroupFiles(std::vector<LawResult>& results) {
  std::map<std::string, const FailureRecord*> written;  // case hash → the record with its folder
  for (const LawResult& r : results) {
    for (const FailureRecord& f : r.failures) {
      if (!f.case_file.empty() && !f.case_hash.empty()) written.try_emplace(f.case_hash, &f);
    }
  }
  for (LawResult& r : results) {
    for (FailureRecord& f : r.failures) {
      if (!f.case_file.empty()) continue;
      const auto it = written.find(f.case_hash);
      if (it == written.end()) continue;
      f.case_file = it->second->case_file;
      f.report_file = it->second->report_file;
    }
    const auto unlinked = std::erase_if(r.failures, [](const FailureRecord& f) { return f.case_file.empty(); });
    r.unreported_failures += static_cast<int>(unlinked);
  }
}

nlohmann::json GroupsJson(const std::vector<FailureGroup>& groups, const RunSummary& summary) {
  nlohmann::json json = nlohmann::json::array();
  for (const FailureGroup& g : groups) {
    nlohmann::json members = nlohmann::json::array();
    std::vector<std::string> laws, adapters;
    Outcome outcome = g.members.front().first->outcome;
    for (const GroupMember& m : g.members) {
      const auto pair = std::find_if(summary.results.begin(), summary.results.end(), [&](const LawResult& r) {
        return r.law == m.law && r.adapter == m.adapter;
      });
      members.push_back({{"law", m.law},
                         {"adapter", m.adapter},
                         {"outcome", std::string(Name(m.first->outcome))},
                         {"message", m.first->message.substr(0, m.first->message.find('\n'))},
                         {"case_index", m.first->case_index},
                         {"records", m.records},
                         {"pair_findings", pair != summary.results.end() ? FindingCount(*pair) : 0},
                         {"pair_not_written", m.pair_not_written}});
      if (std::find(laws.begin(), laws.end(), m.law) == laws.end()) laws.push_back(m.law);
      if (std::find(adapters.begin(), adapters.end(), m.adapter) == adapters.end()) adapters.push_back(m.adapter);
      if (ExitWeight(m.first->outcome, summary.hazards) > ExitWeight(outcome, summary.hazards)) {
        outcome = m.first->outcome;
      }
    }
    json.push_back({{"id", g.id},
                    {"signature", g.signature},
                    {"repeats", g.repeats},
                    {"case_hash", g.case_hash},
                    {"case", GroupCaseLine(g)},
                    {"case_file", g.report->case_file},
                    {"report_file", g.report->report_file},
                    {"outcome", std::string(Name(outcome))},
                    {"laws", laws},
                    {"adapters", adapters},
                    {"members", std::move(members)}});
  }
  return json;
}

}  // namespace attncheck
