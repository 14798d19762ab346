// The household bench's pure parts: statistics on hand-built timelines, the arrival and length
// generators against their parameters, workload and trace parsing errors, the capacity search on
// simulated servers whose capacity is known, the sweep's configurations, and the open loop over
// fake targets.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <sstream>
#include <thread>

#include "bench/household/capacity.hpp"
#include "bench/household/runner.hpp"
#include "bench/household/stats.hpp"
#include "bench/household/svg.hpp"
#include "bench/household/sweep.hpp"
#include "bench/household/trace.hpp"
#include "bench/household/workload.hpp"
#include "server/serve_config.hpp"

using namespace hearth;
using namespace hearth::household;

namespace {

struct moments {
  double mean = 0, cv = 0;
};

moments moments_of(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  return {mean, std::sqrt(var / (n - 1)) / mean};
}

std::vector<double> gaps_of(const std::vector<double>& t) {
  std::vector<double> g{t.front()};
  for (size_t i = 1; i < t.size(); ++i) g.push_back(t[i] - t[i - 1]);
  return g;
}

bench_record timeline(double arrival, std::vector<double> tokens, event_kind kind = event_kind::done) {
  bench_record r;
  r.arrival_s = r.sent_s = arrival;
  r.token_s = std::move(tokens);
  r.kind = kind;
  r.end_s = r.token_s.empty() ? arrival + 0.01 : r.token_s.back() + 0.001;
  r.use = {10, static_cast<uint32_t>(r.token_s.size()), 0};
  return r;
}

}  // namespace

// ---- statistics ----------------------------------------------------------------------------

TEST_CASE("percentiles interpolate linearly between closest ranks, as numpy does", "[household]") {
  const std::vector<double> x{1, 2, 3, 4};
  CHECK(percentile(x, 0) == 1);
  CHECK(percentile(x, 0.5) == Approx(2.5));
  CHECK(percentile(x, 0.9) == Approx(3.7));
  CHECK(percentile(x, 1) == 4);
  CHECK(percentile(std::vector<double>{7}, 0.99) == 7);
  CHECK(percentile(std::vector<double>{}, 0.5) == 0);
  std::vector<double> y{5, 1, 3};
  const dist_summary d = summarize(y);
  CHECK(d.count == 3);
  CHECK(d.mean == Approx(3));
  CHECK(d.p50 == 3);
  CHECK(d.max == 5);
}

TEST_CASE("TTFT, ITL, TPOT, goodput and attainment on hand-built timelines", "[household]") {
  const slo_target slo{100, 50, 0.9};
  std::vector<bench_record> rs;
  rs.push_back(timeline(0, {0.050, 0.090, 0.130}));  // TTFT 50, gaps 40 40: meets
  rs.push_back(timeline(1, {1.200}));                // TTFT 200: misses
  std::vector<double> t{2.050};                      // 19 gaps of 40 ms and one of 300: p90 is 40
  for (int i = 0; i < 19; ++i) t.push_back(t.back() + 0.040);
  t.push_back(t.back() + 0.300);
  rs.push_back(timeline(2, t));
  rs.push_back(timeline(3, {}, event_kind::rejected));
  rs.back().reason = reject_reason::queue_full;
  rs.push_back(timeline(4, {4.010}));
  rs.back().end_s = -1;  // never ended
  std::vector<const bench_record*> ptr;
  for (const auto& r : rs) ptr.push_back(&r);
  const std::vector<const slo_target*> slos(rs.size(), &slo);

  CHECK(meets_slo(rs[0], slo));
  CHECK_FALSE(meets_slo(rs[1], slo));
  CHECK(meets_slo(rs[2], slo));
  CHECK_FALSE(meets_slo(rs[2], {100, 50, 1.0}));  // every gap: the 300 ms one fails it
  CHECK_FALSE(meets_slo(rs[3], slo));
  CHECK_FALSE(meets_slo(rs[4], slo));
  CHECK(meets_slo(rs[1], {0, 50, 0.9}));  // no TTFT target, no gap

  const group_report g = summarize_group("t", ptr, slos, 10.0);
  CHECK(g.issued == 5);
  CHECK(g.done == 3);
  CHECK(g.unfinished == 1);
  CHECK(g.rejected[static_cast<size_t>(reject_reason::queue_full)] == 1);
  CHECK(g.met_slo == 2);
  CHECK(g.attainment == Approx(0.4));
  CHECK(g.goodput == Approx(0.2));
  CHECK(g.request_throughput == Approx(0.3));
  CHECK(g.output_throughput == Approx((3 + 1 + 21) / 10.0));
  CHECK(g.ttft_ms.count == 3);
  CHECK(g.ttft_ms.mean == Approx(100));
  CHECK(g.ttft_ms.p50 == Approx(50));
  CHECK(g.ttft_ms.max == Approx(200));
  CHECK(g.itl_ms.count == 22);
  CHECK(g.itl_ms.max == Approx(300));
  CHECK(g.tpot_ms.count == 2);
  CHECK(g.tpot_ms.max == Approx((19 * 40 + 300) / 20.0));
  CHECK(g.tpot_ms.p50 == Approx((40 + 53) / 2.0));
}

// ---- generators ----------------------------------------------------------------------------

TEST_CASE("Poisson and gamma arrivals have their rate and burstiness", "[household]") {
  struct want {
    arrival_process p;
    double cv;
  };
  for (const want w : {want{{arrival_kind::poisson, 5, 1}, 1.0}, want{{arrival_kind::gamma, 2, 0.5}, 0.5},
                       want{{arrival_kind::gamma, 0.5, 3}, 3.0}}) {
    INFO("rate " << w.p.rate << " cv " << w.cv);
    const double duration = 100000 / w.p.rate;  // about 100 000 arrivals
    const auto t = arrival_times(w.p, duration, 42);
    CHECK(static_cast<double>(t.size()) / duration == Approx(w.p.rate).epsilon(0.02));
    const moments m = moments_of(gaps_of(t));
    CHECK(m.mean == Approx(1 / w.p.rate).epsilon(0.02));
    CHECK(m.cv == Approx(w.cv).epsilon(w.cv > 1 ? 0.08 : 0.03));
    CHECK(std::is_sorted(t.begin(), t.end()));
    CHECK(t.back() < duration);
  }
  const arrival_process p{arrival_kind::gamma, 3, 2};
  CHECK(arrival_times(p, 100, 7) == arrival_times(p, 100, 7));
  CHECK(arrival_times(p, 100, 7) != arrival_times(p, 100, 8));
  // Twice the rate, same seed: the same arrivals at half the times (a sweep compares like with like).
  arrival_process fast = p;
  fast.rate *= 2;
  const auto slow_t = arrival_times(p, 100, 7), fast_t = arrival_times(fast, 50, 7);
  REQUIRE(fast_t.size() == slow_t.size());
  for (size_t i = 0; i < slow_t.size(); ++i) CHECK(fast_t[i] == Approx(slow_t[i] / 2));
}

TEST_CASE("length distributions stay in range and have their mean", "[household]") {
  rng r(3);
  const length_dist fixed{length_kind::fixed, 17, 17, 17, 0};
  const length_dist uni{length_kind::uniform, 5, 9, 7, 0};
  const length_dist logn{length_kind::lognormal, 1, 100000, 200, 0.5};
  std::vector<double> u, l;
  std::vector<int> seen(10, 0);
  for (int i = 0; i < 50000; ++i) {
    CHECK(fixed.draw(r) == 17);
    const uint32_t x = uni.draw(r);
    REQUIRE((x >= 5 && x <= 9));
    ++seen[x];
    u.push_back(x);
    l.push_back(logn.draw(r));
  }
  for (uint32_t v = 5; v <= 9; ++v) CHECK(seen[v] > 9000);
  CHECK(moments_of(u).mean == Approx(7).epsilon(0.01));
  CHECK(moments_of(l).mean == Approx(200).epsilon(0.02));
  CHECK(moments_of(l).cv == Approx(0.5).epsilon(0.05));
  const length_dist clamped{length_kind::lognormal, 150, 250, 200, 2.0};
  for (int i = 0; i < 1000; ++i) {
    const uint32_t x = clamped.draw(r);
    REQUIRE((x >= 150 && x <= 250));
  }
}

// ---- parsing -------------------------------------------------------------------------------

TEST_CASE("the shipped household workload parses", "[household]") {
  auto w = parse_workload(default_workload_text(), "household.toml");
  REQUIRE(w.ok());
  REQUIRE(w->classes.size() == 3);
  CHECK(w->classes[0].name == "chat");
  CHECK(w->classes[0].priority == tenant_class::interactive);
  CHECK(w->classes[0].arrival.kind == arrival_kind::gamma);
  CHECK(w->classes[1].name == "rag");
  CHECK(w->classes[1].prompt.min == 1024);
  CHECK(w->classes[1].prompt.max == 4096);
  CHECK(w->classes[1].shared_prefix == 256);
  CHECK(w->classes[2].name == "background");
  CHECK(w->find("rag") == &w->classes[1]);
  CHECK(w->total_rate() == Approx(0.49));
}

TEST_CASE("workload errors name the line, the class and the field", "[household]") {
  const std::string head = "name = \"w\"\n[[class]]\nname = \"chat\"\nrate = 1\n";
  const std::string lengths =
      "prompt = { dist = \"fixed\", value = 8 }\noutput = { dist = \"fixed\", value = 4 }\n";
  REQUIRE(parse_workload(head + lengths, "w.toml").ok());
  struct bad {
    std::string text, expect;
  };
  for (const bad& b :
       {bad{head + lengths + "rat = 2\n", "w.toml:7: class 'chat': rat is not a known field"},
        bad{head + lengths + "slo = { ttft = 1 }\n", "class 'chat': slo.ttft is not a known field"},
        bad{head + "prompt = { dist = \"zipf\", min = 1, max = 4 }\n" +
                "output = { dist = \"fixed\", value = 4 }\n",
            "prompt.dist must be \"fixed\", \"uniform\" or \"lognormal\""},
        bad{head + "prompt = { dist = \"uniform\", min = 9, max = 4 }\n" +
                "output = { dist = \"fixed\", value = 4 }\n",
            "prompt.max must be >= min"},
        bad{"[[class]]\nname = \"x\"\n" + lengths, "w.toml:1: class 'x': rate is missing"},
        bad{head + lengths + "cv = 2\n", "cv is for gamma arrivals"},
        bad{head + lengths + "arrival = \"gamma\"\ncv = -1\n", "w.toml:8: class 'chat': cv must be from"},
        bad{head + lengths + "shared_prefix = 8\n", "shared_prefix must be below the shortest prompt"},
        bad{head + lengths + "[[class]]\nname = \"chat\"\nrate = 1\n" + lengths,
            "class 'chat': name is used twice"},
        bad{"name = \"w\"\n", "class is missing"},
        bad{"[class]\nname = \"x\"\n", "write each class as [[class]]"},
        bad{head + "prompt = {\n", "w.toml:5:"},
        bad{"duration_s = 0\n" + head.substr(11) + lengths, "w.toml:1: duration_s must be from"}}) {
    auto w = parse_workload(b.text, "w.toml");
    REQUIRE_FALSE(w.ok());
    INFO(w.error().message);
    CHECK(w.error().message.find(b.expect) != std::string::npos);
  }
  CHECK_FALSE(load_workload("/nonexistent/w.toml").ok());
}

TEST_CASE("traces replay in time order, and bad lines are refused with their number", "[household]") {
  auto t = parse_trace(
      "{\"time\": 2, \"tenant\": \"chat\", \"prompt\": \"Hi\", \"max_tokens\": 4}\n\n"
      "{\"time\": 0.5, \"tenant\": \"rag\", \"prompt_tokens\": 300, \"max_tokens\": 16}\n",
      "t.jsonl");
  REQUIRE(t.ok());
  REQUIRE(t->size() == 2);
  CHECK((*t)[0].tenant == "rag");
  CHECK((*t)[0].prompt_tokens == 300);
  CHECK_FALSE((*t)[0].prompt);
  CHECK((*t)[1].prompt == "Hi");
  CHECK((*t)[1].max_tokens == 4);
  struct bad {
    std::string line, expect;
  };
  for (const bad& b :
       {bad{"{\"time\": 1, \"tenant\": \"a\", \"prompt\": \"x\", \"max_tokens\": 4, \"x\": 1}",
            "unknown field 'x'"},
        bad{"{\"time\": 1, \"tenant\": \"a\", \"prompt\": \"x\", \"prompt_tokens\": 3, \"max_tokens\": 4}",
            "exactly one of"},
        bad{"{\"time\": 1, \"tenant\": \"a\", \"prompt\": \"x\"}", "max_tokens: required"},
        bad{"{\"time\": -1, \"tenant\": \"a\", \"prompt\": \"x\", \"max_tokens\": 4}", "time: must be >= 0"},
        bad{"{\"time\": 1, \"tenant\": \"a\", \"prompt_tokens\": 0, \"max_tokens\": 4}",
            "prompt_tokens: must be"},
        bad{"{\"time\": 1, \"tenant\": 3, \"prompt\": \"x\", \"max_tokens\": 4}", "tenant: a string"},
        bad{"{\"time\": 1,", "not a JSON object"}}) {
    auto r = parse_trace("{\"time\": 0, \"tenant\": \"a\", \"prompt\": \"x\", \"max_tokens\": 1}\n" + b.line,
                         "t.jsonl");
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message);
    CHECK(r.error().message.find("t.jsonl:2: " + b.expect) != std::string::npos);
  }
  CHECK_FALSE(parse_trace("\n\n").ok());
}

// ---- capacity search -----------------------------------------------------------------------

namespace {

// A single FIFO server with a fixed service time: each request's TTFT is its wait plus service.
double attainment_fifo(const std::vector<double>& arrivals, double service_s, double ttft_target_s) {
  double free_at = 0;
  size_t met = 0;
  for (double a : arrivals) {
    const double start = std::max(a, free_at);
    free_at = start + service_s;
    met += free_at - a <= ttft_target_s + 1e-12;
  }
  return static_cast<double>(met) / static_cast<double>(arrivals.size());
}

}  // namespace

TEST_CASE("the capacity search finds a D/D/1 server's known capacity within its resolution", "[household]") {
  // 1000 evenly spaced arrivals, 100 ms of service, TTFT target 500 ms. Past 10 req/s request i
  // waits i (0.1 - 1/rate) s, so the first 900 meet the target while 0.4 / (0.1 - 1/rate) >= 899.
  const double known = 1 / (0.1 - 0.4 / 899);
  auto attainment = [](double rate) {
    std::vector<double> a;
    for (int i = 0; i < 1000; ++i) a.push_back(i / rate);
    return attainment_fifo(a, 0.1, 0.5);
  };
  REQUIRE(attainment(known * 0.9999) >= 0.9);
  REQUIRE(attainment(known * 1.001) < 0.9);
  for (const double start : {0.3, 7.0, 10.02, 500.0}) {
    INFO("start " << start);
    const search_options opt{.start = start, .resolution = 0.02, .max_runs = 30};
    const capacity_result r = find_capacity(attainment, opt);
    CHECK(r.bracketed);
    CHECK(r.capacity <= known * 1.0001);
    CHECK(r.capacity >= known / 1.02 * 0.9999);
    CHECK(static_cast<int>(r.trials.size()) <= opt.max_runs);
  }
}

TEST_CASE("the capacity search finds an M/D/1 server's 90 % point within its resolution", "[household]") {
  // Poisson arrivals from one seed scale exactly with the rate, so attainment is monotone in it
  // and a fine bisection gives the true crossing to compare with.
  auto attainment = [](double rate) {
    return attainment_fifo(arrival_times({arrival_kind::poisson, rate, 1}, 20000 / rate, 5), 0.05, 0.25);
  };
  double lo = 1, hi = 20;  // 20 req/s saturates a 50 ms server
  REQUIRE(attainment(lo) >= 0.9);
  REQUIRE(attainment(hi) < 0.9);
  while (hi / lo > 1.0001) {
    const double mid = std::sqrt(lo * hi);
    (attainment(mid) >= 0.9 ? lo : hi) = mid;
  }
  const capacity_result r = find_capacity(attainment, {.start = 2, .resolution = 0.05, .max_runs = 20});
  CHECK(r.bracketed);
  CHECK(r.capacity <= hi);
  CHECK(r.capacity >= lo / 1.05);
  // Four trials leave a wide bracket (12-24, 10-20 then 14.1-20): the estimate moves into it
  // from the highest pass, towards the crossing, and (attainment falling ever faster towards
  // saturation) not past it.
  for (const double start : {3.0, 5.0}) {
    const capacity_result coarse = find_capacity(attainment, {.start = start, .max_runs = 4});
    double highest_pass = 0;
    for (const auto& t : coarse.trials)
      if (t.attainment >= 0.9) highest_pass = std::max(highest_pass, t.rate);
    INFO("start " << start << ": highest pass " << highest_pass << ", estimate " << coarse.capacity
                  << ", crossing " << lo);
    CHECK(coarse.bracketed);
    CHECK(coarse.capacity > highest_pass * 1.02);
    CHECK(coarse.capacity <= hi);
  }
}

TEST_CASE("the capacity is where the trials' attainment, made non-increasing, crosses the target",
          "[household]") {
  auto estimate = [](std::vector<trial_point> trials) {
    capacity_result r;
    r.trials = std::move(trials);
    estimate_capacity(r, 0.9);
    return r;
  };
  // Between the last rate at or above 90 % and the first below, linearly: 2 + 2 (4 / 14).
  const capacity_result plain = estimate({{4, 0.80}, {1, 0.96}, {2, 0.94}});
  CHECK(plain.bracketed);
  CHECK(plain.capacity == Approx(2 + 2 * 0.04 / 0.14));
  // A pass above a fail is pooled with it into their mean (0.89 at 2 and 3, below the target):
  // the crossing lies between 1 and 2, not at the highest passing rate, 3.
  const capacity_result pooled = estimate({{1, 0.97}, {2, 0.86}, {3, 0.92}, {4, 0.70}});
  CHECK(pooled.bracketed);
  CHECK(pooled.capacity == Approx(1 + 0.07 / 0.08));
  // A fail below a pass, pooled above the target (0.91 at 1 and 2): the crossing is past 2.
  const capacity_result lifted = estimate({{1, 0.89}, {2, 0.93}, {4, 0.5}});
  CHECK(lifted.capacity == Approx(2 + 2 * 0.01 / 0.41));
  // Exactly at the target passes, as a trial does.
  CHECK(estimate({{1, 0.9}, {2, 0.5}}).capacity == Approx(1));
  // Trials at one rate are one point, their mean (0.89 at 2), in either order.
  CHECK(estimate({{1, 0.95}, {2, 0.92}, {2, 0.86}, {3, 0.5}}).capacity == Approx(1 + 0.05 / 0.06));
  CHECK(estimate({{1, 0.95}, {2, 0.86}, {2, 0.92}, {3, 0.5}}).capacity == Approx(1 + 0.05 / 0.06));
}

TEST_CASE("the capacity search reports 0 when nothing passes and a lower bound when nothing fails",
          "[household]") {
  const capacity_result none =
      find_capacity([](double) { return 0.5; }, {.start = 1, .max_runs = 50, .min_rate = 0.01});
  CHECK(none.capacity == 0);
  CHECK(none.trials.back().rate >= 0.01);
  const capacity_result all = find_capacity([](double) { return 1.0; }, {.start = 1, .max_runs = 5});
  CHECK(all.capacity == 16);
  CHECK_FALSE(all.bracketed);
  CHECK(all.trials.size() == 5);
}

// ---- sweep ---------------------------------------------------------------------------------

TEST_CASE("a sweep always runs the baseline first, and compares every capacity to it", "[household]") {
  sweep_grid grid;
  grid.max_seqs = {16, 64};
  grid.max_batched_tokens = {8, 256};  // 8 < max_seqs: refused by check(), left out
  grid.long_prefill_threshold = {128};
  grid.policy = {"fcfs", "household"};
  grid.mode = {placement_mode::colocated};
  std::vector<std::string> refused;
  const auto configs = make_sweep_configs(grid, engine_config{}, 4096, &refused);
  REQUIRE(configs.size() == 1 + 4);
  REQUIRE(refused.size() == 4);  // 8 tokens at 16 and at 64 sequences, under both policies
  for (const auto& r : refused) CHECK_THAT(r, Catch::Contains("max_batched_tokens (8) must be >= max_seqs"));
  const engine_config& b = configs[0].cfg;
  CHECK(configs[0].baseline);
  CHECK(b.policy == "fcfs");
  CHECK(b.long_prefill_threshold == 0);
  CHECK(b.max_batched_tokens >= 4096);
  CHECK(b.mode == placement_mode::colocated);
  for (size_t i = 1; i < configs.size(); ++i) CHECK_FALSE(configs[i].baseline);
  grid.mode.push_back(placement_mode::disaggregated);  // its workers on the grid's two cpusets
  const auto both = make_sweep_configs(grid, engine_config{}, 4096);
  CHECK(both.size() == 1 + 8);
  for (const auto& c : both) {
    if (c.cfg.mode == placement_mode::disaggregated)
      CHECK((c.cfg.worker_cpus == "0" && c.cfg.decode_cpus == "1"));
  }
  grid.mode = {placement_mode::colocated};
  grid.max_partial_prefills = {1, 3};  // the baseline takes the first
  const auto partial = make_sweep_configs(grid, engine_config{}, 4096);
  REQUIRE(partial.size() == 1 + 8);
  CHECK(partial[0].cfg.max_partial_prefills == 1);
  size_t threes = 0;
  for (const auto& c : partial) {
    threes += c.cfg.max_partial_prefills == 3;
    CHECK_THAT(c.name, Catch::Contains("partial " + std::to_string(c.cfg.max_partial_prefills)));
  }
  CHECK(threes == 4);

  // Each configuration's simulated server: 90 % attainment up to a capacity of its own.
  const std::vector<double> caps{2.0, 6.0, 3.0, 1.0, 4.0};
  auto trial = [&](const sweep_config& c, double rate) -> result<sweep_trial> {
    const size_t i = static_cast<size_t>(&c - configs.data());
    sweep_trial t;
    t.rate = rate;
    t.report.overall.attainment = rate <= caps[i] ? 0.95 : 0.5;
    return t;
  };
  std::vector<std::string> log;
  auto s = run_sweep(configs, {.start = 1, .resolution = 0.01, .max_runs = 20}, trial,
                     [&](const std::string& line) { log.push_back(line); });
  REQUIRE(s.ok());
  REQUIRE(s->configs.size() == configs.size());
  CHECK(s->best == 1);
  for (size_t i = 0; i < caps.size(); ++i) {
    CHECK(s->configs[i].capacity.capacity == Approx(caps[i]).epsilon(0.01));  // the resolution
    CHECK(s->configs[i].ratio_to_baseline ==
          Approx(s->configs[i].capacity.capacity / s->configs[0].capacity.capacity));
  }
  CHECK_FALSE(log.empty());
  // The sweep's own progress after each configuration, the last one at 100 %.
  CHECK(std::count_if(log.begin(), log.end(),
                      [](const std::string& l) { return l.starts_with("sweep: "); }) == 5);
  CHECK_THAT(log.back(), Catch::Matchers::StartsWith("sweep: 5 of 5 configurations (100 %)") &&
                             Catch::Matchers::EndsWith(" 0 s left"));
  const std::string csv = sweep_capacity_csv(*s);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 5);
  const std::string svg = frontier_svg(*s);
  CHECK(svg.rfind("<svg", 0) == 0);
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  CHECK(lines == configs.size());
  // An error ends the sweep with the configuration's name.
  auto failing = run_sweep(
      configs, {},
      [](const sweep_config&, double) -> result<sweep_trial> {
        return error{errc::invalid_argument, "no engine"};
      },
      [](const std::string&) {});
  REQUIRE_FALSE(failing.ok());
  CHECK(failing.error().message.find("baseline") != std::string::npos);
}

TEST_CASE("CDF points climb as a staircase to 1 over sorted samples", "[household]") {
  std::vector<double> x;
  for (int i = 1000; i > 0; --i) x.push_back(i);
  const auto p = cdf_points(x, 100);
  CHECK(p.size() == 200);
  CHECK(p.front() == std::pair{10.0, 0.0});
  CHECK(p[1] == std::pair{10.0, 0.01});
  CHECK(p.back() == std::pair{1000.0, 1.0});
  for (size_t i = 1; i < p.size(); ++i)
    CHECK((p[i].first >= p[i - 1].first && p[i].second >= p[i - 1].second));
  CHECK(cdf_points({5.0}) == std::vector<std::pair<double, double>>{{5, 0}, {5, 1}});
}

TEST_CASE("a latency CDF's axis ends past its 99th percentile, and its target is drawn", "[household]") {
  std::vector<double> gaps(1000, 5.0);
  gaps.back() = 2000;                             // one stall among a thousand gaps of 5 ms
  CHECK(cdf_axis_end(gaps, 20) == Approx(22));    // past the target, which is further than p99
  CHECK(cdf_axis_end(gaps, 0) == Approx(5.5));    // past p99
  CHECK(std::isnan(cdf_axis_end({1, 2, 3}, 0)));  // nothing far: the whole range
  CHECK(std::isnan(cdf_axis_end({}, 20)));
  chart c{"class voice: ITL",
          "gap between tokens, ms",
          "share of gaps",
          {{"baseline", cdf_points(gaps), false}},
          0,
          1,
          NAN};
  c.x_end = cdf_axis_end(gaps, 20);
  c.reference_x = 20;
  c.reference_x_label = "target 20 ms";
  const std::string svg = render_svg(std::span(&c, 1));
  // The plot spans x = 60 .. 440 for 0 .. 22 ms: the target at 60 + 380 * 20 / 22.
  CHECK(svg.find("<line x1=\"405.5\" y1=\"36\" x2=\"405.5\"") != std::string::npos);
  CHECK(svg.find(">target 20 ms</text>") != std::string::npos);
  // Every point is inside the plot: the stall is drawn at the right edge, not 90 plots away.
  const size_t begin = svg.find("points=\"") + 8;
  std::istringstream pts(svg.substr(begin, svg.find('"', begin) - begin));
  double x = 0, y = 0, x_max = 0;
  char comma = 0;
  while (pts >> x >> comma >> y) x_max = std::max(x_max, x);
  CHECK(x_max == Approx(440));
}

// ---- the open loop -------------------------------------------------------------------------

namespace {

// Answers every request at once with n tokens, or (hold) never answers at all.
class fake_target final : public bench_target {
 public:
  explicit fake_target(bool hold) : hold_(hold) {}
  void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) override {
    submitted.push_back(r.index);
    if (hold_) {
      held_.push_back(std::move(sink));
      return;
    }
    for (uint32_t i = 0; i < r.max_tokens; ++i) sink->on_token(r.index);
    sink->on_end(r.index, {event_kind::done, reject_reason::none, {}, {3, r.max_tokens, 0}, {}, 0});
  }
  target_gauges gauges() override { return {1, 2, 3, 10}; }
  server_figures figures() override { return {.steps = 7}; }
  std::vector<size_t> submitted;

 private:
  bool hold_;
  std::vector<std::shared_ptr<bench_sink>> held_;
};

std::vector<bench_request> requests(size_t n, double spacing_s) {
  std::vector<bench_request> v;
  for (size_t i = 0; i < n; ++i) v.push_back({i, "t", spacing_s * static_cast<double>(i), "x", {1, 2, 3}, 2});
  return v;
}

}  // namespace

TEST_CASE("the open loop sends every request at its time and records what comes back", "[household]") {
  fake_target target(false);
  const auto rs = requests(5, 0.02);
  const run_result r =
      run_open_loop(target, rs, std::vector<uint32_t>(5, 0), {.drain_s = 5, .gauge_period_s = 0.01});
  CHECK(target.submitted == std::vector<size_t>{0, 1, 2, 3, 4});
  REQUIRE(r.records.size() == 5);
  for (const auto& rec : r.records) {
    CHECK(rec.ended());
    CHECK(rec.kind == event_kind::done);
    CHECK(rec.token_s.size() == 2);
    CHECK(rec.sent_s >= rec.arrival_s);
    CHECK(rec.prompt_tokens == 3);
  }
  CHECK(r.server.steps == 7);
  CHECK(r.duration_s >= 0.08);
  CHECK_FALSE(r.gauges.empty());
  CHECK(r.gauges.front().g.kv_total == 10);
}

TEST_CASE("the open loop never waits for answers: a silent server leaves requests unfinished",
          "[household]") {
  fake_target target(true);
  const auto rs = requests(4, 0.01);
  const run_result r =
      run_open_loop(target, rs, std::vector<uint32_t>(4, 0), {.drain_s = 0.1, .gauge_period_s = 0.05});
  CHECK(target.submitted.size() == 4);  // all sent although none was answered
  for (const auto& rec : r.records) CHECK_FALSE(rec.ended());
  CHECK(r.duration_s >= 0.1);
}

TEST_CASE("a sweep's best configuration is written as an [engine] section serve reads back", "[household]") {
  engine_config c;
  c.policy = "slo";
  c.mode = placement_mode::disaggregated;
  c.max_seqs = 32;
  c.max_batched_tokens = 512;
  c.long_prefill_threshold = 64;
  c.max_partial_prefills = 3;
  c.worker_cpus = "0";
  c.decode_cpus = "1";
  const std::string text = engine_section(c, "best: slo\nsimulated");
  CHECK(text.starts_with("# best: slo\n# simulated\n[engine]\n"));
  const auto back = server::parse_serve_config(text, "best.toml");
  REQUIRE(back.ok());
  const engine_config& e = back->engine;
  CHECK(e.policy == "slo");
  CHECK(e.mode == placement_mode::disaggregated);
  CHECK(e.max_seqs == 32);
  CHECK(e.max_batched_tokens == 512);
  CHECK(e.long_prefill_threshold == 64);
  CHECK(e.max_partial_prefills == 3);
  CHECK(e.worker_cpus == "0");
  CHECK(e.decode_cpus == "1");
}
