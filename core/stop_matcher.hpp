#pragma once
// Stop strings over streamed text. Text that could still become the start of a stop string is
// held back, so a client never sees part of a stop string, even one split across tokens.

#include <string>
#include <string_view>
#include <vector>

namespace hearth {

class stop_matcher {
 public:
  explicit stop_matcher(std::vector<std::string> stops);

  //! Appends `text`; returns what can be shown now. After a match, returns the text before it
  //! and stopped() is true; later calls return nothing.
  std::string push(std::string_view text);
  //! The held-back text, at the end of generation.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  size_t held_suffix() const;

  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace hearth
