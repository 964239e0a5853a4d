#include "observe/operation_style.h"

namespace tutti::observe {
namespace {

// Colours of matplotlib's tab20, which users of the pictures already know; SGR 31-37
// and 90-97, which every terminal has.
constexpr OperationStyle kStyles[] = {
    {"all_reduce", false, 'A', "#1f77b4", 34},     {"broadcast", false, 'B', "#ff7f0e", 33},
    {"reduce", false, 'R', "#2ca02c", 32},         {"all_gather", false, 'G', "#9467bd", 35},
    {"reduce_scatter", false, 'S', "#8c564b", 36}, {"gather", false, 'H', "#e377c2", 95},
    {"scatter", false, 'C', "#7f7f7f", 37},        {"all_to_all", false, 'T', "#bcbd22", 93},
    {"barrier", false, 'Z', "#17becf", 96},        {"send", false, '>', "#aec7e8", 94},
    {"recv", false, '<', "#ffbb78", 92},           {"store", true, 's', "#98df8a", 32},
    {"control", true, 'c', "#c5b0d5", 90},         {"wait", true, 'w', "#c49c94", 90},
    {"health", true, 'h', "#f7b6d2", 35},          {"other", true, '#', "#dbdb8d", 37},
};

}  // namespace

std::span<const OperationStyle> operation_styles() { return kStyles; }

const OperationStyle& style_of(std::string_view name, std::string_view category) {
  if (name == "isend" || name == "irecv") name.remove_prefix(1);
  for (const auto& style : kStyles) {
    if (!style.by_category && name == style.name) return style;
  }
  for (const auto& style : kStyles) {
    if (style.by_category && category == style.name) return style;
  }
  return kStyles[std::size(kStyles) - 1];
}

}  // namespace tutti::observe
