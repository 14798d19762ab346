#pragma once
// A step-time model of one machine, model file, thread count and compute type, fitted from
// steps measured on the real backend (`hearth bench profile`, sim/profiler.hpp):
//
//   ms = overhead + f(tokens) + per_seq * sequences
//           + per_decode_kpair * decode kpairs + per_prefill_kpair * prompt kpairs
//
// f is piecewise linear in the step's tokens, with knots where the matmuls' efficiency changes
// (a decode step of 1 to 16 rows streams the weights once; hundreds of rows are compute-bound):
// f(t) = base + slope * t + sum over knots k of bend_k * max(0, t - k). The sequences term is
// the per-sequence work (sampling over the vocabulary, block tables). The attention terms count
// (query, key) pairs as core/step.hpp's attention_kpairs does, in two kinds: a decode reads each
// key once for one query (bandwidth), a prompt chunk reuses it across its queries (compute).
// `overhead` is the runtime's own time per step outside the backend (messages, planning).

#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "core/step.hpp"

namespace hearth::sim {

//! One measured step: its shape and its time.
struct profile_point {
  uint32_t tokens = 0, seqs = 0;
  double decode_kpairs = 0, prefill_kpairs = 0;  //!< thousands of (query, key) pairs
  double ms = 0;
  double idle_ms = 0;  //!< how long its lane had been idle before it began (0: back to back)
};

//! A step's shape as the model sees it (its time left 0).
profile_point shape_of(const step& s);

struct step_profile {
  // What it was measured on: a profile is only true there.
  std::string cpu, model, compute;
  unsigned threads = 0;

  std::vector<double> knots = {16, 64, 256};  //!< tokens where f bends
  double base_ms = 0, per_token_ms = 0;
  std::vector<double> bend_ms = {};  //!< one per knot
  double per_seq_ms = 0, per_decode_kpair_ms = 0, per_prefill_kpair_ms = 0;
  double overhead_ms = 0;
  //! A served step that begins after its lane idled at least idle_gap_ms takes after_idle_ms
  //! more: at low load a request's first step follows a pause, after which the cores' caches,
  //! clocks and threads are cold (calibrated() fits both; 0 in a profile measured back to back).
  double idle_gap_ms = 2, after_idle_ms = 0;
  //! What a client's TTFT holds beyond the server's split of it (queue, prefill, first step): its
  //! own lag in sending, the request's way in (the gateway tokenizes its prompt) and its first
  //! token's way out, path_ms + path_per_token_ms per prompt token. The simulator adds it to every
  //! time a client sees (its tokens and its end), so the gaps between tokens keep theirs; the
  //! request reaches the scheduler at its arrival all the same. A disaggregated run's decode
  //! profile's path is not used, and scaled() keeps it. Fitted on served requests
  //! (with_request_path); 0 in a profile measured without serving.
  double path_ms = 0, path_per_token_ms = 0;
  double path_for(uint32_t prompt_tokens) const { return path_ms + path_per_token_ms * prompt_tokens; }
  //! How much a step's time varies around the prediction (relative standard deviation): the
  //! simulator draws each step's time with it, as the engine's online step-time fit, and the
  //! stream guard that plans by its error, see on a real machine. The profiler measures one
  //! shape's runs alone; calibrated() widens it to the served steps' spread.
  double noise = 0;

  double rms_error = 0;                    //!< of the fit over `points`, relative to the times
  std::vector<profile_point> points = {};  //!< what it was fitted on

  //! What-if hardware: this profile on a machine with `compute_x` times the FLOP rate and
  //! `bandwidth_x` times the memory bandwidth. The weights streamed once per step (base) and the
  //! keys decodes read are bandwidth; the per-token matmul work beyond them, a prompt's
  //! attention and the per-sequence sampling are compute; the runtime's overhead stays. A
  //! first-order model: it says whether a faster box helps a mix, not by exactly how much.
  step_profile scaled(double compute_x, double bandwidth_x) const;

  //! The predicted step time (never below overhead_ms).
  double predict_ms(const profile_point& shape) const;
  double predict_ms(const step& s) const { return predict_ms(shape_of(s)); }
};

//! The profile as a server runs it, from `serving`: steps measured while serving (each shape, its
//! round trip and the idle time before it, engine_hooks::step_end). Serving adds the runtime's
//! own time to a step and slows its compute (the gateway's and the clients' threads share the
//! cores), and not alike for every term: fitted by relative least squares, the overhead takes an
//! added constant, each group of terms (the tokens', the sequences', decode and prompt
//! attention) a scale of its own (within 0.25 and 4), held towards 1 as if five steps had said
//! so (ridge), so that what the steps cannot tell apart keeps the profile's split, and the steps
//! after idle time their after_idle_ms (held towards 0 so, and never below it), at the idle gap
//! (of 2 to 500 ms, never below p's) that explains the steps best. Its noise is the
//! served steps' spread around the refitted model (never below the profile's): a step served
//! varies more than the same shape run alone, and the simulated stream guard should plan by the
//! spread a server sees. errc::invalid_argument with fewer than 20 steps.
result<step_profile> calibrated(const step_profile& p, const std::vector<profile_point>& serving);

//! A served request: its prompt's tokens and how much longer its client's TTFT was than the
//! server's split of it.
struct request_path {
  uint32_t prompt_tokens = 0;
  double ms = 0;
};

//! p with path_ms and path_per_token_ms fitted to `served` by least squares, neither below 0: a
//! line that falls with the prompt's length (or one length only) gives the mean alone, a line
//! below 0 at no tokens one through 0. p as it was for no requests.
step_profile with_request_path(step_profile p, std::span<const request_path> served);

//! Least squares over the points (at least as many as terms, spread over the knots' segments),
//! keeping the given knots, identity fields and overhead; errc::invalid_argument if the points
//! cannot tell the terms apart.
status<> fit(step_profile& p, std::vector<profile_point> points);

std::string to_json(const step_profile& p);
//! `source` names the text in errors ("profile.json: field 'knots' ...").
result<step_profile> profile_from_json(std::string_view text, std::string_view source);
result<step_profile> load_profile(const std::string& path);

}  // namespace hearth::sim
