// Failures grouped by cause: one FailureGroup per signature (properties/signature.h:
// law, comparison step, role of the worst element, mask form), naming every
// law × adapter pair in it, with the pair's failures that no report was written
// for. summary.json "groups" and index.html read these; a group's case is its
// first record's with a report folder.
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
  std::string case_hash;  // FailureRecord::case_hash of its first record
  std::string signature;  // FailureRecord::signature (empty: grouped by case hash)
  int repeats = 0;        // failing checks of the signature that no record was written for (fuzz)
  const FailureRecord* report = nullptr;  // the record whose folder holds the case (case_file not empty)
  std::vector<GroupMember> members;       // law-major, as the results are
};

// The groups of `summary`'s failure records, keyed by signature; records without
// one (older files) by case hash, and without a case hash (none written) by their
// case file. Points into `summary`.
std::vector<FailureGroup> GroupFailures(const RunSummary& summary);

// The group's case line: its records' (FailureRecord::case_line), else read
// from its case file ("(case file unreadable: …)" when it cannot be).
std::string GroupCaseLine(const FailureGroup& group);

// Gives records that joined a group (empty case_file: their case was written by
// another pair) the group's case and report files; records left without a
// folder (its writer was stopped) are dropped and counted as unreported.
void LinkGroupFiles(std::vector<LawResult>& results);

// [{"id", "signature", "repeats", "case_hash", "case", "case_file", "report_file", "outcome", "laws",
//   "adapters", "members": [{"law", "adapter", "outcome", "message", "case_index",
//   "records", "pair_failing", "pair_not_written"}]}]; "outcome" of a group is
// that of its worst member (error > fail > hazard).
nlohmann::json GroupsJson(const std::vector<FailureGroup>& groups, const RunSummary& summary);

}  // namespace attncheck
