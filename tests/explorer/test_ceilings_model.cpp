// Ceiling rows (`explorer peak`) in the view model: kept apart from the progression, looked up per
// device, family and dtype, a row's share of its family's ceiling, and the roofline's points.
#include <doctest/doctest.h>

#include <deque>

#include "explorer/model/ceilings.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/roofline.hpp"
#include "explorer/model/row_set.hpp"
#include "kernels/common/config.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

constexpr const char* kConfig = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles";

struct Rows {
  std::deque<ResultRow> storage;

  ResultRow& add(std::string step, std::string config, int seq_len, double tflops,
                 std::string dtype = "fp16") {
    ResultRow row;
    row.subject = *RowSubject::from_text(step);
    if (!config.empty()) row.config = parse_short_form(config);
    row.problem.dtype = dtype_from_string(dtype).value_or(DType::FP16);
    if (row.subject.is_ceiling()) row.subject.set_element_type(dtype_from_string(dtype));
    row.problem.d_head = 128;
    row.problem.batch = 16;
    row.problem.heads = 16;
    row.problem.heads_kv = row.problem.heads;
    row.problem.seq_len = seq_len;
    row.tflops = tflops;
    row.runs = 30;
    row.median_ms = 1000.0 / (tflops > 0 ? tflops : 1);
    row.min_ms = row.median_ms;
    row.max_ms = row.median_ms;
    row.verdict = Verdict::pass;
    row.device = "GPU A";
    row.cache_mode = "warm";
    storage.push_back(row);
    return storage.back();
  }

  ResultRow& ceiling(const std::string& name, const std::string& dtype, double tflops,
                     std::optional<double> gbytes_per_s = std::nullopt) {
    ResultRow& row = add("peak:" + name, "", 0, tflops, dtype);
    row.problem.d_head = row.problem.batch = row.problem.heads = 0;
    row.gbytes_per_s = gbytes_per_s;
    return row;
  }

  RowSet set() const {
    std::vector<const ResultRow*> pointers;
    for (const ResultRow& row : storage)
      pointers.push_back(&row);
    return RowSet(pointers);
  }
};

}  // namespace

TEST_CASE("ceiling rows stay out of the progression's rows, N and dtypes") {
  Rows rows;
  rows.add("8", kConfig, 4096, 300);
  rows.ceiling("mma.sync", "fp16", 500);
  rows.ceiling("hbm.read", "", 0, 4000.0);
  const RowSet set = rows.set();
  CHECK(set.rows().size() == 1);
  CHECK(set.ceiling_rows().size() == 2);
  CHECK(set.dtypes() == std::vector<std::string>{"fp16"});
  CHECK(set.seq_lens("") == std::vector<int>{4096});
  const Progression progression = build_progression(set, {"fp16", std::nullopt, Baseline::fa2});
  CHECK(progression.seq_lens == std::vector<int>{4096});
  CHECK(progression.steps.size() == 1);

  // Ceilings hold for either cache mode: the filter's cache mode does not drop them.
  std::vector<ResultFile> files(1);
  files[0].rows.assign(rows.storage.begin(), rows.storage.end());
  for (ResultRow& row : files[0].rows)
    if (!row.is_ceiling()) row.cache_mode = "cold";
  CHECK(select_rows(files, {"", "warm"}).size() == 2);
  CHECK(select_rows(files, {"GPU B", ""}).empty());
}

TEST_CASE("ceilings: the best usable row per device, family and dtype") {
  Rows rows;
  rows.ceiling("mma.sync", "fp16", 480);
  rows.ceiling("mma.sync", "fp16", 500);
  rows.ceiling("mma.sync", "fp16", 900).verdict = Verdict::fail;  // a failed check is no ceiling
  rows.ceiling("wgmma", "fp16", 700).status = RowStatus::skipped("no sm_90a code");
  rows.ceiling("wgmma", "bf16", 710);
  rows.ceiling("hbm.read", "", 0, 4000.0);
  rows.ceiling("hbm.copy", "", 0, 3700.0);
  rows.ceiling("mma.sync", "fp16", 310).device = "GPU B";
  const Ceilings ceilings(rows.set().ceiling_rows());
  REQUIRE(ceilings.find("GPU A", InstructionFamily::mma_sync, "fp16"));
  CHECK(ceilings.find("GPU A", InstructionFamily::mma_sync, "fp16")->tflops == 500);
  CHECK(ceilings.find("GPU B", InstructionFamily::mma_sync, "fp16")->tflops == 310);
  CHECK_FALSE(ceilings.find("GPU A", InstructionFamily::wgmma, "fp16"));
  CHECK(ceilings.find("GPU A", InstructionFamily::wgmma, "bf16")->tflops == 710);
  CHECK(ceilings.highest("GPU A", "bf16")->family == InstructionFamily::wgmma);
  REQUIRE(ceilings.best_memory("GPU A"));
  CHECK(ceilings.best_memory("GPU A")->name == "hbm.read");
  CHECK_FALSE(ceilings.best_memory("GPU B"));
  CHECK(ceiling_step(InstructionFamily::wgmma) == "peak:wgmma");
}

TEST_CASE("ceilings: shared memory and ex2 are listed but are neither a roof nor a family") {
  Rows rows;
  rows.ceiling("mma.sync", "fp16", 500);
  rows.ceiling("hbm.read", "", 0, 3000.0);
  rows.ceiling("smem.read", "", 0, 30000.0);  // on-chip: ten times HBM, never the memory roof
  rows.ceiling("ex2.f32", "", 3.7);           // 10^12 ex2 per second in tflops, not FLOP
  const Ceilings ceilings(rows.set().ceiling_rows());
  REQUIRE(ceilings.best_memory("GPU A"));
  CHECK(ceilings.best_memory("GPU A")->name == "hbm.read");
  REQUIRE(ceilings.memory().size() == 2);
  CHECK(ceilings.memory()[1].name == "smem.read");
  REQUIRE(ceilings.compute().size() == 1);
  CHECK(ceilings.highest("GPU A", "fp16")->tflops == 500);
}

TEST_CASE("the softmax's share of the ex2 ceiling: one exponential per kept score") {
  Rows rows;
  rows.ceiling("ex2.f32", "", 4.0);    // 4·10^12 exponentials per second
  rows.ceiling("ex2.f16x2", "", 8.0);  // not what the steps' softmax issues
  // 512 TFLOP/s at d_head 128: 512e12 / (4·128) = 1e12 exponentials per second, 25 % of 4e12.
  ResultRow& step = rows.add("8", kConfig, 4096, 512);
  ResultRow& causal = rows.add("8", kConfig, 4096, 512);
  causal.problem.causal = true;  // half the FLOP and half the exponentials: the same share
  ResultRow& backward = rows.add("8", kConfig, 4096, 512);
  backward.problem.pass = Pass::backward;  // 2.5 times the FLOP for the same exponentials
  ResultRow& elsewhere = rows.add("8", kConfig, 4096, 512);
  elsewhere.device = "GPU B";  // no ceiling measured there
  const Ceilings ceilings(rows.set().ceiling_rows());
  REQUIRE(ceilings.rates().size() == 2);
  CHECK_FALSE(ceilings.empty());
  CHECK(*ex2_share_percent(ceilings, step, step.tflops) == doctest::Approx(25));
  CHECK(*ex2_share_percent(ceilings, causal, causal.tflops) == doctest::Approx(25));
  CHECK(*ex2_share_percent(ceilings, backward, backward.tflops) == doctest::Approx(10));
  CHECK(*ex2_share_percent(ceilings, step, 256) == doctest::Approx(12.5));  // a harmonic mean
  CHECK_FALSE(ex2_share_percent(ceilings, elsewhere, elsewhere.tflops));
  step.problem.d_head = 64;  // twice the exponentials per FLOP
  CHECK(*ex2_share_percent(ceilings, step, step.tflops) == doctest::Approx(50));
}

TEST_CASE("the shared-memory share: wavefronts of 128 bytes against the smem.read ceiling") {
  Rows rows;
  rows.ceiling("smem.read", "", 0, 25600.0);  // 25.6 TB/s: 200·10^9 wavefronts per second
  rows.ceiling("hbm.read", "", 0, 4000.0);    // not a shared-memory ceiling
  ResultRow& step = rows.add("21", kConfig, 4096, 500);
  step.median_ms = 2.0;
  // 100·10^9 wavefronts per second over 2 ms: half the ceiling.
  step.extra_metrics[kSharedWavefrontsMetric] = 100e9 * 2e-3;
  ResultRow& uncounted = rows.add("21", kConfig, 8192, 500);  // the run did not ask for it
  ResultRow& elsewhere = rows.add("21", kConfig, 4096, 500);
  elsewhere.device = "GPU B";  // no ceiling measured there
  elsewhere.extra_metrics[kSharedWavefrontsMetric] = 1e8;
  ResultRow& faulted = rows.add("21", kConfig, 4096, 500);
  faulted.extra_metrics[kSharedWavefrontsMetric] = 1e8;
  faulted.status = RowStatus::fault("timeout");
  const Ceilings ceilings(rows.set().ceiling_rows());
  CHECK(*smem_share_percent(ceilings, step) == doctest::Approx(50));
  CHECK_FALSE(smem_share_percent(ceilings, uncounted));
  CHECK_FALSE(smem_share_percent(ceilings, elsewhere));
  CHECK_FALSE(smem_share_percent(ceilings, faulted));
  step.median_ms = 1.0;  // the same work in half the time: twice the rate
  CHECK(*smem_share_percent(ceilings, step) == doctest::Approx(100));

  // A view of another run borrows the count from a row of the same kernel and problem kind.
  const RowSet set = rows.set();
  CHECK(smem_counted_row(ceilings, set.rows(), uncounted) == &step);
  ResultRow& other_dtype = rows.add("21", kConfig, 8192, 500, "bf16");
  CHECK(smem_counted_row(ceilings, rows.set().rows(), other_dtype) == nullptr);
  ResultRow& causal = rows.add("21", kConfig, 8192, 500);
  causal.problem.causal = true;
  CHECK(smem_counted_row(ceilings, rows.set().rows(), causal) == nullptr);
}

TEST_CASE("a row's share of its own family's ceiling") {
  Rows rows;
  rows.ceiling("mma.sync", "fp16", 400);
  rows.ceiling("wgmma", "fp16", 800);
  const ResultRow& step = rows.add("8", kConfig, 4096, 300);
  const ResultRow& fa2 = rows.add("fa2", "", 4096, 320);
  const ResultRow& cudnn = rows.add("cudnn", "", 4096, 560);
  const Ceilings ceilings(rows.set().ceiling_rows());

  const auto mma = share_of_ceiling(ceilings, step, InstructionFamily::mma_sync);
  REQUIRE(mma);
  CHECK(mma->percent == doctest::Approx(75));
  CHECK(share_of_ceiling(ceilings, step, InstructionFamily::wgmma)->percent ==
        doctest::Approx(37.5));
  CHECK_FALSE(share_of_ceiling(ceilings, step, std::nullopt));  // no SASS: no family, no share
  CHECK(share_of_ceiling(ceilings, fa2, std::nullopt)->ceiling->family ==
        InstructionFamily::mma_sync);
  CHECK(share_of_ceiling(ceilings, cudnn, std::nullopt)->percent == doctest::Approx(70));
}

TEST_CASE("roofline: intensity from the DRAM metrics, roofs of the rows' device and dtype") {
  Rows rows;
  rows.ceiling("mma.sync", "fp16", 400);
  rows.ceiling("wgmma", "fp16", 800);
  rows.ceiling("wgmma", "bf16", 790);
  rows.ceiling("hbm.copy", "", 0, 3000.0);
  ResultRow& measured = rows.add("8", kConfig, 4096, 300);
  const double flops = matmul_flops(16, 16, 4096, 128);
  measured.extra_metrics[kDramReadMetric] = flops / 1000 * 0.75;  // 1000 FLOP per byte in all
  measured.extra_metrics[kDramWriteMetric] = flops / 1000 * 0.25;
  rows.add("9", kConfig, 4096, 310);  // profiled without the DRAM metrics
  const RowSet set = rows.set();
  const Progression progression = build_progression(set, {"fp16", 4096, Baseline::fa2});
  // The roofline points into the ceilings: they must outlive it.
  const Ceilings ceilings(set.ceiling_rows());
  const Roofline roofline = build_roofline(progression, ceilings, "fp16");
  REQUIRE(roofline.points.size() == 1);
  CHECK(roofline.points[0].subject.text() == "8");
  CHECK(roofline.points[0].intensity == doctest::Approx(1000));
  CHECK(roofline.points[0].tflops == 300);
  CHECK(roofline.rows_without_dram == 1);
  REQUIRE(roofline.compute_roofs.size() == 2);
  CHECK(roofline.compute_roofs[0]->tflops == 800);  // highest first
  REQUIRE(roofline.memory_roof);
  CHECK(roofline.memory_roof->gbytes_per_s == 3000);
  CHECK(attainable_tflops(800, 3000, 100) == doctest::Approx(300));   // memory-bound
  CHECK(attainable_tflops(800, 3000, 1000) == doctest::Approx(800));  // compute-bound
  CHECK_FALSE(arithmetic_intensity(*progression.find_step(9)->rows.front()));
}

TEST_CASE("roofline over the rows with DRAM counts: a faster run without them hides nothing") {
  Rows rows;
  rows.ceiling("mma.sync", "fp16", 400);
  const double flops = matmul_flops(16, 16, 4096, 128);
  ResultRow& profiled = rows.add("8", kConfig, 4096, 300);  // the run that collected DRAM bytes
  profiled.extra_metrics[kDramReadMetric] = flops / 2000;
  profiled.extra_metrics[kDramWriteMetric] = flops / 2000;
  rows.add("8", kConfig, 4096, 320);  // another run, faster, without the counters
  rows.add("9", kConfig, 4096, 330);  // a step no run profiled
  const RowSet all = rows.set();
  const ProgressionQuery query{"fp16", 4096, Baseline::fa2};
  const Progression everything = build_progression(all, query);
  const Ceilings ceilings(all.ceiling_rows());
  // Over every row, step 8's fastest row has no counters and the step would vanish.
  CHECK(build_roofline(everything, ceilings, "fp16").points.empty());

  const RowSet dram_rows = rows_with_dram(all);
  CHECK(dram_rows.rows().size() == 1);
  CHECK(dram_rows.ceiling_rows().size() == 1);
  const Progression placed_progression = build_progression(dram_rows, query);
  const Roofline roofline = build_roofline(placed_progression, ceilings, "fp16");
  REQUIRE(roofline.points.size() == 1);
  CHECK(roofline.points[0].tflops == 300);
  CHECK(roofline.points[0].intensity == doctest::Approx(1000));
  CHECK(roofline.compute_roofs.size() == 1);
  CHECK(steps_not_placed(everything, roofline) == std::vector<RowSubject>{RowSubject::kernel(9)});
}
