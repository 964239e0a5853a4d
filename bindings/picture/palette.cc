#include "bindings/picture/palette.h"

#include <cmath>

namespace tutti::picture {

// matplotlib's _tab20_data (lib/matplotlib/_cm.py), whose floats are these bytes / 255.
const Rgb kTab20[kPaletteSize] = {
    {0x1f, 0x77, 0xb4}, {0xae, 0xc7, 0xe8}, {0xff, 0x7f, 0x0e}, {0xff, 0xbb, 0x78}, {0x2c, 0xa0, 0x2c},
    {0x98, 0xdf, 0x8a}, {0xd6, 0x27, 0x28}, {0xff, 0x98, 0x96}, {0x94, 0x67, 0xbd}, {0xc5, 0xb0, 0xd5},
    {0x8c, 0x56, 0x4b}, {0xc4, 0x9c, 0x94}, {0xe3, 0x77, 0xc2}, {0xf7, 0xb6, 0xd2}, {0x7f, 0x7f, 0x7f},
    {0xc7, 0xc7, 0xc7}, {0xbc, 0xbd, 0x22}, {0xdb, 0xdb, 0x8d}, {0x17, 0xbe, 0xcf}, {0x9e, 0xda, 0xe5},
};

int palette_index(double value) {
  if (std::isnan(value)) {
    return -1;
  }
  // The same double arithmetic as Normalize and Colormap.__call__, so that values on a
  // bin's edge (0.95 stays in bin 0, 18.05 reaches bin 19) land where matplotlib puts them.
  constexpr double kVmin = 0.0;
  constexpr double kVmax = 19.0;
  double scaled = (value - kVmin) / (kVmax - kVmin) * kPaletteSize;
  if (scaled < 0) {
    return 0;  // matplotlib's "under" colour, which tab20 leaves at its first entry
  }
  if (scaled >= kPaletteSize) {
    return kPaletteSize - 1;  // 19 itself (scaled == 20) and the "over" colour
  }
  return static_cast<int>(scaled);
}

Rgb cell_colour(double value) {
  int index = palette_index(value);
  return index < 0 ? Rgb{0xff, 0xff, 0xff} : kTab20[index];
}

}  // namespace tutti::picture
