#pragma once
// A backend for the tests that delegates to a real one and follows a script: a fixed delay per
// step (so a stream lasts long enough to be cancelled, killed or shut down while it runs), and a
// fault at the n-th step: an exception, or a step that never returns until the test opens its
// gate (a hung backend; the gate must be opened before the engine is destroyed, whose worker
// thread is the one that hangs); or fixed tokens for every answer. No Catch here: the HTTP
// script server (tests/http/script_server.cpp) runs it outside a test.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "kernels/backend.hpp"
#include "model/tokenizer.hpp"

namespace hearth::test {

class gate {
 public:
  void open() {
    {
      std::lock_guard lock(m_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

//! Opens its gate when it goes out of scope: declared after the engine, before the engine's
//! destructor waits for the worker thread that hangs on the gate.
struct open_at_exit {
  std::shared_ptr<gate> g;
  ~open_at_exit() {
    if (g) g->open();
  }
};

struct backend_script {
  std::chrono::milliseconds delay{0};  //!< slept before every step
  uint64_t fault_at = 0;               //!< the step (1-based) that fails; 0 = none
  std::shared_ptr<gate> hang = {};     //!< the fault: wait for this gate, then fail; null: throw
  //! Fixed tokens: every sequence's answer is `reply`, then `end` (the logits make each one all
  //! but certain under any sampling). Sequences are told apart by their first KV block, so
  //! concurrent ones must not share a prefix block. Empty: the model's own logits.
  std::vector<token_id> reply = {};
  token_id end = no_token;
};

//! A script whose every answer is `text`, then the end of the turn.
inline backend_script answering(const tokenizer& tok, const std::string& text) {
  backend_script s;
  s.reply = tok.encode(text, {.add_bos = false, .parse_special = false});
  s.end = tok.spec().eot != no_token ? tok.spec().eot : tok.spec().eos;
  return s;
}

class scripted_backend final : public backend {
 public:
  scripted_backend(std::unique_ptr<backend> inner, backend_script s)
      : inner_(std::move(inner)), s_(std::move(s)) {}
  const hparams& params() const override { return inner_->params(); }
  kv_store& kv() override { return inner_->kv(); }
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override {
    if (s_.delay.count() > 0) std::this_thread::sleep_for(s_.delay);
    if (++steps_ == s_.fault_at) {
      if (s_.hang) s_.hang->wait();
      throw std::runtime_error("scripted_backend: step " + std::to_string(s_.fault_at) + " fails");
    }
    auto st = inner_->forward(batch, out);
    if (st && !s_.reply.empty()) force_reply(batch, out);
    return st;
  }
  result<std::unique_ptr<backend>> share() override {
    return error{errc::unsupported, "scripted_backend: no sharing"};
  }

 private:
  // A sequence fed the reply token it was last given is decoding: it gets the next one. Anything
  // else is a prompt (chunk): it gets the first.
  void force_reply(std::span<const batch_seq> batch, batch_logits& out) {
    std::lock_guard lock(m_);
    const auto n_rows = static_cast<uint32_t>(out.values.size() / out.n_vocab);
    for (size_t s = 0; s < batch.size(); ++s) {
      size_t& given = given_[batch[s].blocks.front()];
      const bool decoding = batch[s].tokens.size() == 1 && given > 0 && given <= s_.reply.size() &&
                            batch[s].tokens[0] == s_.reply[given - 1];
      const size_t next = decoding ? given : 0;
      const uint32_t row = (s + 1 < batch.size() ? out.first_row[s + 1] : n_rows) - 1;
      float* logits = out.values.data() + size_t{row} * out.n_vocab;
      std::fill(logits, logits + out.n_vocab, -30.0f);
      logits[next < s_.reply.size() ? s_.reply[next] : s_.end] = 30.0f;
      given = next + 1;
    }
  }

  std::unique_ptr<backend> inner_;
  backend_script s_;
  std::atomic<uint64_t> steps_{0};
  std::mutex m_;
  std::map<uint32_t, size_t> given_;  // per sequence (its first block): reply tokens given so far
};

}  // namespace hearth::test
