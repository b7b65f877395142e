// A Source offers typed draws only (DESIGN §3, STYLE "A generator is a decoder").
// Every driver (RapidCheck, libFuzzer, CLI campaigns, corpus files) supplies one,
// and the single Decode() turns draws into a Case.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>

namespace attncheck {

template <class S>
concept Source = requires(S& s, int64_t lo, int64_t hi, std::string_view name) {
  { s.Int(lo, hi, name) } -> std::convertible_to<int64_t>;  // uniform-ish in [lo, hi]; minimum when exhausted
  { s.Bool(name) } -> std::convertible_to<bool>;
};

// Picks one entry of a table through Int(0, n−1).
template <Source S, class T>
const T& Pick(S& s, std::span<const T> table, std::string_view name) {
  return table[static_cast<size_t>(s.Int(0, static_cast<int64_t>(table.size()) - 1, name))];
}
template <Source S, class T, size_t N>
const T& Pick(S& s, const T (&table)[N], std::string_view name) {
  return Pick(s, std::span<const T>(table, N), name);
}

}  // namespace attncheck
