// How each kind of operation looks when drawn: a letter in the terminal (`tutti trace
// show`), a colour in the page (`tutti trace html`). Collectives and point-to-point
// operations by name, everything else by category (store, control, wait, health).
#pragma once

#include <span>
#include <string_view>

namespace tutti::observe {

struct OperationStyle {
  const char* name;  // an operation's name, or for by_category rows a category
  bool by_category;
  char letter;
  const char* colour;  // "#rrggbb", for the page
  int ansi;            // an SGR foreground colour, for the terminal
};

// Every style, in legend order; the last one is for anything unknown.
std::span<const OperationStyle> operation_styles();

// "isend" and "irecv" look as "send" and "recv" do.
const OperationStyle& style_of(std::string_view name, std::string_view category);

}  // namespace tutti::observe
