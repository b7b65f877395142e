// One path for user-facing input errors (STYLE.md "Errors"): a typed exception
// carrying file, field and reason, printed once by the program with exit code 2 as
// one line: "FILE: FIELD: REASON" for a file ("case.json: batch: expected …"), and
// "OPTION: REASON" for a command-line option or environment variable
// ("--adapter: unknown adapter 'x'"; InputError::Option).
#pragma once

#include <stdexcept>
#include <string>

namespace attncheck {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string reason)
      : std::runtime_error(Format(file, field, reason)),
        file_(std::move(file)), field_(std::move(field)), reason_(std::move(reason)) {}
  // A bad command-line option (or environment variable) value: file() is empty.
  static InputError Option(std::string option, std::string reason) {
    return InputError("", std::move(option), std::move(reason));
  }
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  static std::string Format(const std::string& file, const std::string& field, const std::string& reason) {
    std::string s = file;
    if (!field.empty()) s += (s.empty() ? "" : ": ") + field;
    return (s.empty() ? std::string("input") : s) + ": " + reason;
  }
  std::string file_, field_, reason_;
};

}  // namespace attncheck
