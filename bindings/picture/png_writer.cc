// save_png: a matrix as an RGB PNG, one square of cell_pixels x cell_pixels per value.
//
// libpng's simplified API (png_image_write_to_file) reports errors in image.message
// rather than by longjmp, so no C++ frame is ever jumped over, and it removes the file
// when a write fails part way.
#include <png.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bindings/picture/palette.h"
#include "bindings/picture/picture.h"

namespace tutti::picture {
namespace {

// A picture is for eyes, and 4096 pixels is wider than most screens; the cap also
// bounds the pixel buffer at 48 MiB.
constexpr size_t kMaxSidePixels = 4096;

std::string quoted(const char* path) { return std::string("\"") + path + "\""; }

// Why the matrix cannot be drawn at this size, or "" when it can.
std::string check_size(const Matrix& matrix, const char* path, int cell_pixels) {
  std::string shape = std::to_string(matrix.rows) + "x" + std::to_string(matrix.cols);
  if (cell_pixels < 1) {
    return "save_png: cell_pixels is " + std::to_string(cell_pixels) + " [" + quoted(path) + "]; use 1 or more";
  }
  if (matrix.rows == 0 || matrix.cols == 0) {
    return "save_png: the matrix is " + shape + " and a PNG needs at least one pixel [" + quoted(path) +
           "]; save a matrix that has values";
  }
  size_t longest = std::max(matrix.rows, matrix.cols);
  if (longest > kMaxSidePixels) {
    return "save_png: a " + shape + " matrix has more than " + std::to_string(kMaxSidePixels) + " cells on a side [" +
           quoted(path) + "]; save a slice of it";
  }
  size_t cell = static_cast<size_t>(cell_pixels);
  if (longest * cell > kMaxSidePixels) {
    return "save_png: a " + shape + " matrix at " + std::to_string(cell) + " pixels per cell is " +
           std::to_string(matrix.cols * cell) + "x" + std::to_string(matrix.rows * cell) + " pixels, over the " +
           std::to_string(kMaxSidePixels) + "-pixel limit per side [" + quoted(path) +
           "]; use cell_pixels <= " + std::to_string(kMaxSidePixels / longest);
  }
  return "";
}

// Row-major RGB bytes, each matrix row drawn once and copied down its cell's height.
std::vector<uint8_t> draw(const Matrix& matrix, size_t cell) {
  size_t row_bytes = matrix.cols * cell * 3;
  std::vector<uint8_t> pixels(row_bytes * matrix.rows * cell);
  for (size_t row = 0; row < matrix.rows; ++row) {
    uint8_t* first = pixels.data() + row * cell * row_bytes;
    uint8_t* out = first;
    for (size_t col = 0; col < matrix.cols; ++col) {
      Rgb colour = cell_colour(matrix.values[row * matrix.cols + col]);
      for (size_t x = 0; x < cell; ++x) {
        *out++ = colour.r;
        *out++ = colour.g;
        *out++ = colour.b;
      }
    }
    for (size_t y = 1; y < cell; ++y) {
      std::copy(first, first + row_bytes, first + y * row_bytes);
    }
  }
  return pixels;
}

}  // namespace

std::string save_png(const Matrix& matrix, const char* path, int cell_pixels) {
  if (path == nullptr || path[0] == '\0') {
    return "save_png: the path is empty; pass a file name such as \"rank_0.png\"";
  }
  std::string size_error = check_size(matrix, path, cell_pixels);
  if (!size_error.empty()) {
    return size_error;
  }
  size_t cell = static_cast<size_t>(cell_pixels);
  std::vector<uint8_t> pixels = draw(matrix, cell);

  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(matrix.cols * cell);
  image.height = static_cast<png_uint_32>(matrix.rows * cell);
  image.format = PNG_FORMAT_RGB;
  if (png_image_write_to_file(&image, path, 0, pixels.data(), 0, nullptr) == 0) {
    // On failure libpng has already released what it allocated and removed the file.
    return "save_png: cannot write " + quoted(path) + ": " + image.message +
           "; check that its folder exists and can be written to";
  }
  return "";
}

}  // namespace tutti::picture
