// GGUF parsing: every count, length, offset and size from the file is checked against the bytes
// that remain and against `limits` before anything is allocated for it.
//
// The parser keeps the first error and turns later reads into no-ops (like a stream's failbit),
// so the reading code stays linear; callers test `failed()` where a bad value would be used.
// The dotted path of the field being read is a stack of segments, formatted only on failure.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include "common/checked.hpp"
#include "model/gguf.hpp"
#include "model/gguf_format.hpp"

namespace hearth::gguf {

//! A read-only private mapping of a whole file; unmapped when the last `file` copy goes.
struct file::mapping {
  void* addr = nullptr;
  size_t size = 0;
  mapping(void* a, size_t n) : addr(a), size(n) {}
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  ~mapping() { ::munmap(addr, size); }
};

void file::release(const tensor_info& t) const {
  const auto bytes = data(t);
  if (!map_ || bytes.empty()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  // A private, read-only mapping never written: dropping its pages loses nothing.
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

namespace {

// Smallest encoding of one value of each type, used to reject counts the remaining bytes cannot
// hold before reserving memory for them.
uint64_t min_encoded_size(value_type t) {
  switch (t) {
    case value_type::u8:
    case value_type::i8:
    case value_type::boolean:
      return 1;
    case value_type::u16:
    case value_type::i16:
      return 2;
    case value_type::u32:
    case value_type::i32:
    case value_type::f32:
      return 4;
    case value_type::u64:
    case value_type::i64:
    case value_type::f64:
      return 8;
    case value_type::string:
      return 8;  // u64 length
    case value_type::array:
      return 12;  // u32 type + u64 count
  }
  return 1;
}

constexpr uint64_t min_kv_size = 8 + 4 + 1;                   // empty key, type, 1-byte value
constexpr uint64_t min_tensor_info_size = 8 + 4 + 8 + 4 + 8;  // empty name, one dim
constexpr uint32_t n_value_types = 13;

}  // namespace

class parser {
 public:
  parser(std::span<const std::byte> bytes, const limits& lim) : bytes_(bytes), lim_(lim) {}

  result<file, parse_error> run();

 private:
  // One step of the field path: `name`, `name[index]` or `name[index] (key)`.
  struct segment {
    segment(const char* n) : name(n) {}
    segment(const char* n, uint64_t i, std::string_view k = {}) : name(n), index(i), indexed(true), key(k) {}
    const char* name;
    uint64_t index = 0;
    bool indexed = false;
    std::string_view key;
  };
  // Pushes a path segment for the lifetime of the scope.
  class scope {
   public:
    scope(parser& p, segment s) : p_(p) { p_.path_.push_back(s); }
    ~scope() { p_.path_.pop_back(); }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    parser& p_;
  };

  bool failed() const { return err_.has_value(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  void fail(parse_errc code, uint64_t offset, std::string detail);
  std::string path_string() const;

  template <class T>
  T read();
  std::string read_string(const char* what);
  value_type read_value_type(uint32_t depth);
  value read_value(value_type t, uint32_t depth);
  array_value read_array(uint32_t depth);
  bool check_count(uint64_t count, uint64_t max, uint64_t min_each, uint64_t offset, const char* what);

  void read_header();
  void read_kvs();
  void read_alignment();
  void read_tensor_infos();
  void read_tensor_info(uint64_t i);
  void check_tensor_ranges();

  std::span<const std::byte> bytes_;
  const limits& lim_;
  uint64_t pos_ = 0;
  std::optional<parse_error> err_;
  std::vector<segment> path_;
  file f_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  uint64_t alignment_value_pos_ = 0;         // where general.alignment's value starts
  std::vector<uint64_t> tensor_offset_pos_;  // where each tensor_infos[i].offset lies
};

void parser::fail(parse_errc code, uint64_t offset, std::string detail) {
  if (failed()) return;
  err_ = parse_error{code, path_string(), offset, std::move(detail)};
}

std::string parser::path_string() const {
  std::string s;
  for (const auto& seg : path_) {
    if (!s.empty()) s += '.';
    s += seg.name;
    if (seg.indexed) s += '[' + std::to_string(seg.index) + ']';
    if (!seg.key.empty()) s.append(" (").append(seg.key).append(")");
  }
  return s;
}

// A little-endian scalar of T's width; zero once failed.
template <class T>
T parser::read() {
  using U = format::bits_t<T>;
  if (failed()) return T{};
  if (remaining() < sizeof(U)) {
    fail(parse_errc::truncated, pos_,
         "needs " + std::to_string(sizeof(U)) + " bytes, " + std::to_string(remaining()) + " remain");
    return T{};
  }
  U u = 0;
  for (size_t i = 0; i < sizeof(U); ++i) {
    u = static_cast<U>(u | static_cast<U>(std::to_integer<U>(bytes_[pos_ + i]) << (8 * i)));
  }
  pos_ += sizeof(U);
  return std::bit_cast<T>(u);
}

std::string parser::read_string(const char* what) {
  const uint64_t at = pos_;
  const auto n = read<uint64_t>();
  if (failed()) return {};
  if (n > lim_.max_string_bytes) {
    fail(parse_errc::limit_exceeded, at,
         std::string(what) + " of " + std::to_string(n) + " bytes exceeds the limit of " +
             std::to_string(lim_.max_string_bytes));
    return {};
  }
  if (n > remaining()) {
    fail(parse_errc::truncated, at,
         std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the file");
    return {};
  }
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
  pos_ += n;
  return s;
}

bool parser::check_count(uint64_t count, uint64_t max, uint64_t min_each, uint64_t offset, const char* what) {
  if (failed()) return false;
  if (count > max) {
    fail(parse_errc::limit_exceeded, offset,
         std::to_string(count) + " " + what + " exceed the limit of " + std::to_string(max));
    return false;
  }
  if (count > remaining() / min_each) {
    fail(parse_errc::truncated, offset,
         std::to_string(count) + " " + what + " cannot fit in the " + std::to_string(remaining()) +
             " bytes that remain");
    return false;
  }
  return true;
}

value_type parser::read_value_type(uint32_t depth) {
  const uint64_t at = pos_;
  const auto code = read<uint32_t>();
  if (failed()) return value_type::u8;
  if (code >= n_value_types) {
    fail(parse_errc::bad_value_type, at, "unknown value type " + std::to_string(code));
    return value_type::u8;
  }
  const auto t = static_cast<value_type>(code);
  if (t == value_type::array && depth >= lim_.max_array_depth) {
    fail(parse_errc::bad_value_type, at, "arrays nested deeper than " + std::to_string(lim_.max_array_depth));
  }
  return t;
}

// `depth` counts the arrays enclosing this value.
value parser::read_value(value_type t, uint32_t depth) {
  switch (t) {
    case value_type::u8:
      return read<uint8_t>();
    case value_type::i8:
      return read<int8_t>();
    case value_type::u16:
      return read<uint16_t>();
    case value_type::i16:
      return read<int16_t>();
    case value_type::u32:
      return read<uint32_t>();
    case value_type::i32:
      return read<int32_t>();
    case value_type::f32:
      return read<float>();
    case value_type::u64:
      return read<uint64_t>();
    case value_type::i64:
      return read<int64_t>();
    case value_type::f64:
      return read<double>();
    case value_type::string:
      return read_string("string");
    case value_type::array:
      return read_array(depth + 1);
    case value_type::boolean: {
      const uint64_t at = pos_;
      const auto b = read<uint8_t>();
      if (b > 1) fail(parse_errc::bad_bool, at, "boolean byte " + std::to_string(b));
      return value(std::in_place_index<static_cast<size_t>(value_type::boolean)>, b == 1);
    }
  }
  return {};
}

array_value parser::read_array(uint32_t depth) {
  array_value a;
  {
    scope s(*this, {"type"});
    a.type = read_value_type(depth);
  }
  const uint64_t at = pos_;
  uint64_t n = 0;
  {
    scope s(*this, {"count"});
    n = read<uint64_t>();
    if (!check_count(n, lim_.max_array_items, min_encoded_size(a.type), at, "items")) return a;
  }
  a.items.reserve(n);
  for (uint64_t i = 0; i < n && !failed(); ++i) {
    scope s(*this, {"items", i});
    a.items.push_back(read_value(a.type, depth));
  }
  return a;
}

void parser::read_header() {
  scope s(*this, {"header"});
  {
    scope m(*this, {"magic"});
    if (read<uint32_t>() != format::magic && !failed()) {
      fail(parse_errc::bad_magic, 0, "the file does not start with \"GGUF\"");
    }
  }
  {
    scope v(*this, {"version"});
    f_.version_ = read<uint32_t>();
    if (!failed() && f_.version_ != 2 && f_.version_ != 3) {
      fail(parse_errc::bad_version, 4, "version " + std::to_string(f_.version_) + " (only 2 and 3 are read)");
    }
  }
  {
    scope n(*this, {"n_tensors"});
    n_tensors_ = read<uint64_t>();
  }
  scope n(*this, {"n_kv"});
  n_kv_ = read<uint64_t>();
}

void parser::read_kvs() {
  {
    scope s(*this, {"header.n_kv"});
    if (!check_count(n_kv_, lim_.max_kv, min_kv_size, 16, "metadata pairs")) return;
  }
  f_.kvs_.reserve(n_kv_);
  std::unordered_set<std::string> seen;
  for (uint64_t i = 0; i < n_kv_ && !failed(); ++i) {
    scope s(*this, {"kv", i});
    const uint64_t key_at = pos_;
    std::string key;
    {
      scope k(*this, {"key"});
      key = read_string("key");
      if (!failed() && !seen.insert(key).second) {
        fail(parse_errc::duplicate_key, key_at, "key \"" + key + "\" appears twice");
      }
    }
    path_.back().key = key;
    value_type t;
    {
      scope ty(*this, {"type"});
      t = read_value_type(0);
    }
    if (key == format::alignment_key) alignment_value_pos_ = pos_;
    value v = read_value(t, 0);
    path_.back().key = {};  // `key` is about to move
    f_.kvs_.push_back({std::move(key), std::move(v)});
  }
}

void parser::read_alignment() {
  const uint64_t i =
      static_cast<uint64_t>(std::find_if(f_.kvs_.begin(), f_.kvs_.end(),
                                         [](const kv& p) { return p.key == format::alignment_key; }) -
                            f_.kvs_.begin());
  if (i == f_.kvs_.size()) return;
  scope s(*this, {"kv", i, format::alignment_key});
  const auto* a = std::get_if<uint32_t>(&f_.kvs_[i].val);
  if (!a) {
    fail(parse_errc::bad_alignment, alignment_value_pos_, "general.alignment is not a u32");
  } else if (!format::is_valid_alignment(*a)) {
    fail(parse_errc::bad_alignment, alignment_value_pos_,
         "alignment " + std::to_string(*a) + " is not a power of two up to " +
             std::to_string(format::max_alignment));
  } else {
    f_.alignment_ = *a;
  }
}

namespace {

// Why tensor `name` of type `code` cannot be read, naming the type as ggml does, and what would.
std::string unreadable_type(const std::string& name, uint32_t code) {
  const char* ggml_name = ggml_type_name(code);
  std::string what = ggml_name != nullptr
                         ? std::string("is ") + ggml_name + ", a type Hearth does not read"
                         : "has type " + std::to_string(code) + ", which ggml does not define";
  return "tensor '" + name + "' " + what + " (Hearth reads " + std::string(readable_types()) +
         "; llama-quantize can rewrite the file in one of them, e.g. q4_k_m)";
}

}  // namespace

void parser::read_tensor_infos() {
  {
    scope s(*this, {"header.n_tensors"});
    if (!check_count(n_tensors_, lim_.max_tensors, min_tensor_info_size, 8, "tensors")) return;
  }
  f_.tensors_.resize(n_tensors_);
  tensor_offset_pos_.resize(n_tensors_);
  std::unordered_set<std::string_view> names;  // views into f_.tensors_, which no longer grows
  for (uint64_t i = 0; i < n_tensors_ && !failed(); ++i) {
    scope s(*this, {"tensor_infos", i});
    const uint64_t name_at = pos_;
    read_tensor_info(i);
    if (!failed() && !names.insert(f_.tensors_[i].name).second) {
      scope n(*this, {"name"});
      fail(parse_errc::duplicate_tensor, name_at, "tensor \"" + f_.tensors_[i].name + "\" appears twice");
    }
  }
}

void parser::read_tensor_info(uint64_t i) {
  tensor_info& t = f_.tensors_[i];
  {
    scope s(*this, {"name"});
    t.name = read_string("name");
  }
  uint32_t n_dims = 0;
  {
    scope s(*this, {"n_dims"});
    const uint64_t at = pos_;
    n_dims = read<uint32_t>();
    if (!failed() && (n_dims == 0 || n_dims > lim_.max_dims)) {
      fail(parse_errc::bad_dims, at,
           std::to_string(n_dims) + " dims (1 to " + std::to_string(lim_.max_dims) + " allowed)");
    }
  }
  if (failed()) return;
  const uint64_t dims_at = pos_;
  t.dims.resize(n_dims);
  for (uint32_t j = 0; j < n_dims && !failed(); ++j) {
    scope s(*this, {"dims", j});
    const uint64_t at = pos_;
    t.dims[j] = read<uint64_t>();
    if (failed()) break;
    if (t.dims[j] == 0) fail(parse_errc::bad_dims, at, "a dimension is zero");
    if (t.dims[j] > lim_.max_dim) {
      fail(
          parse_errc::limit_exceeded, at,
          "dimension " + std::to_string(t.dims[j]) + " exceeds the limit of " + std::to_string(lim_.max_dim));
    }
  }
  {
    scope s(*this, {"type"});
    const uint64_t at = pos_;
    const auto code = read<uint32_t>();
    if (!failed() && !traits_of(code)) fail(parse_errc::bad_tensor_type, at, unreadable_type(t.name, code));
    if (failed()) return;
    t.type = static_cast<tensor_type>(code);
  }
  const auto& traits = traits_of(t.type);
  if (t.dims[0] % traits.block_size != 0) {
    scope d(*this, {"dims", 0});
    fail(parse_errc::bad_dims, dims_at,
         "ne0 = " + std::to_string(t.dims[0]) + " is not a multiple of the block size " +
             std::to_string(traits.block_size) + " of " + traits.name);
    return;
  }
  std::optional<uint64_t> n = 1;
  for (uint64_t d : t.dims) n = n ? checked_mul(*n, d) : n;
  const auto n_bytes = n ? bytes_for(t.type, *n) : std::nullopt;
  {
    scope s(*this, {"dims"});
    if (!n_bytes) {
      fail(parse_errc::overflow, dims_at, "the tensor's size overflows 64 bits");
      return;
    }
    if (*n_bytes > lim_.max_tensor_bytes) {
      fail(parse_errc::limit_exceeded, dims_at,
           std::to_string(*n_bytes) + " bytes of data exceed the limit of " +
               std::to_string(lim_.max_tensor_bytes));
      return;
    }
  }
  t.n_elements = *n;
  t.n_bytes = *n_bytes;
  scope s(*this, {"offset"});
  const uint64_t at = pos_;
  tensor_offset_pos_[i] = at;
  t.offset = read<uint64_t>();
  if (!failed() && t.offset % f_.alignment_ != 0) {
    fail(parse_errc::misaligned, at,
         "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(f_.alignment_));
  }
}

// Every tensor's bytes lie inside the file, after the data section's start, and apart.
void parser::check_tensor_ranges() {
  std::vector<size_t> order(f_.tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return f_.tensors_[a].offset < f_.tensors_[b].offset; });
  const uint64_t data_bytes = f_.data_offset_ <= bytes_.size() ? bytes_.size() - f_.data_offset_ : 0;
  uint64_t prev_end = 0;
  for (size_t k = 0; k < order.size() && !failed(); ++k) {
    const auto& t = f_.tensors_[order[k]];
    scope s(*this, {"tensor_infos", order[k]});
    scope o(*this, {"offset"});
    const uint64_t at = tensor_offset_pos_[order[k]];
    const auto end = checked_add(t.offset, t.n_bytes);
    if (!end || *end > data_bytes) {
      fail(parse_errc::out_of_bounds, at,
           "tensor \"" + t.name + "\" (" + std::to_string(t.n_bytes) + " bytes at offset " +
               std::to_string(t.offset) + ") ends past the " + std::to_string(data_bytes) +
               " bytes of the data section");
    } else if (k > 0 && t.offset < prev_end) {
      fail(parse_errc::overlap, at,
           "tensor \"" + t.name + "\" starts at " + std::to_string(t.offset) + ", inside \"" +
               f_.tensors_[order[k - 1]].name + "\" which ends at " + std::to_string(prev_end));
    } else {
      prev_end = *end;
    }
  }
}

result<file, parse_error> parser::run() {
  f_.bytes_ = bytes_;
  read_header();
  read_kvs();
  if (!failed()) read_alignment();
  read_tensor_infos();
  if (!failed()) {
    // Without tensors a file may end before the padding; data_offset then lies past its end.
    f_.data_offset_ = *checked_align_up(pos_, f_.alignment_);
    check_tensor_ranges();
  }
  if (failed()) return std::move(*err_);
  return std::move(f_);
}

result<file, parse_error> file::parse(std::span<const std::byte> bytes, const limits& lim) {
  return parser(bytes, lim).run();
}

result<file, parse_error> file::open(const std::string& path, const limits& lim) {
  auto io_error = [&](const char* what) {
    return parse_error{parse_errc::io, path, 0, std::string(what) + ": " + std::strerror(errno)};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto e = io_error("cannot stat");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return parse_error{parse_errc::io, path, 0, "not a regular file"};
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {  // mmap refuses empty files; the parser reports them as truncated
    ::close(fd);
    return parse({}, lim);
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    auto e = io_error("cannot map");
    ::close(fd);
    return e;
  }
  ::close(fd);  // the mapping keeps the file open
  // Where the kernel caches files in large folios (Linux 6.x on a filesystem that has them, as
  // ext4 from 6.16), pages faulted in through a mapping advised so are read into 2 MiB folios and
  // mapped whole, one fault per 2 MiB, in this load and every later one while they stay cached.
  // The first forward after loading `1b` q4_k_m took 256 ms in 4 KiB faults, 62 ms so (AMD EPYC
  // Zen 5, Linux 6.18). Only a hint: it fails without transparent huge pages in the kernel and does
  // nothing under THP mode `never`; the mapping works the same.
  ::madvise(addr, size, MADV_HUGEPAGE);
  auto map = std::make_shared<mapping>(addr, size);
  auto r = parse({static_cast<const std::byte*>(addr), size}, lim);
  if (!r) {
    parse_error e = r.error();
    e.file = path;
    return e;
  }
  r->map_ = std::move(map);
  return r;
}

}  // namespace hearth::gguf
