#pragma once
// GGUF model files (v2 and v3), as llama.cpp and Ollama write them.
//
// Layout of a file (all integers little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv × (string key | u32 value_type | value)
//   n_tensors × (string name | u32 n_dims | n_dims × u64 ne | u32 tensor_type | u64 offset)
//   padding to `general.alignment` (default 32) | tensor data (each tensor at data_start + offset)
// A string is u64 length + bytes (no terminator); an array is u32 elem type + u64 count + elems.
// Dimensions list the fastest-varying one first: a PyTorch [out, in] weight is stored as ne = {in, out}.
//
// Files are untrusted: `file::parse` checks every count, length, offset and size against the
// bytes that remain and against `limits` before allocating, and fails with a `parse_error`
// naming the field and its byte offset. See docs/model-files.md.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.hpp"
#include "model/tensor_types.hpp"

namespace hearth::gguf {

//! Metadata value types; the numbers are the on-disk codes and the `value` variant indices.
enum class value_type : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

struct value;

//! A homogeneous array; elements of type `array` nest (each with its own element type).
struct array_value {
  value_type type = value_type::u8;
  std::vector<value> items;
};

//! One metadata value. Variant index == static_cast<size_t>(value_type).
struct value : std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                            array_value, uint64_t, int64_t, double> {
  using variant::variant;
  value_type type() const { return static_cast<value_type>(index()); }
};

//! One key/value pair, in file order.
struct kv {
  std::string key;
  value val;
};

//! One tensor's description and where its bytes are.
struct tensor_info {
  std::string name;
  tensor_type type = tensor_type::f32;
  std::vector<uint64_t> dims;  //!< ne, fastest-varying first; 1..max_dims entries, each >= 1
  uint64_t offset = 0;         //!< from the start of the data section, multiple of the alignment
  uint64_t n_elements = 0;     //!< product of dims
  uint64_t n_bytes = 0;        //!< size of the data, from type and dims
};

//! What went wrong while parsing; tests assert on the code, people read `message()`.
enum class parse_errc {
  io,                //!< cannot open / stat / map the file
  truncated,         //!< a field runs past the end of the file
  bad_magic,         //!< not "GGUF"
  bad_version,       //!< version other than 2 or 3
  limit_exceeded,    //!< a count, length or size beyond `limits`
  bad_value_type,    //!< unknown metadata value type (or array of a bad type / too deep)
  bad_bool,          //!< a boolean byte other than 0 or 1
  duplicate_key,     //!< the same metadata key twice
  bad_alignment,     //!< general.alignment not a power of two in range, or of the wrong type
  bad_tensor_type,   //!< unknown or unsupported tensor type
  bad_dims,          //!< 0 or too many dims, a zero dim, or ne0 not a multiple of the block size
  duplicate_tensor,  //!< two tensors with the same name
  misaligned,        //!< tensor offset not a multiple of the alignment
  out_of_bounds,     //!< tensor data past the end of the file
  overlap,           //!< two tensors' data ranges overlap
  overflow,          //!< a size computation overflows 64 bits
};

const char* to_string(parse_errc code);

struct parse_error {
  parse_errc code;
  std::string field;      //!< e.g. "tensor_infos[3].dims[1]" or "kv[7] (tokenizer.ggml.tokens).items[12]"
  uint64_t offset = 0;    //!< byte offset of the field in the file
  std::string detail;     //!< one sentence
  std::string file = {};  //!< the path, for a file from open() that failed to parse; else empty

  //! "gguf: [<file>: ]<code> at byte <offset> in <field>: <detail>"
  std::string message() const;
  //! The same as a generic Hearth error (errc::malformed, io, limit_exceeded or unsupported).
  hearth::error to_error() const;
};

//! Sane limits on untrusted files; the defaults admit every real Llama-family model.
struct limits {
  uint64_t max_kv = 1u << 16;  //!< metadata pairs
  uint64_t max_tensors = 1u << 16;
  uint64_t max_string_bytes = 16u << 20;  //!< one string (chat templates are a few KiB)
  uint64_t max_array_items = 1u << 24;    //!< one array (merges of big vocabularies ~ 300k)
  uint32_t max_array_depth = 4;           //!< nested arrays
  uint32_t max_dims = 4;
  uint64_t max_dim = uint64_t{1} << 32;  //!< one dimension
  uint64_t max_tensor_bytes = uint64_t{1} << 40;
};

//! A parsed GGUF file. Metadata and tensor infos are copied out; tensor data stays in the
//! mapping (or the caller's buffer for `parse`) and is viewed through `data()`.
class file {
 public:
  //! Maps `path` read-only and parses it.
  static result<file, parse_error> open(const std::string& path, const limits& lim = {});
  //! Parses bytes the caller keeps alive for the lifetime of the returned file.
  static result<file, parse_error> parse(std::span<const std::byte> bytes, const limits& lim = {});

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t size_bytes() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }  //!< start of the data section

  const std::vector<kv>& metadata() const { return kvs_; }
  const value* find(std::string_view key) const;
  //! Typed getters: nullopt when absent or of another type. get_uint/get_int accept any integer
  //! type whose value fits; get_float accepts f32 and f64.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const std::string* get_string(std::string_view key) const;
  const array_value* get_array(std::string_view key) const;

  const std::vector<tensor_info>& tensors() const { return tensors_; }
  const tensor_info* find_tensor(std::string_view name) const;
  //! The tensor's bytes (n_bytes long, inside the file).
  std::span<const std::byte> data(const tensor_info& t) const;
  //! Hands the pages wholly inside t's bytes back to the kernel (madvise MADV_DONTNEED) once a
  //! loader has converted them, so that they stop counting in the process's RSS; reading them
  //! again faults them back in from the page cache. Nothing for files from parse().
  void release(const tensor_info& t) const;
  //! What keeps data() valid: the mapping, shared by copies of this file (null for parse(), whose
  //! bytes the caller keeps).
  std::shared_ptr<const void> keep_alive() const { return map_; }

 private:
  struct mapping;
  std::shared_ptr<mapping> map_;  // owns the mmap for files from open(); null for parse()
  std::span<const std::byte> bytes_;
  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<kv> kvs_;
  std::vector<tensor_info> tensors_;

  friend class parser;
};

//! Writes GGUF v3. Metadata keeps insertion order; tensor data is produced on demand at write
//! time so multi-GiB models never sit in memory twice.
class writer {
 public:
  //! Fills exactly `out.size()` bytes of one tensor's data.
  using fill_fn = std::function<void(std::span<std::byte> out)>;

  explicit writer(uint64_t alignment = 32);
  //! Sets a key (replacing an earlier value of the same key, keeping its position).
  void set(std::string key, value v);
  //! Adds a tensor whose bytes `fill` produces; dims fastest-varying first.
  void add_tensor(std::string name, tensor_type type, std::vector<uint64_t> dims, fill_fn fill);
  //! Adds a tensor from bytes already in memory (must be exactly the tensor's size).
  void add_tensor(std::string name, tensor_type type, std::vector<uint64_t> dims,
                  std::vector<std::byte> bytes);

  //! Told the bytes written so far and the total, after each tensor.
  using progress_fn = std::function<void(uint64_t done, uint64_t total)>;
  //! To a temp file, then renamed into place.
  status<> write(const std::string& path, const progress_fn& progress = {}) const;
  std::vector<std::byte> to_bytes() const;

 private:
  struct pending_tensor {
    tensor_info info;
    fill_fn fill;
  };
  uint64_t alignment_;
  std::vector<kv> kvs_;
  std::vector<pending_tensor> tensors_;
};

}  // namespace hearth::gguf
