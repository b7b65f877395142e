// KERPLE power and logarithmic kernels with per-head parameter tables (kerple.h).
#include "reference/kerple.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace attncheck::reference {
namespace {

constexpr std::array<double, 8> kPowerR1 = {1, 0.5, 2, 0.25, 1.5, 0.125, 0.75, 4};
constexpr std::array<double, 8> kPowerR2 = {1, 0.5, 1.5, 2, 0.25, 1.25, 0.75, 1.75};
constexpr std::array<double, 8> kLogR1 = {1, 2, 0.5, 4, 0.25, 1.5, 3, 8};
constexpr std::array<double, 8> kLogR2 = {1, 0.5, 2, 0.25, 4, 1.5, 0.125, 8};

}  // namespace

KerpleParams KerpleHeadParams(KerpleKind kind, int head) {
  if (head < 0) throw std::invalid_argument("kerple: negative head");
  const size_t entry = static_cast<size_t>(head) % kPowerR1.size();
  switch (kind) {
    case KerpleKind::kPower:
      return {kPowerR1[entry], kPowerR2[entry]};
    case KerpleKind::kLog:
      return {kLogR1[entry], kLogR2[entry]};
  }
  throw std::invalid_argument("kerple: unknown kind");
}

// power: −r1·|Δ|^r2;  log: −r1·ln(1 + r2·|Δ|);  Δ = query_pos − key_pos.
double KerpleBias(KerpleKind kind, const KerpleParams& params, int query_pos, int key_pos) {
  const double distance = std::abs(query_pos - key_pos);
  switch (kind) {
    case KerpleKind::kPower:
      return -params.r1 * std::pow(distance, params.r2);
    case KerpleKind::kLog:
      return -params.r1 * std::log1p(params.r2 * distance);
  }
  throw std::invalid_argument("kerple: unknown kind");
}

}  // namespace attncheck::reference
