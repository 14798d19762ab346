#include "common/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hearth {

result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error{errc::io, path + ": cannot open: " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return error{errc::io, path + ": cannot read: " + std::strerror(errno)};
  return text.str();
}

status<> write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return error{errc::io, path + ": cannot write: " + std::strerror(errno)};
  return {};
}

}  // namespace hearth
