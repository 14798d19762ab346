// The kernel tuner: its choice over measured rates (a pure function), its cache file's lines, and a
// tuner measuring, caching and reading back plans for real on this CPU.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "kernels/cpu_features.hpp"
#include "kernels/kernel_tuner.hpp"
#include "kernels/matmul.hpp"
#include "kernels/parallel.hpp"

using namespace hearth;

namespace {

constexpr auto onednn_bf16 = matmul_path::onednn_bf16;
constexpr auto w8 = matmul_path::hearth_w8;
constexpr auto w16 = matmul_path::hearth_w16;
constexpr auto widened = matmul_path::widened_f32;

path_rates rates(matmul_path p, double m1, double m16, double m64, double m256) {
  return {p, {m1, m16, m64, m256}};
}

// A file in the build's temporary directory, removed when done with the lock file the cache
// writes beside it.
struct temp_file {
  std::string path;
  explicit temp_file(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("hearth-" + std::to_string(getpid()) + "-" + name))
                 .string()) {
    std::filesystem::remove(path);
  }
  ~temp_file() {
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".lock");
  }
  std::string read() const {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

// Rates for every bf16 path this CPU has, as a cache line holds them.
std::string every_path_rated() {
  std::string out;
  for (matmul_path p : paths_for(compute_type::bf16))
    out += (out.empty() ? "" : ";") + std::string(to_string(p)) + "=1/2/3/4";
  return out;
}

}  // namespace

TEST_CASE("the tuner keeps the incumbent unless another path is clearly faster", "[kernel_tuner]") {
  // One candidate: its plan.
  const path_rates only[] = {rates(w8, 10, 50, 50, 60)};
  CHECK(choose_plan(only, matmul_plan::uniform(w8)) == matmul_plan::uniform(w8));
  // Within 5 %: the incumbent stays, bucket by bucket.
  const path_rates close[] = {rates(w8, 10, 50, 50, 60), rates(w16, 10.4, 52, 52, 62)};
  CHECK(choose_plan(close, matmul_plan::uniform(w8)) == matmul_plan::uniform(w8));
  // w16 faster at prefill only: one storage, so the plan changes path with m.
  const path_rates prefill[] = {rates(w8, 10, 50, 50, 60), rates(w16, 10, 50, 50, 120)};
  CHECK(choose_plan(prefill, matmul_plan::uniform(w8)) == matmul_plan{{w8, w8, w8, w16}});
  // Not measured at m = 1 (widening cannot pay there): the bucket takes what was measured.
  const path_rates wide[] = {rates(w8, 10, 50, 50, 60), rates(widened, 0, 40, 40, 200)};
  CHECK(choose_plan(wide, matmul_plan::uniform(w8)) == matmul_plan{{w8, w8, w8, widened}});
  // A path with a fixed cost per call (dequantizing every weight) pays at m = 256 but not yet at
  // 64 (1b q4_k_m's gate_up on an AMD EPYC Zen 4): a batch of 64 decodes keeps the dots.
  const auto dot = matmul_path::quant_dot, slices = matmul_path::quant_onednn_bf16;
  const path_rates fixed_cost[] = {rates(dot, 100, 247, 240, 218), rates(slices, 0, 108, 180, 354)};
  CHECK(choose_plan(fixed_cost, matmul_plan::uniform(dot)) == matmul_plan{{dot, dot, dot, slices}});
  // A busy machine's margin holds back what a quiet one's lets through.
  CHECK(choose_plan(prefill, matmul_plan::uniform(w8), 2.5) == matmul_plan::uniform(w8));
  // An incumbent that changes path with m keeps each bucket's own within the margin: oneDNN 3 %
  // faster at m = 1 and hearth-dpbf16 3 % faster at 256 change nothing; 10 % at 16 does.
  const auto dp = matmul_path::hearth_dpbf16;
  const matmul_plan mixed{{dp, dp, onednn_bf16, onednn_bf16}};
  const path_rates one_storage[] = {rates(dp, 100, 500, 600, 721), rates(onednn_bf16, 103, 550, 600, 700)};
  CHECK(choose_plan(one_storage, mixed) == matmul_plan{{dp, onednn_bf16, onednn_bf16, onednn_bf16}});
}

TEST_CASE("the tuner picks the storage that loses least over all batch sizes", "[kernel_tuner]") {
  // oneDNN bf16 as run on AVX-512 without bf16 hardware: a quarter of our rates at prefill.
  const path_rates jit[] = {rates(onednn_bf16, 8, 40, 40, 50), rates(w8, 10, 60, 60, 110),
                            rates(w16, 11, 80, 80, 200)};
  const auto plan = choose_plan(jit, matmul_plan::uniform(onednn_bf16));
  CHECK(plan == matmul_plan{{w16, w16, w16, w16}});
  CHECK(plan.consistent());
  // oneDNN with bf16 hardware: it wins everywhere and keeps its storage.
  const path_rates amx[] = {rates(onednn_bf16, 12, 150, 150, 600), rates(w8, 10, 60, 60, 110),
                            rates(w16, 11, 80, 80, 200)};
  CHECK(choose_plan(amx, matmul_plan::uniform(onednn_bf16)) == matmul_plan::uniform(onednn_bf16));
  // Storage is one decision: oneDNN fastest at m = 256 only, ours much faster at decode: ours,
  // never a plan that would need two copies of the weights.
  const path_rates split[] = {rates(onednn_bf16, 3, 20, 20, 130), rates(w8, 10, 60, 60, 110)};
  CHECK(choose_plan(split, matmul_plan::uniform(onednn_bf16)) == matmul_plan::uniform(w8));
  // Nothing measured: the incumbent.
  const path_rates none[] = {rates(onednn_bf16, 0, 0, 0, 0), rates(w8, 0, 0, 0, 0)};
  CHECK(choose_plan(none, matmul_plan::uniform(onednn_bf16)) == matmul_plan::uniform(onednn_bf16));
}

TEST_CASE("cache lines round-trip and malformed ones are skipped", "[kernel_tuner]") {
  shape_plan s;
  s.n_in = 2048;
  s.n_out = 5632;
  s.ct = compute_type::bf16;
  s.choice = kernel_choice::automatic;
  s.threads = 2;
  s.plan = {{w8, w8, w8, widened}};
  s.rates = {rates(w8, 12.5, 80, 80, 95.2), rates(widened, 0, 60.1, 60.1, 120)};
  const std::string line = format_cache_line("Some CPU | avx2 fma", s);
  std::string cpu;
  const auto back = parse_cache_line(line, cpu);
  REQUIRE(back.has_value());
  CHECK(cpu == "Some CPU | avx2 fma");
  CHECK(back->n_in == 2048);
  CHECK(back->n_out == 5632);
  CHECK(back->threads == 2);
  CHECK(back->ct == compute_type::bf16);
  CHECK(back->choice == kernel_choice::automatic);
  CHECK(back->plan == s.plan);
  CHECK(back->why == "cached");
  REQUIRE(back->rates.size() == 2);
  CHECK(back->rates[1].path == widened);
  CHECK(back->rates[1].gflops[3] == Approx(120));

  const std::string bad[] = {
      "",
      std::string(kernel_cache_header),
      "cpu\t2\tbf16\tauto\t2048\t5632",                                                  // fields missing
      "cpu\t0\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t",       // no threads
      "cpu\t2\tf64\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t",        // compute
      "cpu\t2\tbf16\tfast\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t",       // choice
      "cpu\t2\tbf16\tauto\tx\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t",          // n_in
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w8\t",                           // two paths
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8\thearth-w8=1/2/3",  // an older build
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w9,hearth-w8,hearth-w8\t",       // unknown path
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,onednn-bf16,hearth-w8,hearth-w8\t",     // two storages
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\thearth-w8=1/2",  // rates
      "cpu\t2\tbf16\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\thearth-w8=1/-2/3/4",
      "cpu\t2\tbf16+q9_K\tauto\t2048\t5632\tquant-dot,quant-dot,quant-dot,quant-bf16\t",  // weights' type
      "cpu\t2\tbf16+f32\tauto\t2048\t5632\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t",
  };
  for (const auto& b : bad) {
    CAPTURE(b);
    CHECK_FALSE(parse_cache_line(b, cpu).has_value());
  }
  CHECK(parse_cache_line("cpu\t2\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t", cpu)
            .has_value());

  // Weights kept quantized are their own decision, named by their type.
  s.weights = tensor_type::q4_k;
  s.plan = {{matmul_path::quant_dot, matmul_path::quant_dot, matmul_path::quant_dot,
             matmul_path::quant_onednn_bf16}};
  s.rates = {rates(matmul_path::quant_dot, 70, 140, 140, 150),
             rates(matmul_path::quant_onednn_bf16, 0, 90, 90, 300)};
  const std::string qline = format_cache_line("Some CPU", s);
  CHECK(qline.find("\tbf16+q4_K\t") != std::string::npos);
  const auto qback = parse_cache_line(qline, cpu);
  REQUIRE(qback.has_value());
  CHECK(qback->weights == tensor_type::q4_k);
  CHECK(qback->plan == s.plan);
  CHECK(back->weights == tensor_type::f32);
}

TEST_CASE("the share of the cores other processes took while timing", "[kernel_tuner]") {
  // 2 s on 2 cores at 100 ticks a second: 400 ticks of the machine's time.
  const cpu_ticks before{1000, 50};
  CHECK(others_cpu_share(before, {1400, 450}, 2.0, 100, 2) == Approx(0.0));    // all of it ours
  CHECK(others_cpu_share(before, {1400, 250}, 2.0, 100, 2) == Approx(0.5));    // two busy loops on one core
  CHECK(others_cpu_share(before, {1100, 100}, 2.0, 100, 2) == Approx(0.125));  // a little of each
  CHECK(others_cpu_share(before, {1000, 50}, 0.0, 100, 2) == 0.0);             // no time: nothing known
  CHECK(others_cpu_share(before, {1900, 50}, 2.0, 100, 2) == 1.0);  // ticks counted late: at most all
  // This machine's counters read back, the machine's busy time at least this process's own.
  const auto now = read_cpu_ticks();
  REQUIRE(now.has_value());
  CHECK(now->machine_busy >= now->self);
  CHECK(now->self >= 0);
}

TEST_CASE("plans timed on a busy machine are named, with how to time them again", "[kernel_tuner]") {
  auto decided = [](uint32_t n_in, uint32_t n_out, const char* why, matmul_plan plan) {
    shape_plan s;
    s.n_in = n_in, s.n_out = n_out, s.why = why, s.plan = plan;
    return s;
  };
  const std::vector<shape_plan> quiet{decided(768, 2304, "measured", matmul_plan::uniform(w8)),
                                      decided(768, 768, "cached", matmul_plan::uniform(w8))};
  CHECK(busy_timing_note(quiet, "/var/cache/hearth/kernel-plans.tsv").empty());
  std::vector<shape_plan> busy = quiet;
  busy.push_back(decided(768, 4096, "noisy", matmul_plan::uniform(onednn_bf16)));
  busy.push_back(decided(2048, 768, "noisy", matmul_plan{{w8, w8, w8, widened}}));
  const std::string note = busy_timing_note(busy, "/var/cache/hearth/kernel-plans.tsv");
  CHECK_THAT(note, Catch::Contains("kernel plans of 2 shapes were timed while the machine was busy"));
  CHECK_THAT(note, Catch::Contains(
                       "768 x 4096 (onednn-bf16), 2048 x 768 (hearth-w8/hearth-w8/hearth-w8/widened-f32)"));
  CHECK_THAT(note, Catch::Contains("in /var/cache/hearth/kernel-plans.tsv"));
  CHECK_THAT(note, Catch::Contains("delete the file"));
  CHECK(note.find("768 x 2304") == std::string::npos);
  // No cache file: nothing to delete, and nothing kept beyond this process's loads.
  CHECK(busy_timing_note(busy, "").find("delete") == std::string::npos);
}

TEST_CASE("weights kept quantized are timed on their own blocks, apart from converted ones",
          "[kernel_tuner]") {
  if (!path_available(matmul_path::quant_dot)) {
    WARN("not run: no AVX2, so quantized weights are expanded at load here");
    return;
  }
  kernel_tuner t("", "test CPU");
  auto q = t.plan(512, 160, compute_type::bf16, kernel_choice::automatic, tensor_type::q4_k);
  REQUIRE(q.ok());
  CHECK(q->storage() == weight_storage::quantized);
  // The others dequantize every weight per call.
  CHECK((q->paths[0] == matmul_path::quant_dot || q->paths[0] == matmul_path::quant_dot_zmm));
  auto converted = t.plan(512, 160, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(converted.ok());
  CHECK(converted->storage() != weight_storage::quantized);
  const auto d = t.decisions();
  REQUIRE(d.size() == 2);
  CHECK(d[0].weights == tensor_type::q4_k);
  for (const auto& r : d[0].rates) {
    CAPTURE(to_string(r.path));
    CHECK(storage_of(r.path) == weight_storage::quantized);
    for (uint32_t b = 1; b < n_m_buckets; ++b) CHECK(r.gflops[b] > 0);
    CHECK((r.gflops[0] > 0) == (r.path == matmul_path::quant_dot || r.path == matmul_path::quant_dot_zmm));
  }
  // Our own kernels only: no oneDNN over dequantized slices.
  auto ours = t.plan(512, 160, compute_type::bf16, kernel_choice::hearth, tensor_type::q8_0);
  REQUIRE(ours.ok());
  for (auto p : ours->paths)
    CHECK((p == matmul_path::quant_dot || p == matmul_path::quant_dot_zmm || p == matmul_path::quant_bf16 ||
           p == matmul_path::quant_dpbf16));
}

TEST_CASE("a tuner measures a shape once, caches it, and a later process reads it back", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  const std::string cpu = "test CPU " + std::to_string(getpid());
  matmul_plan measured;
  std::string why;
  {
    kernel_tuner t(cache.path, cpu);
    auto plan = t.plan(96, 160, compute_type::bf16, kernel_choice::automatic);
    REQUIRE(plan.ok());
    CHECK(plan->consistent());
    measured = *plan;
    const auto d = t.decisions();
    REQUIRE(d.size() == 1);
    why = d[0].why;
    CHECK((why == "measured" || why == "noisy"));
    CHECK(d[0].rates.size() == paths_for(compute_type::bf16).size());
    for (const auto& r : d[0].rates) {
      CAPTURE(to_string(r.path));
      for (uint32_t b = 1; b < n_m_buckets; ++b) CHECK(r.gflops[b] > 0);
    }
    // The same shape again: remembered, not measured again.
    CHECK(*t.plan(96, 160, compute_type::bf16, kernel_choice::automatic) == measured);
    CHECK(t.decisions().size() == 1);
  }
  // A busy machine's plans are cached too: every later load runs the kernels the first one chose.
  kernel_tuner again(cache.path, cpu);
  auto plan = again.plan(96, 160, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(plan.ok());
  CHECK(*plan == measured);
  CHECK(again.decisions()[0].why == "cached");
  CHECK(cache.read().find(cpu + "\t") != std::string::npos);
}

TEST_CASE("a shape measured by two processes at once takes the plan the first one wrote", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  const std::string cpu = "test CPU " + std::to_string(getpid());
  kernel_tuner late(cache.path, cpu), early(cache.path, cpu);
  // `late` reads the file before `early` has decided 96 x 160, so it measures that shape itself.
  REQUIRE(late.plan(64, 48, compute_type::bf16, kernel_choice::automatic).ok());
  auto first = early.plan(96, 160, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(first.ok());
  const std::string written = cache.read();
  auto second = late.plan(96, 160, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(second.ok());
  CHECK(*second == *first);
  CHECK(late.decisions()[1].why == "cached");
  CHECK(late.decisions()[1].tune_seconds > 0);  // it did measure, then deferred
  // Its own measurement replaced nothing: the file has the first decision, and both shapes.
  const std::string text = cache.read();
  CHECK(text == written);
  CHECK(text.find("\t64\t48\t") != std::string::npos);
  CHECK(text.find("\t96\t160\t") != std::string::npos);
}

TEST_CASE("a cached plan is used for its CPU only, and a corrupt cache is only a cache", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  const int threads = kernel_threads();
  {
    std::ofstream out(cache.path);
    out << kernel_cache_header << "\n"
        << "garbage line\n"
        << "mine\t" << threads << "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,widened-f32\t"
        << every_path_rated() << "\n"
        << "other\t" << threads << "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t\n";
  }
  kernel_tuner mine(cache.path, "mine");
  auto plan = mine.plan(64, 48, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(plan.ok());
  CHECK(*plan == matmul_plan{{w8, w8, w8, widened}});
  CHECK(mine.decisions()[0].why == "cached");
  // Another thread count is another decision.
  set_kernel_threads(threads + 1);
  auto more = mine.plan(64, 48, compute_type::bf16, kernel_choice::automatic);
  set_kernel_threads(threads);
  REQUIRE(more.ok());
  CHECK(mine.decisions().size() == 2);
  CHECK(mine.decisions()[1].why != "cached");
  const std::string text = cache.read();             // then cached: the file was rewritten
  CHECK(text.find("other\t") != std::string::npos);  // another CPU's line kept
  CHECK(text.find("garbage") == std::string::npos);
  CHECK(text.find("mine\t" + std::to_string(threads + 1) + "\t") != std::string::npos);
}

TEST_CASE("a cached plan made before a path this CPU has existed is made again", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  {
    std::ofstream out(cache.path);
    // Only hearth-w8 timed: widened-f32, which every CPU has, is missing.
    out << kernel_cache_header << "\nmine\t" << kernel_threads()
        << "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\thearth-w8=1/2/3/4\n";
  }
  kernel_tuner mine(cache.path, "mine");
  REQUIRE(mine.plan(64, 48, compute_type::bf16, kernel_choice::automatic).ok());
  CHECK(mine.decisions()[0].why != "cached");
  CHECK(mine.decisions()[0].rates.size() == paths_for(compute_type::bf16).size());
}

TEST_CASE("a cached plan made before a path was timed at some batch size is made again", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  // Every path rated, but hearth-w8, which is timed at every m, not at m = 16.
  std::string rated = every_path_rated();
  const std::string w8_rates = std::string(to_string(w8)) + "=1/2/3/4";
  rated.replace(rated.find(w8_rates), w8_rates.size(), std::string(to_string(w8)) + "=1/0/3/4");
  {
    std::ofstream out(cache.path);
    out << kernel_cache_header << "\nmine\t" << kernel_threads()
        << "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t" << rated << "\n";
  }
  kernel_tuner mine(cache.path, "mine");
  REQUIRE(mine.plan(64, 48, compute_type::bf16, kernel_choice::automatic).ok());
  CHECK(mine.decisions()[0].why != "cached");
  // The same line with hearth-w8 timed at m = 16 holds.
  {
    std::ofstream out(cache.path);
    out << kernel_cache_header << "\nmine\t" << kernel_threads()
        << "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t" << every_path_rated() << "\n";
  }
  kernel_tuner again(cache.path, "mine");
  auto plan = again.plan(64, 48, compute_type::bf16, kernel_choice::automatic);
  REQUIRE(plan.ok());
  CHECK(again.decisions()[0].why == "cached");
  CHECK(*plan == matmul_plan::uniform(w8));
}

TEST_CASE("a cache written under another kernels' version is measured again and replaced", "[kernel_tuner]") {
  temp_file cache("plans.tsv");
  const std::string line = "\t" + std::to_string(kernel_threads()) +
                           "\tbf16\tauto\t64\t48\thearth-w8,hearth-w8,hearth-w8,hearth-w8\t" +
                           every_path_rated() + "\n";
  {
    std::ofstream out(cache.path);
    out << "# hearth kernel plans v1: cpu threads compute choice n_in n_out paths\n"
        << "mine" << line << "other" << line;
  }
  kernel_tuner mine(cache.path, "mine");
  REQUIRE(mine.plan(64, 48, compute_type::bf16, kernel_choice::automatic).ok());
  CHECK(mine.decisions()[0].why != "cached");
  const std::string text = cache.read();
  CHECK(text.rfind(std::string(kernel_cache_header) + "\n", 0) == 0);
  CHECK(text.find("v1") == std::string::npos);
  CHECK(text.find("other\t") == std::string::npos);  // timed by the other kernels too
  CHECK(text.find("mine\t") != std::string::npos);
}

TEST_CASE("a kernel choice that cannot run is refused by name", "[kernel_tuner]") {
  kernel_tuner t("", "test");
  auto ours_f32 = t.plan(64, 48, compute_type::f32, kernel_choice::hearth);
  REQUIRE_FALSE(ours_f32.ok());
  CHECK(ours_f32.error().code == errc::unsupported);
  CHECK(ours_f32.error().message.find("kernels = \"hearth\"") != std::string::npos);
  auto onednn = t.plan(64, 48, compute_type::bf16, kernel_choice::onednn);
  CHECK(onednn.ok() == path_available(matmul_path::onednn_bf16));
  // Only one path to choose: taken without measuring.
  auto f32 = t.plan(64, 48, compute_type::f32, kernel_choice::automatic);
  REQUIRE(f32.ok());
  CHECK(*f32 == matmul_plan::uniform(matmul_path::onednn_f32));
  CHECK(t.decisions().back().why == "only path");
  CHECK(t.decisions().back().rates.empty());
}

TEST_CASE("a CPU mask names features as /proc/cpuinfo does and keeps the unknown names", "[kernel_tuner]") {
  std::vector<std::string> unknown;
  CHECK(parse_cpu_mask("", unknown) == 0);
  CHECK(parse_cpu_mask(" , ,", unknown) == 0);
  const uint32_t bits = parse_cpu_mask("avx512_bf16, avx512_vnni,foo,avx2,AVX2", unknown);
  CHECK(bits == ((1u << static_cast<uint32_t>(cpu_feature::avx512_bf16)) |
                 (1u << static_cast<uint32_t>(cpu_feature::avx512_vnni)) |
                 (1u << static_cast<uint32_t>(cpu_feature::avx2))));
  CHECK(unknown == std::vector<std::string>{"foo", "AVX2"});
  for (uint32_t i = 0; i < n_cpu_features; ++i) {
    const auto f = static_cast<cpu_feature>(i);
    std::vector<std::string> none;
    CHECK(parse_cpu_mask(to_string(f), none) == 1u << i);
    CHECK(none.empty());
  }
  // Unless the suite itself runs masked (to take another CPU's paths), what it reports is the
  // processor's own.
  if (std::getenv("HEARTH_CPU_MASK") == nullptr) {
    CHECK(cpu_mask_error().empty());
    CHECK(cpu_mask_note().empty());
    CHECK_FALSE(cpu_masked("avx512_bf16"));
  }
}
