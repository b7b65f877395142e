// Failures grouped by cause: one FailureGroup per distinct case written (the
// minimal case when shrunk), naming every law × adapter pair it breaks, with the
// pair's failures that no report was written for. summary.json "groups" and
// index.html read these; a run's report folders are one per group.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/summary.h"

namespace attncheck {

// One law × adapter pair a group's case breaks.
struct GroupMember {
  std::string law, adapter;
  const FailureRecord* first = nullptr;  // the pair's first record in the group
  int records = 0;                       // the pair's records in the group
  int pair_not_written = 0;              // the pair's LawResult::unreported_failures
};

struct FailureGroup {
  std::string id;         // "g1", "g2", … in order of first appearance (law-major)
  std::string case_hash;  // FailureRecord::case_hash
  const FailureRecord* report = nullptr;  // the record whose folder holds the case (case_file not empty)
  std::vector<GroupMember> members;       // law-major, as the results are
};

// The groups of `summary`'s failure records, keyed by case hash; records without
// a case hash (none written) group by their case file. Points into `summary`.
std::vector<FailureGroup> GroupFailures(const RunSummary& summary);

// The group's case line: its records' (FailureRecord::case_line), else read
// from its case file ("(case file unreadable: …)" when it cannot be).
std::string GroupCaseLine(const FailureGroup& group);

// Gives records that joined a group (empty case_file: their case was written by
// another pair) the group's case and report files; records left without a
// folder (its writer was stopped) are dropped and counted as unreported.
void LinkGroupFiles(std::vector<LawResult>& results);

// [{"id", "case_hash", "case", "case_file", "report_file", "outcome", "laws",
//   "adapters", "members": [{"law", "adapter", "outcome", "message", "case_index",
//   "records", "pair_failing", "pair_not_written"}]}]; "outcome" of a group is
// that of its worst member (error > fail > hazard).
nlohmann::json GroupsJson(const std::vector<FailureGroup>& groups, const RunSummary& summary);

}  // namespace attncheck
