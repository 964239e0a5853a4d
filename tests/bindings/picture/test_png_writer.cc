// save_png: files decoded again with libpng and checked pixel by pixel, and the errors.
#include <criterion/criterion.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bindings/picture/picture.h"

using tutti::picture::Matrix;
using tutti::picture::save_png;

namespace {

struct Pixel {
  int r, g, b;
};

// tab20's first three colours, for the values 0, 1 and 2, and white for NaN.
const Pixel kByValue[] = {{0x1f, 0x77, 0xb4}, {0xae, 0xc7, 0xe8}, {0xff, 0x7f, 0x0e}};
const Pixel kWhite = {255, 255, 255};

struct Decoded {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  std::vector<uint8_t> rgb;

  Pixel at(size_t x, size_t y) const {
    const uint8_t* p = &rgb[(y * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

// Reads path back with libpng, asserting that the file is 8-bit RGB without alpha.
Decoded decode(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  cr_assert(png_image_begin_read_from_file(&image, path.c_str()) != 0, "%s: %s", path.c_str(), image.message);
  cr_assert_eq(image.format, static_cast<png_uint_32>(PNG_FORMAT_RGB), "%s is not 8-bit RGB", path.c_str());
  Decoded decoded;
  decoded.width = image.width;
  decoded.height = image.height;
  decoded.rgb.resize(PNG_IMAGE_SIZE(image));
  cr_assert(png_image_finish_read(&image, nullptr, decoded.rgb.data(), 0, nullptr) != 0, "%s", image.message);
  return decoded;
}

bool exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// A fresh folder under /tmp for this test's files.
std::string make_folder() {
  char pattern[] = "/tmp/tutti_picture_XXXXXX";
  cr_assert(mkdtemp(pattern) != nullptr);
  return pattern;
}

// The tutorial's disk(): cells within radius of center (row, column) get value.
void disk(std::vector<double>& m, int size, int center_row, int center_col, int radius, double value) {
  for (int row = 0; row < size; ++row) {
    for (int col = 0; col < size; ++col) {
      double dy = double(row - center_row) / radius, dx = double(col - center_col) / radius;
      if (dy * dy + dx * dx <= 1) {
        m[row * size + col] = value;
      }
    }
  }
}

// The tutorial's square(): length + 1 cells a side (its mask uses <= length) from topleft.
void square(std::vector<double>& m, int size, int top, int left, int length, double value) {
  for (int row = top; row <= top + length && row < size; ++row) {
    for (int col = left; col <= left + length && col < size; ++col) {
      m[row * size + col] = value;
    }
  }
}

void expect_pixel(const Decoded& png, size_t x, size_t y, Pixel expected) {
  Pixel got = png.at(x, y);
  cr_expect(got.r == expected.r && got.g == expected.g && got.b == expected.b,
            "pixel (%zu, %zu) is %02x%02x%02x, expected %02x%02x%02x", x, y, got.r, got.g, got.b, expected.r,
            expected.g, expected.b);
}

}  // namespace

// disk(image, (3, 3), 2, 1) and square(image, (6, 6), 3, 2), as rank 0 and rank 1 draw
// them before the tutorial's all_reduce, in one 11x11 matrix at 5 pixels per cell.
Test(png_writer, tutorial_picture_decodes_cell_by_cell) {
  std::string folder = make_folder();
  std::string path = folder + "/rank_0_before_all_reduce.png";
  const int n = 11, cell = 5;
  std::vector<double> m(n * n, 0.0);
  disk(m, n, 3, 3, 2, 1);
  square(m, n, 6, 6, 3, 2);
  cr_assert_eq(save_png(Matrix{m.data(), n, n}, path.c_str(), cell), "");

  Decoded png = decode(path);
  cr_assert_eq(png.width, 55u);
  cr_assert_eq(png.height, 55u);
  int cells_of[3] = {0, 0, 0};
  for (int row = 0; row < n; ++row) {
    for (int col = 0; col < n; ++col) {
      int value = static_cast<int>(m[row * n + col]);
      ++cells_of[value];
      for (int y = 0; y < cell; ++y) {
        for (int x = 0; x < cell; ++x) {
          expect_pixel(png, col * cell + x, row * cell + y, kByValue[value]);
        }
      }
    }
  }
  // A radius-2 disk covers 13 cells and the square 4 x 4; the picture holds both.
  cr_expect_eq(cells_of[1], 13);
  cr_expect_eq(cells_of[2], 16);
  expect_pixel(png, 3 * cell, 3 * cell, kByValue[1]);
  expect_pixel(png, 9 * cell + 4, 9 * cell + 4, kByValue[2]);
  expect_pixel(png, 0, 0, kByValue[0]);
  unlink(path.c_str());
  rmdir(folder.c_str());
}

// Rows and columns are not swapped, and NaN is white.
Test(png_writer, a_wide_matrix_keeps_its_shape_and_nan_is_white) {
  std::string folder = make_folder();
  std::string path = folder + "/wide.png";
  std::vector<double> m = {0, 1, 2, std::nan("")};
  cr_assert_eq(save_png(Matrix{m.data(), 1, 4}, path.c_str(), 3), "");
  Decoded png = decode(path);
  cr_assert_eq(png.width, 12u);
  cr_assert_eq(png.height, 3u);
  expect_pixel(png, 1, 1, kByValue[0]);
  expect_pixel(png, 4, 1, kByValue[1]);
  expect_pixel(png, 7, 1, kByValue[2]);
  expect_pixel(png, 10, 1, kWhite);
  unlink(path.c_str());
  rmdir(folder.c_str());
}

Test(png_writer, a_missing_folder_is_named_and_no_file_is_left) {
  std::string folder = make_folder();
  std::string path = folder + "/no/such/folder/rank_0.png";
  std::vector<double> m(4, 1.0);
  std::string error = save_png(Matrix{m.data(), 2, 2}, path.c_str(), 4);
  std::string expected = "save_png: cannot write \"" + path +
                         "\": No such file or directory; check that its folder exists and can be written to";
  cr_expect(error == expected, "got: %s", error.c_str());
  cr_expect(!exists(path));

  error = save_png(Matrix{m.data(), 2, 2}, folder.c_str(), 4);
  cr_expect(error.find("\"" + folder + "\": Is a directory;") != std::string::npos, "got: %s", error.c_str());
  rmdir(folder.c_str());
}

Test(png_writer, bad_sizes_are_refused_before_any_file_is_made) {
  std::string folder = make_folder();
  std::string path = folder + "/x.png";
  std::vector<double> m(11 * 11, 0.0);
  std::string error = save_png(Matrix{m.data(), 11, 11}, path.c_str(), 0);
  cr_expect(error == "save_png: cell_pixels is 0 [\"" + path + "\"]; use 1 or more", "got: %s", error.c_str());
  error = save_png(Matrix{m.data(), 11, 11}, path.c_str(), 1000);
  cr_expect(error ==
                "save_png: a 11x11 matrix at 1000 pixels per cell is 11000x11000 pixels, over the 4096-pixel "
                "limit per side [\"" +
                    path + "\"]; use cell_pixels <= 372",
            "got: %s", error.c_str());
  error = save_png(Matrix{m.data(), 0, 11}, path.c_str(), 4);
  cr_expect(error.find("save_png: the matrix is 0x11 and a PNG needs at least one pixel") == 0, "got: %s",
            error.c_str());
  error = save_png(Matrix{m.data(), 11, 11}, "", 4);
  cr_expect(error.find("save_png: the path is empty;") == 0, "got: %s", error.c_str());
  cr_expect(!exists(path));
  rmdir(folder.c_str());
}
