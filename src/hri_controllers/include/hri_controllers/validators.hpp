// Custom validators of generate_parameter_library for what parameters.yaml declares and the
// library has no built-in for (hri_runtime.parameter_library.gpl): a bound on every item of a
// number list (strict or not; double or integer arrays) and "empty or exactly n" (a nullable list).
// Signature as the library's own: tl::expected<void, std::string>(const rclcpp::Parameter&, args).
#pragma once

#include <fmt/core.h>

#include <rclcpp/parameter.hpp>
#include <string>
#include <tl_expected/expected.hpp>
#include <vector>

namespace hri_controllers::validators {

namespace detail {
inline std::vector<double> numbers(const rclcpp::Parameter& p) {
  if (p.get_type() == rclcpp::ParameterType::PARAMETER_INTEGER_ARRAY) {
    const auto v = p.as_integer_array();
    return std::vector<double>(v.begin(), v.end());
  }
  return p.as_double_array();
}

template <class Ok>
tl::expected<void, std::string> each(const rclcpp::Parameter& p, double bound, const char* rel, Ok ok) {
  const std::vector<double> v = numbers(p);
  for (size_t i = 0; i < v.size(); ++i)
    if (!ok(v[i]))
      return tl::make_unexpected(fmt::format("parameter '{}': item {} = {} must be {} {}", p.get_name(), i,
                                             v[i], rel, bound));
  return {};
}
}  // namespace detail

inline tl::expected<void, std::string> elements_gt(const rclcpp::Parameter& p, double b) {
  return detail::each(p, b, ">", [b](double x) { return x > b; });
}
inline tl::expected<void, std::string> elements_ge(const rclcpp::Parameter& p, double b) {
  return detail::each(p, b, ">=", [b](double x) { return x >= b; });
}
inline tl::expected<void, std::string> elements_lt(const rclcpp::Parameter& p, double b) {
  return detail::each(p, b, "<", [b](double x) { return x < b; });
}
inline tl::expected<void, std::string> elements_le(const rclcpp::Parameter& p, double b) {
  return detail::each(p, b, "<=", [b](double x) { return x <= b; });
}

/// A strict scalar bound beside another bound (the library's own would add a second descriptor
/// range, which overflows it): the value (double or integer) > b, or < b.
inline double scalar(const rclcpp::Parameter& p) {
  return p.get_type() == rclcpp::ParameterType::PARAMETER_INTEGER ? static_cast<double>(p.as_int()) : p.as_double();
}
inline tl::expected<void, std::string> gt(const rclcpp::Parameter& p, double b) {
  if (scalar(p) > b) return {};
  return tl::make_unexpected(fmt::format("parameter '{}' = {} must be > {}", p.get_name(), scalar(p), b));
}
inline tl::expected<void, std::string> lt(const rclcpp::Parameter& p, double b) {
  if (scalar(p) < b) return {};
  return tl::make_unexpected(fmt::format("parameter '{}' = {} must be < {}", p.get_name(), scalar(p), b));
}

/// A nullable list of the declarations: [] (null) or exactly n items (a 6x6 matrix row-major: 36).
inline tl::expected<void, std::string> empty_or_size(const rclcpp::Parameter& p, long n) {
  const size_t k = detail::numbers(p).size();
  if (k == 0 || k == static_cast<size_t>(n)) return {};
  return tl::make_unexpected(
      fmt::format("parameter '{}': {} items; expected none (null) or {}", p.get_name(), k, n));
}

}  // namespace hri_controllers::validators
