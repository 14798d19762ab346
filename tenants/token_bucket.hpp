#pragma once
// A tenant's `tokens_per_minute` quota as a token bucket. Pure: the caller passes the clock
// (seconds, any origin, the same for every call), so tests need no sleeping.

#include <cstdint>

namespace hearth {

//! Holds at most one minute's tokens (the burst) and refills continuously at
//! tokens_per_minute / 60 per second. A request larger than a minute's tokens is let through when
//! the bucket is full and leaves it in debt, so it waits its turn instead of being refused forever.
class token_bucket {
 public:
  //! tokens_per_minute = 0: unlimited. The bucket starts full at now_s.
  token_bucket(uint64_t tokens_per_minute, double now_s);

  //! Takes n tokens when the bucket holds them (all of it, for n above one minute's worth);
  //! false leaves the bucket as it was.
  bool try_take(uint64_t n, double now_s);
  //! Milliseconds until try_take(n) would succeed (0: it would now): the `retry_after_ms` of an
  //! `over_quota` rejection.
  uint64_t retry_after_ms(uint64_t n, double now_s) const;
  //! Tokens in the bucket at now_s (negative while in debt).
  double level(double now_s) const;
  //! Returns n tokens taken earlier and not used (a reservation's rest), up to a full bucket.
  void give_back(uint64_t n, double now_s);
  //! A new tokens_per_minute (a configuration reload): the bucket keeps its level, capped at the
  //! new minute's worth; one that was unlimited starts full.
  void set_rate(uint64_t tokens_per_minute, double now_s);

 private:
  double needed(uint64_t n) const;

  double capacity_;  // tokens; 0 = unlimited
  double rate_;      // tokens per second
  double level_;     // tokens at last_s_
  double last_s_;
};

}  // namespace hearth
