// The simulator (sim/): the step-time model's fit, its file, and runs on the virtual clock
// whose times can be worked out by hand.
#include <cmath>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "engine_fixture.hpp"
#include "sim/profiler.hpp"
#include "sim/served.hpp"
#include "sim/simulator.hpp"
#include "sim/step_profile.hpp"
#include "test_seed.hpp"

namespace hearth::sim {
namespace {

using household::bench_request;

// A profile whose every step takes `ms` (and `overhead` more).
step_profile constant_profile(double ms, double overhead = 0) {
  step_profile p;
  p.base_ms = ms;
  p.bend_ms.assign(p.knots.size(), 0.0);
  p.overhead_ms = overhead;
  return p;
}

sim_engine engine_on(const test::engine_model& m, step_profile p, engine_config cfg = {}) {
  cfg.policy = cfg.policy.empty() ? "fcfs" : cfg.policy;
  return {.cfg = cfg,
          .tok = m.tok.get(),
          .n_ctx = 512,
          .n_vocab = static_cast<uint32_t>(m.tok->n_vocab()),
          .n_blocks = 256,
          .block_size = 16,
          .profile = std::move(p),
          .decode_profile = std::nullopt,
          .on_step = {}};
}

bench_request req(size_t index, double at_s, uint32_t prompt, uint32_t max_tokens) {
  bench_request r;
  r.index = index;
  r.tenant = "default";
  r.at_s = at_s;
  for (uint32_t i = 0; i < prompt; ++i)
    r.prompt_tokens.push_back(static_cast<token_id>(10 + (index * 37 + i) % 200));
  r.max_tokens = max_tokens;
  return r;
}

// A profile of these terms (bends at the default knots).
step_profile terms(double base, double per_token, std::vector<double> bends, double per_seq,
                   double decode_kpair, double prefill_kpair) {
  step_profile p;
  p.base_ms = base;
  p.per_token_ms = per_token;
  p.bend_ms = std::move(bends);
  p.per_seq_ms = per_seq;
  p.per_decode_kpair_ms = decode_kpair;
  p.per_prefill_kpair_ms = prefill_kpair;
  return p;
}

// A step-time model with every term set, and shapes like the profiler's grid that tell them all
// apart: decodes at contexts 32 and 1024, prompt chunks of 8-512 tokens at 0 and 1024, each
// timed by `timed_by`.
step_profile known_profile() {
  return terms(8, 0.75, {0.2, -0.05, 0.01}, 1.5, 1.2, 0.4);
}

std::vector<profile_point> grid_points(const step_profile& timed_by) {
  std::vector<profile_point> points;
  for (uint32_t seqs : {1u, 4u, 16u, 64u})
    for (uint32_t ctx : {32u, 1024u}) points.push_back({seqs, seqs, seqs * (ctx + 1) / 1000.0, 0, 0});
  for (uint32_t chunk : {8u, 32u, 128u, 512u})
    for (uint32_t start : {0u, 1024u})
      points.push_back({chunk, 1, 0, (chunk * double(start) + chunk * (chunk + 1) / 2.0) / 1000, 0});
  for (auto& p : points) p.ms = timed_by.predict_ms(p);
  return points;
}

}  // namespace

TEST_CASE("a step profile fitted to times its own model made gives that model back", "[sim]") {
  const step_profile truth = known_profile();
  const std::vector<profile_point> points = grid_points(truth);
  step_profile fitted;
  REQUIRE(fit(fitted, points).ok());
  CHECK(fitted.base_ms == Approx(truth.base_ms).epsilon(1e-6));
  CHECK(fitted.per_token_ms == Approx(truth.per_token_ms).epsilon(1e-6));
  CHECK(fitted.per_seq_ms == Approx(truth.per_seq_ms).epsilon(1e-6));
  CHECK(fitted.per_decode_kpair_ms == Approx(truth.per_decode_kpair_ms).epsilon(1e-6));
  CHECK(fitted.per_prefill_kpair_ms == Approx(truth.per_prefill_kpair_ms).epsilon(1e-6));
  for (size_t i = 0; i < truth.bend_ms.size(); ++i)
    CHECK(fitted.bend_ms[i] == Approx(truth.bend_ms[i]).margin(1e-8));
  CHECK(fitted.rms_error < 1e-9);

  SECTION("points that cannot tell the terms apart are refused") {
    std::vector<profile_point> decodes_only(points.begin(), points.begin() + 8);
    step_profile p;
    CHECK(fit(p, decodes_only).error().code == errc::invalid_argument);
  }
}

TEST_CASE("a profile's point slowed by a stall is measured again, and the fit is the truth's", "[sim]") {
  const step_profile truth = known_profile();
  std::vector<profile_point> points = grid_points(truth);
  const size_t stalled = 0;  // a decode of one sequence at 32: seen at 14.1 ms for ~5
  const double true_ms = points[stalled].ms;
  points[stalled].ms *= 2.8;
  std::vector<size_t> asked;

  SECTION("measured again, its true time is kept") {
    step_profile fitted;
    REQUIRE(fit_remeasuring(fitted, points, [&](size_t i) {
              asked.push_back(i);
              return truth.predict_ms(points[i]);
            }).ok());
    CHECK(asked == std::vector<size_t>{stalled});
    CHECK(fitted.points[stalled].ms == Approx(true_ms));
    CHECK(fitted.base_ms == Approx(truth.base_ms).epsilon(1e-6));
    CHECK(fitted.per_decode_kpair_ms == Approx(truth.per_decode_kpair_ms).epsilon(1e-6));
    CHECK(fitted.rms_error < 1e-9);
  }
  SECTION("a point that stays slow is kept as measured after the retries") {
    step_profile fitted;
    REQUIRE(fit_remeasuring(
                fitted, points,
                [&](size_t i) {
                  asked.push_back(i);
                  return i == stalled ? std::numeric_limits<double>::infinity() : truth.predict_ms(points[i]);
                },
                2)
                .ok());
    CHECK(asked == std::vector<size_t>{stalled, stalled});
    CHECK(fitted.points[stalled].ms == Approx(2.8 * true_ms));
    CHECK(fitted.rms_error > 0.05);
  }
  SECTION("without the stall nothing is measured again") {
    points[stalled].ms = true_ms;
    step_profile fitted;
    REQUIRE(fit_remeasuring(fitted, points, [&](size_t i) {
              asked.push_back(i);
              return 0.0;
            }).ok());
    CHECK(asked.empty());
  }
}

TEST_CASE("a what-if profile divides bandwidth terms by one factor and compute terms by the other", "[sim]") {
  step_profile p;
  p.base_ms = 8;  // the weights, streamed once per step
  p.per_token_ms = 1;
  p.bend_ms = {0, 0, 0};
  p.per_seq_ms = 0.5;
  p.per_decode_kpair_ms = 2;
  p.per_prefill_kpair_ms = 0.25;
  p.overhead_ms = 0.1;
  const step_profile q = p.scaled(4, 2);
  const profile_point decode{1, 1, 1, 0, 0};  // 8 + 1 + 0.5 + 2: bandwidth 10, compute 1.5
  CHECK(p.predict_ms(decode) == Approx(0.1 + 11.5));
  CHECK(q.predict_ms(decode) == Approx(0.1 + 10.0 / 2 + 1.5 / 4));
  const profile_point prompt{64, 1, 0, 8, 0};  // 8 + 64 + 0.5 + 2
  CHECK(q.predict_ms(prompt) == Approx(0.1 + 8.0 / 2 + 66.5 / 4));
  CHECK(p.scaled(1, 1).predict_ms(prompt) == Approx(p.predict_ms(prompt)));
}

TEST_CASE("a profile calibrated on served steps predicts them, each group of terms scaled on its own",
          "[sim]") {
  step_profile alone = terms(8, 0.5, {0.1, -0.05, 0.01}, 1.0, 0.4, 0.2);
  alone.overhead_ms = 0.3;
  alone.noise = 0.05;  // one shape's runs alone
  // Serving: 2 ms more per step, the tokens' work 20 % slower, the sequences' 40 % faster.
  step_profile serving = alone;
  serving.overhead_ms += 2;
  serving.per_token_ms *= 1.2;
  for (double& b : serving.bend_ms) b *= 1.2;
  serving.per_seq_ms *= 0.6;
  serving.per_decode_kpair_ms *= 1.1;
  // As many steps as a calibration run holds (hundreds), so that the scales' prior barely counts.
  std::vector<profile_point> decodes, steps;
  for (uint32_t seqs = 1; seqs <= 12; ++seqs)
    for (uint32_t ctx : {40u, 120u, 300u, 600u, 900u, 1500u})
      for (int again = 0; again < 3; ++again)
        decodes.push_back({seqs, seqs, seqs * (ctx + 1) / 1000.0, 0, 0});
  steps = decodes;
  for (uint32_t chunk : {16u, 32u, 64u, 128u, 200u, 512u})
    for (uint32_t beside : {0u, 1u, 2u, 3u})
      for (int again = 0; again < 3; ++again)
        steps.push_back({chunk + beside, 1 + beside, beside * 0.3, chunk * chunk / 2000.0, 0});
  for (auto* set : {&decodes, &steps})
    for (auto& p : *set) p.ms = serving.predict_ms(p);

  auto c = calibrated(alone, steps);
  REQUIRE(c.ok());
  for (const auto& p : steps) {
    INFO(p.tokens << " tokens, " << p.seqs << " sequences");
    CHECK(c->predict_ms(p) == Approx(p.ms).epsilon(0.03));
  }
  CHECK(c->overhead_ms == Approx(serving.overhead_ms).margin(0.3));
  CHECK(c->base_ms == alone.base_ms);
  CHECK(c->noise == alone.noise);  // steps that spread less than that keep it

  SECTION("the served steps' spread around the refitted model becomes its noise") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    std::vector<profile_point> noisy;
    for (int copy = 0; copy < 3; ++copy)  // ~860 steps: the estimate's own spread ~4 %
      for (profile_point p : steps) {
        p.ms = serving.predict_ms(p) * std::exp(0.1 * normal(rng));
        noisy.push_back(p);
      }
    // A few stretched by a page fault or a timer do not set it.
    for (size_t i = 0; i < noisy.size(); i += 50) noisy[i].ms *= 5;
    auto d = calibrated(alone, noisy);
    REQUIRE(d.ok());
    CHECK(d->noise == Approx(0.1).epsilon(0.2));
  }
  SECTION("a group the steps never exercise keeps its profiled value") {
    auto d = calibrated(alone, decodes);
    REQUIRE(d.ok());
    CHECK(d->per_prefill_kpair_ms == Approx(alone.per_prefill_kpair_ms));
    for (const auto& p : decodes) CHECK(d->predict_ms(p) == Approx(p.ms).epsilon(0.03));
  }
  SECTION("steps faster than the profile's take it off the base, not the runtime's overhead") {
    for (auto& p : decodes) p.ms = alone.predict_ms(p) - 2;
    auto d = calibrated(alone, decodes);
    REQUIRE(d.ok());
    CHECK(d->overhead_ms == alone.overhead_ms);
    CHECK(d->base_ms == Approx(alone.base_ms - 2).margin(0.05));
  }
  SECTION("a scale past its bound is held there") {
    step_profile slow = serving;
    slow.per_decode_kpair_ms = alone.per_decode_kpair_ms * 10;
    for (auto& p : steps) p.ms = slow.predict_ms(p);
    auto d = calibrated(alone, steps);
    REQUIRE(d.ok());
    CHECK(d->per_decode_kpair_ms == Approx(4 * alone.per_decode_kpair_ms));
  }
  SECTION("steps after idle time add their own ms, the others keep their fit") {
    // Every fourth step began after its lane idled (a pause of 2 ms or more) and took 6 ms more.
    for (size_t i = 0; i < steps.size(); ++i) {
      steps[i].idle_ms = i % 4 == 0 ? 40.0 + static_cast<double>(i) : 0.5;
      steps[i].ms = serving.predict_ms(steps[i]) + (i % 4 == 0 ? 6.0 : 0.0);
    }
    auto d = calibrated(alone, steps);
    REQUIRE(d.ok());
    // The prior holds it towards 0 as five steps would: of ~80 such steps, 6 * 80 / 85.
    CHECK(d->after_idle_ms == Approx(6).margin(0.5));
    for (const auto& p : steps) CHECK(d->predict_ms(p) == Approx(p.ms).epsilon(0.04));
    // Faster after idle time is noise, not a cause: never below 0.
    for (auto& p : steps) p.ms = serving.predict_ms(p) - (p.idle_ms >= 2 ? 1.0 : 0.0);
    auto e = calibrated(alone, steps);
    REQUIRE(e.ok());
    CHECK(e->after_idle_ms == 0);
  }
  SECTION("the idle gap is where idle time begins to cost") {
    // Steps after 5-40 ms of idle time take what the others do, those after 120 ms or more 15 ms
    // more: the gap comes out past 40 and at most 120 ms, the added time at 15 ms.
    for (size_t i = 0; i < steps.size(); ++i) {
      const bool long_idle = i % 8 == 0, short_idle = i % 8 == 4;
      steps[i].idle_ms = long_idle    ? 120.0 + static_cast<double>(i)
                         : short_idle ? 5.0 + 0.3 * static_cast<double>(i)
                                      : 0.5;
      steps[i].ms = serving.predict_ms(steps[i]) + (long_idle ? 15.0 : 0.0);
    }
    auto d = calibrated(alone, steps);
    REQUIRE(d.ok());
    CHECK(d->idle_gap_ms > 40);
    CHECK(d->idle_gap_ms <= 120);
    // The prior holds it towards 0 as five steps would.
    const auto n = static_cast<double>((steps.size() + 7) / 8);
    CHECK(d->after_idle_ms == Approx(15 * n / (n + 5)).margin(0.5));
    for (const auto& p : steps)
      if (p.idle_ms < 100) CHECK(d->predict_ms(p) == Approx(p.ms).epsilon(0.04));
  }
  SECTION("too few steps are refused") {
    decodes.resize(19);
    CHECK(calibrated(alone, decodes).error().code == errc::invalid_argument);
  }
}

TEST_CASE("a request's way in and out is fitted as a line in its prompt's tokens", "[sim]") {
  const step_profile p = constant_profile(5);
  std::vector<request_path> served;
  for (uint32_t tokens : {10u, 100u, 1000u, 2000u}) served.push_back({tokens, 2 + 0.001 * tokens});
  const step_profile fitted = with_request_path(p, served);
  CHECK(fitted.path_ms == Approx(2));
  CHECK(fitted.path_per_token_ms == Approx(0.001));
  CHECK(fitted.base_ms == p.base_ms);
  CHECK(fitted.path_for(500) == Approx(2.5));
  // One prompt length: its mean; a falling line: its mean too; a line below 0 at 0: through 0.
  CHECK(with_request_path(p, std::vector<request_path>{{64, 2}, {64, 4}}).path_ms == Approx(3));
  const auto falling = with_request_path(p, std::vector<request_path>{{10, 4}, {1000, 2}});
  CHECK(falling.path_ms == Approx(3));
  CHECK(falling.path_per_token_ms == 0);
  const auto steep = with_request_path(p, std::vector<request_path>{{1000, 1}, {2000, 3}});
  CHECK(steep.path_ms == 0);
  CHECK(steep.path_per_token_ms == Approx(7.0 / 5000));
  CHECK(with_request_path(p, {}).path_ms == 0);
}

TEST_CASE("a step profile's file reads back as written, and a bad one is named", "[sim]") {
  step_profile p = constant_profile(5, 0.1);
  p.cpu = "AMD EPYC";
  p.model = "small.gguf";
  p.compute = "bf16";
  p.threads = 2;
  p.points = {{8, 1, 0, 0.5, 12.5}};
  p.after_idle_ms = 3.5;
  p.path_ms = 1.25;
  p.path_per_token_ms = 0.002;
  auto back = profile_from_json(to_json(p), "p.json");
  REQUIRE(back.ok());
  CHECK(back->after_idle_ms == 3.5);
  CHECK(back->path_ms == 1.25);
  CHECK(back->path_per_token_ms == 0.002);
  CHECK(back->idle_gap_ms == p.idle_gap_ms);
  CHECK(back->cpu == "AMD EPYC");
  CHECK(back->threads == 2);
  CHECK(back->base_ms == 5);
  CHECK(back->overhead_ms == 0.1);
  REQUIRE(back->points.size() == 1);
  CHECK(back->points[0].ms == 12.5);
  auto bad = profile_from_json(R"({"cpu": "x"})", "p.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("p.json") != std::string::npos);
  CHECK(profile_from_json("[1, 2]", "q.json").error().message == "q.json: not a JSON object");
}

TEST_CASE("what a server served reads back as written, each step with the idle time before it", "[sim]") {
  using clock = std::chrono::steady_clock;
  step_recorder rec;
  const clock::time_point t0{};
  // Steps of 4, 2 and 3 ms ending at 4, 6 (back to back) and 20 ms (11 ms idle before it).
  const auto one_seq = [](uint32_t start_pos, uint32_t tokens) {
    step_seq q;
    q.tokens.assign(tokens, 1);
    q.start_pos = start_pos;
    step s;
    s.seqs.push_back(q);
    return s;
  };
  const step prompt = one_seq(0, 8), decode = one_seq(8, 1);
  rec.add(prompt, 4, t0 + std::chrono::milliseconds(4));
  rec.add(decode, 2, t0 + std::chrono::milliseconds(6));
  rec.add(decode, 3, t0 + std::chrono::milliseconds(20));
  const served_log log{rec.steps(), {{40, 2.5}, {7, 1.5}}};
  REQUIRE(log.steps.size() == 3);
  CHECK(log.steps[0].idle_ms == 1e9);  // the first: after an idle server
  CHECK(log.steps[1].idle_ms == Approx(0).margin(1e-9));
  CHECK(log.steps[2].idle_ms == Approx(11));
  CHECK(log.steps[0].tokens == 8);
  CHECK(log.steps[2].decode_kpairs == shape_of(decode).decode_kpairs);
  auto back = served_from_json(to_json(log), "s.json");
  REQUIRE(back.ok());
  REQUIRE(back->steps.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back->steps[i].tokens == log.steps[i].tokens);
    CHECK(back->steps[i].seqs == log.steps[i].seqs);
    CHECK(back->steps[i].prefill_kpairs == log.steps[i].prefill_kpairs);
    CHECK(back->steps[i].ms == log.steps[i].ms);
    CHECK(back->steps[i].idle_ms == log.steps[i].idle_ms);
  }
  REQUIRE(back->requests.size() == 2);
  CHECK(back->requests[1].prompt_tokens == 7);
  CHECK(back->requests[1].ms == 1.5);
  CHECK(served_from_json(R"({"steps": [[2, 1, 0, 0, 1, 0], [0, 1, 0, 0, 1, 0]], "requests": []})", "s.json")
            .error()
            .message == "s.json: steps[1] is not a step");
  CHECK(served_from_json(R"({"steps": [], "requests": [[1]]})", "s.json")
            .error()
            .message.find("s.json: requests[0]") == 0);
  CHECK(served_from_json("[]", "s.json").error().message == "s.json: not a JSON object");
}

TEST_CASE("on a profile of 10 ms steps the simulator's times are the hand-computed ones", "[sim]") {
  const auto m = test::engine_model::make();
  const auto e = engine_on(*m, constant_profile(10));
  // Two requests: the first starts alone at 0 and draws its first token with its prompt (10 ms);
  // the second arrives at 5 ms, mid-step, and joins the next step: its first token at 20 ms.
  const std::vector<bench_request> requests = {req(0, 0.0, 10, 3), req(1, 0.005, 10, 2)};
  const auto run = simulate(e, requests, {0, 0}, 10);
  REQUIRE(run.records.size() == 2);
  const auto& a = run.records[0];
  const auto& b = run.records[1];
  CHECK(a.kind == event_kind::done);
  REQUIRE(a.token_s.size() == 3);
  CHECK(a.ttft_ms() == Approx(10));
  CHECK(a.token_s[1] == Approx(0.020));
  CHECK(a.token_s[2] == Approx(0.030));
  CHECK(a.end_s == Approx(0.030));
  CHECK(b.kind == event_kind::done);
  REQUIRE(b.token_s.size() == 2);
  CHECK(b.ttft_ms() == Approx(15));
  CHECK(b.end_s == Approx(0.030));
  CHECK(run.server.steps == 3);
  CHECK(run.duration_s == Approx(0.030));

  SECTION("the runtime's overhead lengthens every step") {
    const auto slow = simulate(engine_on(*m, constant_profile(10, 2)), requests, {0, 0}, 10);
    CHECK(slow.records[0].ttft_ms() == Approx(12));
    CHECK(slow.records[0].end_s == Approx(0.036));
  }
  SECTION("a step after idle time takes the profile's after_idle_ms more") {
    step_profile cold = constant_profile(10);
    cold.after_idle_ms = 3;
    // The first step follows the server's idle start (13 ms), the next ones their predecessors
    // (10 ms each); the third request arrives after 1 s of idle time and pays it again.
    auto more = requests;
    more.push_back(req(2, 1.0, 10, 2));
    const auto after = simulate(engine_on(*m, cold), more, {0, 0, 0}, 10);
    CHECK(after.records[0].ttft_ms() == Approx(13));
    CHECK(after.records[0].end_s == Approx(0.033));
    CHECK(after.records[1].ttft_ms() == Approx(18));
    CHECK(after.records[2].ttft_ms() == Approx(13));
    CHECK(after.records[2].end_s == Approx(1.023));
  }
  SECTION("a request's way in and out delays what its client sees, not the gaps between tokens") {
    step_profile far = constant_profile(10);
    far.path_ms = 2;
    far.path_per_token_ms = 0.1;  // prompts of 10 tokens: 3 ms
    const auto seen = simulate(engine_on(*m, far), requests, {0, 0}, 10);
    CHECK(seen.records[0].ttft_ms() == Approx(13));
    CHECK_THAT(seen.records[0].gaps_ms(), Catch::Matchers::Approx(run.records[0].gaps_ms()));
    CHECK(seen.records[0].end_s == Approx(0.033));
    CHECK(seen.records[1].ttft_ms() == Approx(18));
    CHECK(seen.records[1].server.ttft_ms == Approx(b.server.ttft_ms));
  }
  SECTION("past the drain, requests still running are left unfinished") {
    const auto cut = simulate(e, {req(0, 0.0, 10, 100)}, {0}, 0.505);
    CHECK_FALSE(cut.records[0].ended());
    CHECK(cut.records[0].token_s.size() == 50);  // steps ending at 10, 20, ... 500 ms
  }
}

TEST_CASE("the simulator gives the same run for the same schedule", "[sim]") {
  const auto m = test::engine_model::make();
  step_profile p = constant_profile(4);
  p.per_token_ms = 0.05;
  p.per_prefill_kpair_ms = 0.01;
  engine_config cfg;
  cfg.policy = "slo";  // plans with the step-time fit: learns from the simulated times
  const auto e = engine_on(*m, p, cfg);
  std::vector<bench_request> requests;
  std::vector<uint32_t> cls;
  for (size_t i = 0; i < 40; ++i) {
    requests.push_back(req(i, 0.01 * static_cast<double>(i), static_cast<uint32_t>(8 + (i * 13) % 90), 6));
    cls.push_back(0);
  }
  const auto x = simulate(e, requests, cls, 30);
  const auto y = simulate(e, requests, cls, 30);
  REQUIRE(x.records.size() == y.records.size());
  for (size_t i = 0; i < x.records.size(); ++i) {
    CHECK(x.records[i].token_s == y.records[i].token_s);
    CHECK(x.records[i].kind == event_kind::done);
  }
  CHECK(x.server.steps == y.server.steps);
}

}  // namespace hearth::sim
