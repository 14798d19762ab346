#pragma once
// What the engine API speaks: a request in, a stream of events out. Every accepted request ends
// with exactly one terminal event (done, cancelled or error); a refused one gets one `rejected`
// and nothing else. Plain values, so the gateway, the bench and the tests share them.

#include <cstdint>
#include <string>
#include <vector>

#include "common/request_id.hpp"
#include "kernels/sampler.hpp"
#include "model/vocab.hpp"

namespace hearth {

struct request {
  std::string tenant;            //!< who asks; also salts the prefix cache (see prefix_salt)
  std::vector<token_id> prompt;  //!< at least one token
  uint32_t max_tokens = 256;     //!< completion tokens at most (>= 1)
  sampling_params sampling;
  std::vector<std::string> stop;  //!< stop strings: generation ends before the first match
  bool share_prefix = true;       //!< false: a private prefix-cache salt, never shared
  bool ignore_eos = false;        //!< the end-of-generation tokens are never drawn: it runs to
                                  //!< max_tokens (a stop string, or the context), as benchmarks need
};

enum class event_kind : uint8_t { accepted, token, done, cancelled, rejected, error };
enum class finish_reason : uint8_t { none, eos, stop, length };
//! Why a request was refused or failed. Names match the wire protocol's error codes.
enum class reject_reason : uint8_t {
  none,
  bad_request,
  too_long,
  queue_full,
  over_quota,
  shutting_down,
  internal
};

const char* to_string(event_kind k);
const char* to_string(finish_reason r);
const char* to_string(reject_reason r);

struct usage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0;  //!< prompt tokens served from the prefix cache
};

// TTFT in its three parts: ttft_ms = queue_ms + prefill_ms + first_step_ms (when a token came).
struct timings {
  double queue_ms = 0;       //!< arrival to the first step that computed any of it
  double ttft_ms = 0;        //!< arrival to the first token
  double prefill_ms = 0;     //!< that step to the step that drew the first token (earlier
                             //!< prompt chunks, recompute after preemption); planned to planned
  double first_step_ms = 0;  //!< the step that drew the first token, planned to completed
  double mean_itl_ms = 0;    //!< mean gap between tokens after the first
  double e2e_ms = 0;         //!< arrival to the terminal event
};

struct request_event {
  request_id id = 0;
  event_kind kind = event_kind::accepted;
  // token
  token_id token = no_token;
  uint32_t index = 0;  //!< 0 for the first completion token
  std::string text;    //!< text that became complete with this token (may be empty)
  // terminal events
  finish_reason finish = finish_reason::none;
  reject_reason reason = reject_reason::none;
  std::string message;          //!< for rejected / error / cancelled
  uint64_t retry_after_ms = 0;  //!< rejected over_quota by a rate limit: when a retry can pass (0 = unknown)
  usage use;
  timings time;
  uint32_t preemptions = 0;

  bool terminal() const { return kind != event_kind::accepted && kind != event_kind::token; }
};

}  // namespace hearth
