// Reading and grouping Matrix issues (looptrace report ISSUES...): issues per second on one
// core, from JSON lines and from logcat, named through a methodMapping.txt. A day of a fleet
// is millions of issues; the target is >= 100,000 issues/s.
//
//   looptrace_matrix_ingest_bench [ISSUES (default 300000)]
#include <fmt/format.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "loader/decode/mapping_namer.h"
#include "loader/session/matrix_input.h"

namespace {

using looptrace::MatrixFleetBuilder;
using looptrace::loader::MatrixNaming;

constexpr int kMethods = 2000;

// An EvilMethod issue as the SDK writes it: the device block, a 14-line stack (the demo's
// shape), a stackKey among a few hundred signatures, a scene among 40.
std::string EvilIssue(std::mt19937& rng, uint64_t i) {
  const int key = static_cast<int>(rng() % 300) + 1;
  const int cost = 700 + static_cast<int>(rng() % 3000);
  std::string stack =
      fmt::format("0,1048574,1,{}\\n1,{},1,{}\\n2,{},1,{}\\n", cost, key + 1000, cost - 8, key, cost - 10);
  // Under one signature the same code runs, mostly: its callees come from a pool of 24 methods.
  int depth = 3;
  for (int k = 0; k < 11; ++k) {
    const int callee = (key * 37 + static_cast<int>(rng() % 24)) % kMethods + 1;
    stack += fmt::format("{},{},1,{}\\n", depth, callee, 5 + rng() % 300);
    depth = depth == 3 ? 4 : (rng() % 2 ? 3 : 4);
  }
  return fmt::format(
      R"({{"machine":"{}","cpu_app":0,"mem":{},"mem_free":{},"detail":"NORMAL","cost":{},"usage":"0.35%","scene":"com.example.Activity{}","stack":"{}","stackKey":"{}|","tag":"Trace_EvilMethod","process":"com.example","time":{}}})",
      (rng() % 2) ? "HIGH" : "LOW", 4000000000ULL + rng() % 1000, 800000 + rng() % 1000, cost, rng() % 40, stack, key,
      1700000000000ULL + i);
}

std::string WriteInput(uint64_t issues, bool logcat) {
  const std::string path = std::filesystem::temp_directory_path() /
                           fmt::format("lt_matrix_bench_{}_{}", getpid(), logcat ? "logcat" : "jsonl");
  std::ofstream out(path, std::ios::binary);
  std::mt19937 rng(42);
  for (uint64_t i = 0; i < issues; ++i) {
    if (logcat) out << "05-09 09:16:53.051  4242  4287 E Matrix.TestPluginListener: report issue content: content[";
    out << EvilIssue(rng, i);
    if (logcat) out << "]\n05-09 09:16:53.052  4242  4242 D OpenGLRenderer: endAllActiveAnimators on 0x7c5e0";
    out << '\n';
  }
  return path;
}

std::string WriteMapping() {
  const std::string path = std::filesystem::temp_directory_path() / fmt::format("lt_matrix_bench_{}_map", getpid());
  std::ofstream out(path);
  for (int id = 1; id <= kMethods + 1300; ++id)
    out << fmt::format("{},1,com.example.pkg{}.Class{} method{} ()V\n", id, id % 17, id % 101, id);
  return path;
}

// This process's CPU time: the machines are shared, so wall time says more about the
// neighbours than about the reader.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double Run(const std::string& path, const MatrixNaming& naming, uint64_t* read) {
  const double begin = CpuSeconds();
  MatrixFleetBuilder builder(200);
  auto result = looptrace::loader::ReadMatrixInput(path, naming, builder);
  if (!result) {
    fmt::print(stderr, "{}\n", result.error().message);
    std::exit(1);
  }
  auto report = builder.Finish();
  *read = report.issues;
  return CpuSeconds() - begin;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t issues = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 300000;
  const std::string mapping_path = WriteMapping();
  auto namer = looptrace::loader::MappingNamer::Load(mapping_path);
  if (!namer) return 1;
  const MatrixNaming naming{namer->get(), nullptr};
  for (bool logcat : {false, true}) {
    const std::string path = WriteInput(issues, logcat);
    const auto bytes = std::filesystem::file_size(path);
    double best = 1e9;
    uint64_t read = 0;
    for (int round = 0; round < 3; ++round) best = std::min(best, Run(path, naming, &read));
    std::filesystem::remove(path);
    fmt::print(
        "{:<10} {} issues ({:.0f} MB) read, named and grouped in {:.3f} s of CPU: {:.0f} issues/s, {:.0f} MB/s "
        "(best of 3, one thread)\n",
        logcat ? "logcat" : "JSON lines", read, bytes / 1e6, best, read / best, bytes / 1e6 / best);
  }
  std::filesystem::remove(mapping_path);
  return 0;
}
