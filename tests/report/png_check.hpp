// tests/report/png_check: decodes an 8-bit RGB/RGBA PNG (zlib inflate + the five row filters, PNG spec §9) far
// enough to tell whether a screenshot shows something: the share of pixels that differ from the most common
// colour, and the number of distinct colours.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata_test {

struct PngStats {
  int width = 0, height = 0;
  double non_background_fraction = 0;
  std::size_t distinct_colours = 0;
};

inline std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

inline PngStats png_stats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 33 || bytes.compare(1, 3, "PNG") != 0) throw std::runtime_error("not a PNG: " + path);
  PngStats st;
  int depth = 0, colour = 0;
  std::string idat;
  for (std::size_t at = 8; at + 8 <= bytes.size();) {
    const std::uint32_t len = be32(b + at);
    const std::string type = bytes.substr(at + 4, 4);
    if (type == "IHDR") {
      st.width = static_cast<int>(be32(b + at + 8));
      st.height = static_cast<int>(be32(b + at + 12));
      depth = b[at + 16];
      colour = b[at + 17];
    } else if (type == "IDAT") {
      idat.append(bytes, at + 8, len);
    }
    at += 12 + len;
  }
  if (depth != 8 || (colour != 2 && colour != 6)) throw std::runtime_error("unsupported PNG format");
  const int bpp = colour == 6 ? 4 : 3;
  const std::size_t stride = static_cast<std::size_t>(st.width) * bpp;
  std::vector<unsigned char> raw((stride + 1) * st.height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK)
    throw std::runtime_error("PNG inflate failed");
  std::vector<unsigned char> cur(stride), prev(stride, 0);
  std::map<std::uint32_t, std::size_t> count;
  for (int y = 0; y < st.height; ++y) {
    const unsigned char* row = raw.data() + y * (stride + 1);
    const int filter = row[0];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<std::size_t>(bpp) ? cur[x - bpp] : 0, up = prev[x];
      const int c = x >= static_cast<std::size_t>(bpp) ? prev[x - bpp] : 0;
      int pred = 0;
      if (filter == 1) pred = a;
      else if (filter == 2) pred = up;
      else if (filter == 3) pred = (a + up) / 2;
      else if (filter == 4) {
        const int p = a + up - c, pa = std::abs(p - a), pb = std::abs(p - up), pc = std::abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
      }
      cur[x] = static_cast<unsigned char>(row[1 + x] + pred);
    }
    for (int x = 0; x < st.width; ++x) {
      const unsigned char* px = cur.data() + x * bpp;
      ++count[(std::uint32_t(px[0]) << 16) | (std::uint32_t(px[1]) << 8) | px[2]];
    }
    std::swap(cur, prev);
  }
  std::size_t most = 0;
  for (const auto& [c, n] : count) most = std::max(most, n);
  st.distinct_colours = count.size();
  st.non_background_fraction = 1.0 - static_cast<double>(most) / (static_cast<double>(st.width) * st.height);
  return st;
}

}  // namespace strata_test
