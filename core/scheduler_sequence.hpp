#pragma once
// What scheduler_core keeps of each request, and of the step it is planning: shared by its two
// files (scheduler_core.cpp: queues, results and ends; scheduler_plan.cpp: a step's planning),
// included by no one else.

#include <algorithm>
#include <vector>

#include "core/scheduler_core.hpp"

namespace hearth {

struct scheduler_core::sequence {
  sequence(request_id id_, request r, uint64_t salt_, const tokenizer& tok, double now_s)
      : id(id_),
        req(std::move(r)),
        salt(salt_),
        tokens(req.prompt),
        n_prompt(static_cast<uint32_t>(req.prompt.size())),
        decoder(tok),
        stop(req.stop),
        arrival_s(now_s) {}

  uint32_t generated() const { return static_cast<uint32_t>(tokens.size()) - n_prompt; }
  bool prefilled() const { return computed + 1 >= tokens.size(); }
  bool pinned(uint32_t bound) const { return preemptions >= bound; }

  request_id id;
  request req;
  uint64_t salt;
  uint32_t tenant = 0;           // index into tenants_ (when tenants are configured)
  std::vector<token_id> tokens;  // prompt, then completion tokens (an end-of-generation token is not kept)
  uint32_t n_prompt;
  uint32_t computed = 0;  // positions with keys and values in the pool
  std::vector<uint32_t> blocks;
  uint32_t n_keyed = 0;  // leading full blocks matched in or offered to the prefix cache
  uint64_t last_key = kv_cache::root_key;
  uint32_t cached_tokens = 0;  // prompt tokens the prefix cache served at the first start
  uint32_t preemptions = 0;
  uint32_t draws = 0;                     // completion tokens drawn, an end-of-generation token included
  uint32_t itl_gaps = 0, itl_misses = 0;  // gaps between its tokens, and those over its ITL target
  bool running = false;
  bool busy = false;  // in a step that a worker is computing
  bool cancelled = false;
  bool started_once = false;
  uint64_t started_in = 0;  // the step that last started it
  stream_decoder decoder;
  stop_matcher stop;
  double arrival_s;
  double first_step_s = -1, first_token_s = -1, last_token_s = -1;
  double sample_step_s = -1;  // when the step that drew (or will draw) the first token was planned
  std::vector<float> token_ms;
};

struct scheduler_core::plan_state {
  step out;
  step_kind kind;
  uint32_t budget;
  uint32_t partial;  // chunks in this step that leave their prompt unfinished
  double now_s;
};

template <class T>
void erase_one(std::vector<T*>& v, const T* x) {
  if (auto it = std::ranges::find(v, x); it != v.end()) v.erase(it);
}

}  // namespace hearth
