#include "kernels/kernel_tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "kernels/cpu_features.hpp"
#include "kernels/matmul.hpp"
#include "kernels/parallel.hpp"

// Timing: synthetic weights of the shape, but only a slice of its columns, about 2 Mi weights
// (4 MiB in bf16; never fewer than 8 panels per thread), so that the tune of a 1b model's five
// shapes stays near two seconds. Per-column rates barely change with n_out beyond that, except
// where a kernel reads ahead through its columns: hearth-dpbf16 at m = 16 took 0.73-0.78 x
// oneDNN's time at 1b's whole shapes, cold, and 0.85-0.99 x on 1 Mi-weight slices, where the
// tuner took oneDNN for 2 of the 5 (AMD EPYC Zen 5); on 2 Mi, it chose hearth-dpbf16 for 4. At decode's
// m the slice is read cold, from memory, as decode reads it (time_cold_forward). Each path is warmed
// up once (primitive creation, page faults) and timed until it has run twice and 5 ms, or 50 times
// (cold: 10 times); the fastest run counts, the one least disturbed by the rest of the machine,
// and every path is timed in two rounds (see measure).

namespace hearth {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr double quiet_margin = 1.05;
// Rounds further apart than this mean the machine was busy: the plan then needs a wider margin
// to leave the incumbent. It is cached all the same: every later load must run what this one
// chose, and the wider margin already keeps a busy machine's timings from leaving a good path.
// Steady load slows both rounds alike, so other processes' share of the cores while timing counts
// too: `hearth serve` beside two busy loops (AMD EPYC Zen 4) timed 2 of small's 5 shapes with
// rounds close enough and took oneDNN's bf16 at m = 1 for them (37-39 GFLOP/s there on a quiet
// machine, hearth-dpbf16 44-45).
constexpr double noisy_spread = 0.25, noisy_others = 0.15, noisy_margin = 1.3;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

uint32_t slice_columns(uint32_t n_in, uint32_t n_out) {
  const double target = std::max(2097152.0 / n_in, 128.0 * kernel_threads());
  return std::clamp<uint32_t>(static_cast<uint32_t>(target) / 16 * 16, 16, n_out);
}

// The fastest of several forwards of lin at m rows, in seconds.
double time_forward(const linear& lin, const float* x, float* y, uint32_t m) {
  lin.forward(x, y, m);
  double best = 1e30, total = 0;
  for (int runs = 0; runs < 50 && (runs < 2 || total < 0.005); ++runs) {
    const auto t0 = clock_type::now();
    lin.forward(x, y, m);
    const double t = seconds_since(t0);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

// A decode step reads every weight from memory, and there the paths differ in how well they
// stream while they compute, which a slice in cache does not show: in cache oneDNN's bf16 brgemm
// and hearth-dpbf16 ran within 10 % of each other at m = 1, while in `small`'s steps oneDNN read
// 16-18 GB/s and the step took 1.45 x as long (AMD EPYC Zen 4). So the decode buckets (m < 128)
// are timed cold, the weights flushed from the caches before each run; prefill chunks, bound by
// compute, warm.
double time_cold_forward(const linear& lin, const float* x, float* y, uint32_t m) {
  lin.forward(x, y, m);
  double best = 1e30;
  for (int runs = 0; runs < 10; ++runs) {
    lin.flush_weights();
    const auto t0 = clock_type::now();
    lin.forward(x, y, m);
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// Synthetic weights (cols, n_in): their values do not matter to the timing, only that they are
// normal floats.
std::vector<float> synthetic_weights(uint32_t n_in, uint32_t cols) {
  std::vector<float> v(size_t{cols} * n_in);
  uint32_t s = 0x9e3779b9u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return v;
}

// The rates of each path on a slice of `cols` columns of values (cols, n_in), at each bucket: two
// rounds, the second in reverse order, each rate the better of its two, so that a burst of other
// work on the machine during one path's turn does not decide against it. A path that ran at under
// 1 / 1.5 of the best rate at a bucket in the first round is not timed there again: no margin
// would choose it, and the slow paths' timings are the longest.
struct measurement {
  std::vector<path_rates> rates;
  double spread = 0;  //!< the largest relative difference between a rate's two rounds
};

// The quantized paths other than the dots dequantize every weight per call, which cannot pay at
// m = 1 (nor can widening them).
bool worth_timing(matmul_path p, uint32_t bucket) {
  const bool expands =
      p == matmul_path::widened_f32 || (storage_of(p) == weight_storage::quantized &&
                                        p != matmul_path::quant_dot && p != matmul_path::quant_dot_zmm);
  return bucket > 0 || !expands;
}

double best_of(std::span<const path_rates> rates, uint32_t bucket) {
  double best = 0;
  for (const auto& r : rates) best = std::max(best, r.gflops[bucket]);
  return best;
}

measurement measure(std::span<const matmul_path> paths, uint32_t n_in, uint32_t cols,
                    std::span<const float> values, tensor_type weights) {
  std::vector<std::byte> blocks;
  if (weights != tensor_type::f32) {
    blocks.resize(*bytes_for(weights, values.size()));
    quantize(weights, values, blocks);
  }
  const weight_part part{
      weights, weights == tensor_type::f32 ? std::as_bytes(values) : std::span(blocks), cols, {}};
  measurement out;
  std::vector<path_rates>& rates = out.rates;
  std::vector<linear> lins;
  for (matmul_path p : paths) {
    auto lin = linear::create(std::span(&part, 1), n_in, matmul_plan::uniform(p));
    if (!lin) continue;  // not a candidate, then
    rates.push_back({p, {}});
    lins.push_back(std::move(*lin));
  }
  std::vector<float> x(size_t{bucket_m.back()} * n_in, 0.5f), y(size_t{bucket_m.back()} * cols);
  for (int round = 0; round < 2; ++round) {
    for (size_t n = 0; n < lins.size(); ++n) {
      const size_t i = round == 0 ? n : lins.size() - 1 - n;
      for (uint32_t b = 0; b < n_m_buckets; ++b) {
        if (!worth_timing(rates[i].path, b) || (round == 1 && rates[i].gflops[b] * 1.5 < best_of(rates, b)))
          continue;
        const uint32_t m = bucket_m[b];
        const double seconds = b + 1 < n_m_buckets ? time_cold_forward(lins[i], x.data(), y.data(), m)
                                                   : time_forward(lins[i], x.data(), y.data(), m);
        const double gflops = 2.0 * m * n_in * cols / seconds / 1e9;
        double& best = rates[i].gflops[b];
        if (round == 1) out.spread = std::max(out.spread, std::abs(gflops - best) / std::max(gflops, best));
        best = std::max(best, gflops);
      }
    }
  }
  return out;
}

result<std::vector<matmul_path>> candidates(compute_type ct, kernel_choice choice,
                                            tensor_type weights = tensor_type::f32) {
  std::vector<matmul_path> all;
  if (weights == tensor_type::f32) {
    all = paths_for(ct);
  } else {
    for (matmul_path p : all_matmul_paths)
      if (storage_of(p) == weight_storage::quantized && path_available(p)) all.push_back(p);
  }
  std::erase_if(all, [&](matmul_path p) {
    // hearth-dpbf16, ours over oneDNN's storage, is neither: only auto mixes the two.
    if (p == matmul_path::hearth_dpbf16) return choice != kernel_choice::automatic;
    const bool onednn = storage_of(p) != weight_storage::bf16_panels && p != matmul_path::quant_dot &&
                        p != matmul_path::quant_dot_zmm && p != matmul_path::quant_bf16 &&
                        p != matmul_path::quant_dpbf16;
    const bool ours = !onednn && storage_of(p) != weight_storage::onednn_f32;
    return choice == kernel_choice::onednn ? !onednn : choice == kernel_choice::hearth ? !ours : false;
  });
  if (all.empty()) {
    return error{errc::unsupported,
                 std::string("kernels = \"") + to_string(choice) + "\" has no path for compute " +
                     to_string(ct) +
                     (ct == compute_type::f32 ? " (our kernels compute bf16)"
                                              : " on this CPU (oneDNN has no bf16 matmul without AVX-512)")};
  }
  return all;
}

}  // namespace

status<> check_kernel_choice(compute_type ct, kernel_choice choice) {
  if (auto c = candidates(ct, choice); !c) return c.error();
  return {};
}

namespace {

bool same_key(const shape_plan& a, const shape_plan& b) {
  return a.n_in == b.n_in && a.n_out == b.n_out && a.ct == b.ct && a.choice == b.choice &&
         a.threads == b.threads && a.weights == b.weights;
}

}  // namespace

matmul_plan choose_plan(std::span<const path_rates> rates, const matmul_plan& incumbent, double margin) {
  std::array<double, n_m_buckets> best{};
  for (const auto& r : rates)
    for (uint32_t b = 0; b < n_m_buckets; ++b) best[b] = std::max(best[b], r.gflops[b]);
  // The fastest path of storage s at bucket b; the storage's preferred path there (the
  // incumbent's, else the first of the storage) is kept when within the margin of it.
  auto pick = [&](weight_storage s, uint32_t b) -> const path_rates* {
    const path_rates *fastest = nullptr, *preferred = nullptr;
    for (const auto& r : rates) {
      if (storage_of(r.path) != s || r.gflops[b] <= 0) continue;
      if (!fastest || r.gflops[b] > fastest->gflops[b]) fastest = &r;
      if (!preferred || r.path == incumbent.paths[b]) preferred = &r;
    }
    return preferred && preferred->gflops[b] * margin >= fastest->gflops[b] ? preferred : fastest;
  };
  matmul_plan plan = incumbent;
  double plan_loss = 0;
  bool have = false;
  for (auto s : {incumbent.storage(), weight_storage::onednn_f32, weight_storage::onednn_bf16,
                 weight_storage::bf16_panels}) {
    matmul_plan candidate;
    double loss = 0;
    bool complete = true;
    for (uint32_t b = 0; b < n_m_buckets && complete; ++b) {
      const path_rates* r = pick(s, b);
      complete = r != nullptr;
      if (complete) candidate.paths[b] = r->path, loss += best[b] / r->gflops[b];
    }
    // Ties and near-ties stay with the incumbent's storage, tried first.
    if (complete && (!have || loss * margin < plan_loss)) plan = candidate, plan_loss = loss, have = true;
  }
  return plan;
}

std::string format_cache_line(std::string_view cpu, const shape_plan& s) {
  std::ostringstream out;
  out << cpu << '\t' << s.threads << '\t' << to_string(s.ct)
      << (s.weights == tensor_type::f32 ? "" : std::string("+") + traits_of(s.weights).name) << '\t'
      << to_string(s.choice) << '\t' << s.n_in << '\t' << s.n_out << '\t';
  for (uint32_t b = 0; b < n_m_buckets; ++b) out << (b ? "," : "") << to_string(s.plan.paths[b]);
  out << '\t';
  for (const auto& r : s.rates) {
    out << (&r == s.rates.data() ? "" : ";") << to_string(r.path) << '=';
    for (uint32_t b = 0; b < n_m_buckets; ++b) out << (b ? "/" : "") << std::lround(r.gflops[b] * 10) / 10.0;
  }
  return out.str();
}

namespace {

//! Whether a decision (cached, or written by another process) holds here: every path of its plan
//! runs on this CPU, and every candidate path was timed for it at every bucket it is timed at now
//! (a decision made by an older build, before this CPU had one of today's paths or before a path
//! was timed at some m, is made again).
bool usable(const shape_plan& s, std::span<const matmul_path> paths) {
  const auto timed = [&](matmul_path p) {
    const auto r = std::find_if(s.rates.begin(), s.rates.end(), [&](const auto& e) { return e.path == p; });
    if (r == s.rates.end()) return false;
    for (uint32_t b = 0; b < n_m_buckets; ++b) {
      if (worth_timing(p, b) && r->gflops[b] <= 0) return false;
    }
    return true;
  };
  return std::all_of(s.plan.paths.begin(), s.plan.paths.end(), path_available) &&
         std::all_of(paths.begin(), paths.end(), timed);
}

//! An exclusive flock(2) on a file, for its scope; none if the file cannot be opened (the cache is
//! only a cache).
class file_lock {
 public:
  explicit file_lock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~file_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

 private:
  int fd_;
};

//! A cache line without its plan and rates: what identifies the decision.
std::string_view key_of(std::string_view line) {
  return line.substr(0, line.rfind('\t', line.rfind('\t') - 1));
}

//! "hearth-w8=12.5/80/95.2;widened-f32=0/60.1/70" (as format_cache_line writes them), or nullopt.
std::optional<std::vector<path_rates>> parse_rates(const std::string& text) {
  std::vector<path_rates> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ';');) {
    const auto eq = item.find('=');
    const auto p = eq == std::string::npos ? std::nullopt : matmul_path_from_name(item.substr(0, eq));
    if (!p) return std::nullopt;
    path_rates r{*p, {}};
    std::istringstream values(item.substr(eq + 1));
    uint32_t b = 0;
    for (std::string v; std::getline(values, v, '/') && b < n_m_buckets; ++b) {
      char* end = nullptr;
      r.gflops[b] = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(r.gflops[b] >= 0)) return std::nullopt;
    }
    if (b != n_m_buckets) return std::nullopt;
    out.push_back(r);
  }
  return out;
}

// Whether a cache file begins with this build's header (its other lines are then worth reading).
bool written_now(std::istream& in) {
  std::string first;
  return std::getline(in, first) && first == kernel_cache_header;
}

}  // namespace

std::optional<shape_plan> parse_cache_line(std::string_view line, std::string& cpu) {
  std::vector<std::string> f;
  for (size_t at = 0;;) {
    const size_t tab = line.find('\t', at);
    f.emplace_back(line.substr(at, tab == std::string_view::npos ? line.npos : tab - at));
    if (tab == std::string_view::npos) break;
    at = tab + 1;
  }
  if (f.size() != 8) return std::nullopt;
  shape_plan s;
  char* end = nullptr;
  auto number = [&](const std::string& t) {
    const unsigned long v = std::strtoul(t.c_str(), &end, 10);
    return !t.empty() && *end == '\0' && v > 0 && v <= UINT32_MAX ? static_cast<uint32_t>(v) : 0u;
  };
  s.threads = static_cast<int>(number(f[1]));
  s.n_in = number(f[4]);
  s.n_out = number(f[5]);
  const auto choice = kernel_choice_from_name(f[3]);
  const std::string ct = f[2].substr(0, f[2].find('+'));
  if (ct != "f32" && ct != "bf16") return std::nullopt;
  s.ct = ct == "f32" ? compute_type::f32 : compute_type::bf16;
  if (ct.size() < f[2].size()) {
    const auto weights = tensor_type_from_name(std::string_view(f[2]).substr(ct.size() + 1));
    if (!weights || *weights == tensor_type::f32) return std::nullopt;
    s.weights = *weights;
  }
  std::istringstream paths(f[6]);
  uint32_t b = 0;
  for (std::string name; std::getline(paths, name, ',');) {
    const auto p = matmul_path_from_name(name);
    if (!p || b == n_m_buckets) return std::nullopt;
    s.plan.paths[b++] = *p;
  }
  if (s.threads == 0 || s.n_in == 0 || s.n_out == 0 || !choice || b != n_m_buckets || !s.plan.consistent())
    return std::nullopt;
  auto rates = parse_rates(f[7]);
  if (!rates) return std::nullopt;
  s.choice = *choice;
  s.rates = std::move(*rates);
  s.why = "cached";
  cpu = f[0];
  return s;
}

kernel_tuner::kernel_tuner(std::string cache_path, std::string cpu)
    : cache_path_(std::move(cache_path)), cpu_(std::move(cpu)) {}

void kernel_tuner::load_cache() {
  cache_loaded_ = true;
  if (cache_path_.empty()) return;
  std::ifstream in(cache_path_);
  if (!written_now(in)) return;
  for (std::string line, cpu; std::getline(in, line);) {
    auto s = parse_cache_line(line, cpu);
    if (s && cpu == cpu_) cached_.push_back(std::move(*s));
  }
}

// A shape's plan is what the cache file says, once any process has measured it: two loads that
// chose differently would give one seed two outputs. Under an exclusive lock on a file beside the
// cache, a decision another process wrote while this one measured wins; otherwise this one's is
// added, the file's other valid lines kept (other CPUs share a home directory over NFS), via a
// temporary file and a rename so that readers never see a torn file. Failures are silent: without
// the file the next load measures again.
std::optional<shape_plan> kernel_tuner::settle(const shape_plan& mine,
                                               std::span<const matmul_path> paths) const {
  if (cache_path_.empty()) return std::nullopt;
  std::error_code ec;
  const std::filesystem::path path(cache_path_);
  std::filesystem::create_directories(path.parent_path(), ec);
  const file_lock lock(path.string() + ".lock");
  std::vector<std::string> lines;
  const std::string line = format_cache_line(cpu_, mine);
  if (std::ifstream in(path); written_now(in)) {
    for (std::string l, cpu; std::getline(in, l);) {
      auto theirs = parse_cache_line(l, cpu);
      if (!theirs) continue;
      if (key_of(l) != key_of(line)) {
        lines.push_back(l);
      } else if (cpu == cpu_ && usable(*theirs, paths)) {
        return theirs;
      }
    }
  }
  lines.push_back(line);
  const auto tmp = path.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kernel_cache_header << '\n';
    for (const auto& l : lines) out << l << '\n';
    if (!out) return std::filesystem::remove(tmp, ec), std::nullopt;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return std::nullopt;
}

result<matmul_plan> kernel_tuner::plan(uint32_t n_in, uint32_t n_out, compute_type ct, kernel_choice choice,
                                       tensor_type weights) {
  auto paths = candidates(ct, choice, weights);
  if (!paths) return paths.error();
  const std::lock_guard lock(mutex_);
  const bool quantized = weights != tensor_type::f32;
  shape_plan s{n_in,
               n_out,
               ct,
               choice,
               kernel_threads(),
               quantized ? matmul_plan{quantized_paths} : matmul_plan::uniform(paths->front()),
               {},
               "only path",
               0,
               weights};
  for (const auto& d : decided_) {
    if (same_key(d, s)) return d.plan;
  }
  if (!cache_loaded_) load_cache();
  const auto cached =
      std::find_if(cached_.begin(), cached_.end(), [&](const auto& c) { return same_key(c, s); });
  if (cached != cached_.end() && usable(*cached, *paths)) {
    decided_.push_back(*cached);
    return cached->plan;
  }
  if (paths->size() > 1) {
    const auto t0 = clock_type::now();
    const uint32_t cols = slice_columns(n_in, n_out);
    const auto values = synthetic_weights(n_in, cols);
    const auto timing = clock_type::now();
    const auto ticks0 = read_cpu_ticks();
    const auto m = measure(*paths, n_in, cols, values, weights);
    const auto ticks1 = read_cpu_ticks();
    const double others = ticks0 && ticks1 ? others_cpu_share(*ticks0, *ticks1, seconds_since(timing),
                                                              static_cast<double>(sysconf(_SC_CLK_TCK)),
                                                              static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)))
                                           : 0.0;
    s.rates = m.rates;
    const bool noisy = m.spread > noisy_spread || others > noisy_others;
    // The incumbent: the plan taken without measuring, a bucket's path that is not a candidate
    // (a narrower kernel choice) replaced by the first that is.
    matmul_plan incumbent = quantized ? matmul_plan::uniform(quantized_paths[0]) : default_plan(ct);
    for (auto& p : incumbent.paths)
      if (std::find(paths->begin(), paths->end(), p) == paths->end()) p = paths->front();
    s.plan = choose_plan(s.rates, incumbent, noisy ? noisy_margin : quiet_margin);
    s.why = noisy ? "noisy" : "measured";
    if (auto theirs = settle(s, *paths)) s.plan = theirs->plan, s.rates = theirs->rates, s.why = "cached";
    s.tune_seconds = seconds_since(t0);
  }
  decided_.push_back(s);
  return s.plan;
}

std::vector<shape_plan> kernel_tuner::decisions() const {
  const std::lock_guard lock(mutex_);
  return decided_;
}

std::optional<cpu_ticks> read_cpu_ticks() {
  std::ifstream stat("/proc/stat"), self("/proc/self/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu")
    return std::nullopt;
  // Fields 14 and 15 (utime, stime), counted after the command's name, which may hold spaces.
  std::string line;
  std::getline(self, line);
  const auto name_end = line.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 13; ++i) rest >> field;
  double utime = 0, stime = 0;
  if (!(rest >> utime >> stime)) return std::nullopt;
  return cpu_ticks{user + nice + system + irq + softirq + steal, utime + stime};
}

double others_cpu_share(const cpu_ticks& before, const cpu_ticks& after, double seconds,
                        double ticks_per_second, int cores) {
  const double available = seconds * ticks_per_second * std::max(1, cores);
  if (!(available > 0)) return 0.0;
  const double others = (after.machine_busy - before.machine_busy) - (after.self - before.self);
  return std::clamp(others / available, 0.0, 1.0);
}

std::string busy_timing_note(std::span<const shape_plan> decisions, const std::string& cache_path) {
  std::string shapes;
  size_t n = 0;
  for (const auto& d : decisions) {
    if (d.why != "noisy") continue;
    shapes += (n++ ? ", " : "") + std::to_string(d.n_in) + " x " + std::to_string(d.n_out) + " (" +
              describe(d.plan) + ")";
  }
  if (n == 0) return "";
  const std::string where = cache_path.empty() ? "" : " in " + cache_path;
  return "kernel plans of " + std::to_string(n) + (n == 1 ? " shape" : " shapes") +
         " were timed while the machine was busy, and are kept" + where + " for every later load: " + shapes +
         (cache_path.empty() ? "" : "; delete the file and start again on a quiet machine to time them anew");
}

std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string model = "unknown CPU", flags;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model" && line.rfind("model name", 0) == 0) model = value;
    if (key == "flags") flags = " " + value + " ";
    if (!flags.empty()) break;
  }
  std::string isa;
  for (const char* f : {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_bf16"}) {
    // A feature masked off (cpu_features.hpp) is one this CPU's plans are timed without.
    if (flags.find(std::string(" ") + f + " ") != std::string::npos && !cpu_masked(f))
      isa += std::string(isa.empty() ? "" : " ") + f;
  }
  std::string id = model + " | " + isa + cpu_mask_note();
  std::replace(id.begin(), id.end(), '\t', ' ');
  return id;
}

kernel_tuner& process_tuner() {
  static kernel_tuner tuner = [] {
    std::string path;
    if (const char* env = std::getenv("HEARTH_KERNEL_CACHE"); env && *env) {
      path = std::string_view(env) == "off" ? "" : env;
    } else if (const char* service = std::getenv("CACHE_DIRECTORY"); service && *service) {
      // systemd's CacheDirectory=; it may list several, the first is ours.
      path = std::string(service).substr(0, std::string(service).find(':')) + "/kernel-plans.tsv";
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
      path = std::string(xdg) + "/hearth/kernel-plans.tsv";
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      path = std::string(home) + "/.cache/hearth/kernel-plans.tsv";
    }
    return kernel_tuner(path, cpu_identity());
  }();
  return tuner;
}

}  // namespace hearth
