// <report-dir>/run.json: what one `gate` run wrote into its report folder (its
// failure folders and files), so the next run into the same folder removes exactly
// that, leaving anything else there (a user's own files) as it is.
#pragma once

#include <string>
#include <vector>

namespace attncheck {

// The entries a run owns, as names directly inside the report folder.
struct RunManifest {
  std::vector<std::string> failure_folders;  // <law>-<hash8>
  std::vector<std::string> files;            // summary.json, index.html, findings.jsonl, in-flight.json
};

// Writes <report_dir>/run.json (atomic): {"failure_folders": [...], "files": [...]}.
void WriteRunManifest(const std::string& report_dir, const RunManifest& manifest);

// Before a run: removes every entry the previous run's run.json lists (and run.json)
// and returns the lines to print on stderr: one naming what was removed, and one
// warning when failure folders no run.json owns (an older attncheck's) are left.
// A run.json naming anything but a plain name inside the folder throws InputError.
std::vector<std::string> ClearPreviousRun(const std::string& report_dir);

}  // namespace attncheck
