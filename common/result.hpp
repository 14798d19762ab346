#pragma once
// Typed results: the first of Hearth's three error tiers (see docs/architecture.md, "Errors").
// Expected outcomes (bad file, no space, over quota) travel as values; asserts catch bugs;
// exceptions only at the edges, translated there into an `error`.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hearth {

//! Broad kinds of failure, stable across the code base and mapped to wire codes by the gateway.
enum class errc {
  invalid_argument,  //!< the caller passed something out of range
  io,                //!< the operating system refused (open, read, mmap, write)
  malformed,         //!< input data violates its format (GGUF, JSON, config)
  unsupported,       //!< well-formed but not something Hearth implements
  limit_exceeded,    //!< within the format but beyond a configured or sane limit
};

//! Short lowercase name of an error code, used in messages and logs.
const char* to_string(errc code);

//! An error value: a kind and a human-readable sentence naming what failed and where.
struct error {
  errc code;
  std::string message;
};

//! Either a T or an error E. Never empty; access to the wrong side is a programmer error.
template <class T, class E = error>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  result(E err) : v_(std::in_place_index<1>, std::move(err)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok() && "result::value() on an error");
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok() && "result::value() on an error");
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok() && "result::value() on an error");
    return std::get<0>(std::move(v_));
  }
  const E& error() const {
    assert(!ok() && "result::error() on a value");
    return std::get<1>(v_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, E> v_;
};

//! Success or an error, for operations that produce nothing.
template <class E = error>
class [[nodiscard]] status {
 public:
  status() = default;
  status(E err) : err_(std::move(err)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const E& error() const {
    assert(failed_ && "status::error() on success");
    return err_;
  }

 private:
  E err_{};
  bool failed_ = false;
};

}  // namespace hearth
