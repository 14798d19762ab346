// GGUF v3 writing. The header (metadata, tensor infos, padding) is built in memory; tensor data
// is produced one tensor at a time, each padded to the alignment as llama.cpp pads it.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "common/checked.hpp"
#include "model/gguf.hpp"
#include "model/gguf_format.hpp"

namespace hearth::gguf {
namespace {

using bytes = std::vector<std::byte>;

void put_le(bytes& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

void put_string(bytes& out, std::string_view s) {
  put_le(out, s.size(), 8);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void put_value(bytes& out, const value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, array_value>) {
          put_le(out, static_cast<uint32_t>(x.type), 4);
          put_le(out, x.items.size(), 8);
          for (const auto& item : x.items) put_value(out, item);
        } else {
          put_le(out, std::bit_cast<format::bits_t<T>>(x), sizeof(T));
        }
      },
      v);
}

// Arrays are homogeneous all the way down; a mixed one would be unreadable.
[[maybe_unused]] bool is_well_formed(const value& v) {
  const auto* a = std::get_if<array_value>(&v);
  return !a || std::all_of(a->items.begin(), a->items.end(),
                           [&](const value& item) { return item.type() == a->type && is_well_formed(item); });
}

uint64_t padded(uint64_t n, uint64_t alignment) {
  const auto r = checked_align_up(n, alignment);
  assert(r && "gguf::writer: size overflows");
  return r.value_or(n);
}

// Assigns every tensor's offset again (after the alignment changed): packed in order, each
// start aligned.
template <class Tensors>
void lay_out(Tensors& tensors, uint64_t alignment) {
  uint64_t end = 0;
  for (auto& t : tensors) {
    t.info.offset = padded(end, alignment);
    end = t.info.offset + t.info.n_bytes;
  }
}

// Everything before the data section, padded to its start.
template <class Tensors>
bytes header_bytes(const std::vector<kv>& kvs, const Tensors& tensors, uint64_t alignment) {
  bytes out;
  put_le(out, format::magic, 4);
  put_le(out, format::version, 4);
  put_le(out, tensors.size(), 8);
  put_le(out, kvs.size(), 8);
  for (const auto& [key, val] : kvs) {
    put_string(out, key);
    put_le(out, static_cast<uint32_t>(val.type()), 4);
    put_value(out, val);
  }
  for (const auto& t : tensors) {
    put_string(out, t.info.name);
    put_le(out, t.info.dims.size(), 4);
    for (uint64_t d : t.info.dims) put_le(out, d, 8);
    put_le(out, static_cast<uint32_t>(t.info.type), 4);
    put_le(out, t.info.offset, 8);
  }
  out.resize(padded(out.size(), alignment));
  return out;
}

bool write_all(int fd, std::span<const std::byte> data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data = data.subspan(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

writer::writer(uint64_t alignment)
    : alignment_(format::is_valid_alignment(alignment) ? alignment : format::default_alignment) {
  assert(format::is_valid_alignment(alignment) && "gguf::writer: alignment not a power of two");
  if (alignment_ != format::default_alignment) {
    set(format::alignment_key, static_cast<uint32_t>(alignment_));
  }
}

void writer::set(std::string key, value v) {
  assert(is_well_formed(v) && "gguf::writer::set: array items must have the array's type");
  if (key == format::alignment_key) {
    // Readers take the layout from this key, so it and the layout change together.
    const auto* a = std::get_if<uint32_t>(&v);
    assert(a && format::is_valid_alignment(*a) &&
           "gguf::writer: general.alignment must be a "
           "u32 power of two");
    if (a && format::is_valid_alignment(*a)) alignment_ = *a;
    lay_out(tensors_, alignment_);
  }
  const auto it = std::find_if(kvs_.begin(), kvs_.end(), [&](const kv& p) { return p.key == key; });
  if (it != kvs_.end()) {
    it->val = std::move(v);
  } else {
    kvs_.push_back({std::move(key), std::move(v)});
  }
}

void writer::add_tensor(std::string name, tensor_type type, std::vector<uint64_t> dims, fill_fn fill) {
  std::optional<uint64_t> n = dims.empty() ? std::nullopt : std::optional<uint64_t>(1);
  for (uint64_t d : dims) n = n && d > 0 ? checked_mul(*n, d) : std::nullopt;
  const auto n_bytes = n ? bytes_for(type, *n) : std::nullopt;
  assert(n_bytes && "gguf::writer::add_tensor: bad dims for this type");
  assert(fill && "gguf::writer::add_tensor: no fill function");
  assert(std::none_of(tensors_.begin(), tensors_.end(),
                      [&](const pending_tensor& t) { return t.info.name == name; }) &&
         "gguf::writer::add_tensor: duplicate tensor name");
  tensor_info info{.name = std::move(name), .type = type, .dims = std::move(dims)};
  info.n_elements = n.value_or(0);
  info.n_bytes = n_bytes.value_or(0);
  if (!tensors_.empty()) {
    const auto& prev = tensors_.back().info;
    info.offset = padded(prev.offset + prev.n_bytes, alignment_);
  }
  tensors_.push_back({std::move(info), std::move(fill)});
}

void writer::add_tensor(std::string name, tensor_type type, std::vector<uint64_t> dims,
                        std::vector<std::byte> data) {
  // Shared so that copies of the writer (and of its std::function) never copy the data.
  auto held = std::make_shared<const bytes>(std::move(data));
  add_tensor(std::move(name), type, std::move(dims), [held](std::span<std::byte> out) {
    std::copy_n(held->begin(), std::min(out.size(), held->size()), out.begin());
  });
  assert(tensors_.back().info.n_bytes == held->size() &&
         "gguf::writer::add_tensor: byte count does not match type and dims");
}

std::vector<std::byte> writer::to_bytes() const {
  bytes out = header_bytes(kvs_, tensors_, alignment_);
  const uint64_t data_start = out.size();
  const uint64_t data_size =
      tensors_.empty() ? 0 : padded(tensors_.back().info.offset + tensors_.back().info.n_bytes, alignment_);
  out.resize(data_start + data_size);
  for (const auto& t : tensors_) {
    t.fill(std::span(out).subspan(data_start + t.info.offset, t.info.n_bytes));
  }
  return out;
}

status<> writer::write(const std::string& path, const progress_fn& progress) const {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return error{errc::io, "gguf: cannot create " + tmp + ": " + std::strerror(errno)};

  int err = 0;  // errno of the first failure
  const auto check = [&](bool good) {
    if (!good && err == 0) err = errno != 0 ? errno : EIO;
    return good;
  };
  bool ok = check(write_all(fd, header_bytes(kvs_, tensors_, alignment_)));
  uint64_t total = 0, done = 0, largest = 0;
  for (const auto& t : tensors_) {
    total += t.info.n_bytes;
    largest = std::max(largest, padded(t.info.n_bytes, alignment_));
  }
  // One tensor and its padding at a time. The fill writes every byte of the tensor: only the
  // padding is zeroed (zeroing all of it was a pass over every tensor, element by element in a
  // sanitizer build).
  const auto buf = std::make_unique_for_overwrite<std::byte[]>(largest);
  for (size_t i = 0; i < tensors_.size() && ok; ++i) {
    const auto& t = tensors_[i].info;
    const std::span<std::byte> out(buf.get(), padded(t.n_bytes, alignment_));
    std::memset(out.data() + t.n_bytes, 0, out.size() - t.n_bytes);
    tensors_[i].fill(out.first(t.n_bytes));
    ok = check(write_all(fd, out));
    if (progress) progress(done += t.n_bytes, total);
  }
  ok = ok && check(::fsync(fd) == 0);  // the data is on disk before the name points at it
  ok = check(::close(fd) == 0) && ok;
  ok = ok && check(::rename(tmp.c_str(), path.c_str()) == 0);
  if (ok) return {};
  ::unlink(tmp.c_str());
  return error{errc::io, "gguf: cannot write " + path + ": " + std::strerror(err)};
}

}  // namespace hearth::gguf
