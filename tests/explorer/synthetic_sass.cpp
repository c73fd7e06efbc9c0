#include "tests/explorer/synthetic_sass.hpp"

#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/sass/sass_artifact.hpp"
#include "explorer/sass/sass_listing.hpp"

namespace flashscope::testing {

namespace {

using sass::SassFunction;
using sass::SassInstruction;

class ListingBuilder {
 public:
  explicit ListingBuilder(SassFunction& function) : function_(function) {}

  void add(const std::string& mnemonic, const std::string& operands,
           const std::string& predicate = "") {
    SassInstruction instruction;
    instruction.address = next_address();
    instruction.mnemonic = mnemonic;
    instruction.operands = operands;
    instruction.predicate = predicate;
    function_.instructions.push_back(std::move(instruction));
  }

  void branch_to(std::uint32_t target, const std::string& predicate) {
    char operand[16];
    std::snprintf(operand, sizeof operand, "0x%x", target);
    add("BRA", operand, predicate);
    function_.instructions.back().branch_target = target;
  }

  std::uint32_t next_address() const {
    return static_cast<std::uint32_t>(function_.instructions.size() * 16);
  }

  std::string reg(int n) const { return "R" + std::to_string(n % 254 + 1); }

 private:
  SassFunction& function_;
};

// Integer work per KV block: the swizzle arithmetic steps 1-7 repeat per access and step 8 hoists.
struct Mix {
  int iadd3, lop3, shf, mov, cs2r, imad;
};

Mix mix_of(int step) {
  Mix mix{60, 90, 40, 60, 64, 150};
  if (step >= 8) mix = {40, 45, 20, 60, 64, 120};
  if (step >= 9) mix.mov = 10;
  if (step >= 10) mix.cs2r = 0;
  if (step >= 11) mix.imad = 40;
  return mix;
}

// A Hopper-track kernel: TMA loads on mbarriers and wgmma instead of LDGSTS, LDSM and HMMA.
SassFunction synthetic_hopper_function(const KernelConfig& config, const std::string& name) {
  SassFunction function;
  function.arch = "sm_90a";
  function.name = name;
  ListingBuilder out(function);
  out.add("LDC", "R1, c[0x0][0x28]");
  out.add("S2R", "R0, SR_TID.X");
  out.add("SYNCS.EXCH.64", "URZ, [UR8], UR4");
  for (int stage = 0; stage < config.stages; ++stage)
    out.add("UTMALDG.4D", "[UR" + std::to_string(16 + stage) + "], [UR6]");
  const std::uint32_t head = out.next_address();
  out.add("SYNCS.PHASECHK.TRANS64.TRYWAIT", "P0, [UR8], R2");
  out.add("WARPGROUP.ARRIVE", "");
  for (int k = 0; k < config.d_head / 16; ++k)
    out.add("HGMMA.64x128x16.F32", "R24, gdesc[UR12], R24, gsb0");
  out.add("WARPGROUP.DEPBAR.LE", "gsb0, 0x0");
  for (int i = 0; i < 32; ++i)
    out.add("MUFU.EX2", out.reg(60 + i) + ", " + out.reg(60 + i));
  for (int k = 0; k < config.B_c / 16; ++k)
    out.add("HGMMA.64x128x16.F32", "R88, " + out.reg(60 + k) + ", gdesc[UR14], R88, gsb0");
  out.add("SYNCS.ARRIVE.TRANS64.RED.A1T0", "RZ, [UR8], RZ");
  out.add("ISETP.NE.AND", "P1, PT, " + out.reg(2) + ", c[0x0][0x214], PT");
  out.branch_to(head, "@P1");
  out.add("UTMASTG.4D", "[UR6], [UR20]");
  out.add("EXIT", "");
  const std::uint32_t self = out.next_address();
  out.branch_to(self, "");
  while (function.instructions.size() % 8 != 0)
    out.add("NOP", "");
  return function;
}

SassFunction synthetic_function(int step, const KernelConfig& config, const std::string& arch,
                                const std::string& name) {
  SassFunction function;
  function.arch = arch;
  function.name = name;
  ListingBuilder out(function);
  const Mix mix = mix_of(step);
  const int rows = config.B_r / config.n_warps;
  const int hmma = (rows / 16) * (config.B_c / 8) * (config.d_head / 16) +
                   (rows / 16) * (config.d_head / 8) * (config.B_c / 16);
  const int ldsm = hmma / 4 + 8;
  const bool hopper = arch == "sm_90a";

  out.add(hopper ? "LDC" : "IMAD.MOV.U32",
          hopper ? "R1, c[0x0][0x28]" : "R1, RZ, RZ, c[0x0][0x28]");
  out.add("S2R", "R0, SR_TID.X");
  out.add("S2R", "R2, SR_CTAID.X");
  out.add("ULDC.64", "UR4, c[0x0][0x118]");
  for (int i = 0; i < mix.cs2r; ++i)
    out.add("CS2R", out.reg(24 + 2 * i) + ", SRZ");
  for (int i = 0; i < mix.mov; ++i)
    out.add("MOV", out.reg(100 + i) + ", " + out.reg(40 + i));
  for (int i = 0; i < 8; ++i)
    out.add("LDGSTS.E.BYPASS.LTC128B.128", "[" + out.reg(3 + i) + "+0x" + std::to_string(i * 4) +
                                               "00], desc[UR4][" + out.reg(10 + i) + ".64]");
  out.add("LDGDEPBAR", "");

  // The KV loop, twice from step 10 (the peeled first block); only the second is a loop.
  const int bodies = step >= 10 ? 2 : 1;
  for (int body = 0; body < bodies; ++body) {
    const std::uint32_t head = out.next_address();
    out.add("DEPBAR.LE", "SB0, 0x0");
    out.add("BAR.SYNC.DEFER_BLOCKING", "0x0");
    for (int i = 0; i < hmma; ++i) {
      if (i % 4 == 0 && i / 4 < ldsm)
        out.add("LDSM.16.M88.4",
                out.reg(8 + i % 16) + ", [" + out.reg(3) + "+0x" + std::to_string(100 + i) + "]");
      out.add(config.dtype == DType::FP16 ? "HMMA.16816.F32" : "HMMA.16816.F32.BF16",
              out.reg(24 + 4 * (i % 16)) + ", " + out.reg(8 + i % 16) + ", " + out.reg(12) + ", " +
                  out.reg(24 + 4 * (i % 16)));
      if (i % 8 == 0)
        out.add("FMNMX", out.reg(90) + ", " + out.reg(24 + i % 32) + ", " + out.reg(90) + ", !PT");
    }
    for (int i = 0; i < 16; ++i)
      out.add("MUFU.EX2", out.reg(60 + i) + ", " + out.reg(60 + i));
    for (int i = 0; i < mix.iadd3; ++i)
      out.add("IADD3", out.reg(150 + i) + ", " + out.reg(150 + i) + ", 0x" +
                           std::to_string(16 * (i + 1)) + ", RZ");
    for (int i = 0; i < mix.lop3; ++i)
      out.add("LOP3.LUT", out.reg(170 + i) + ", " + out.reg(170 + i) + ", 0x38, RZ, 0xc0, !PT");
    for (int i = 0; i < mix.shf; ++i)
      out.add("SHF.L.U32", out.reg(200 + i) + ", " + out.reg(200 + i) + ", 0x3, RZ");
    for (int i = 0; i < mix.imad / 2; ++i)
      out.add("IMAD.SHL.U32", out.reg(220 + i) + ", " + out.reg(2) + ", 0x80, RZ");
    out.add("ISETP.NE.AND", "P0, PT, " + out.reg(2) + ", c[0x0][0x164], PT");
    if (body == bodies - 1) out.branch_to(head, "@P0");
  }
  for (int i = 0; i < mix.imad / 2; ++i)
    out.add("IMAD.WIDE", out.reg(6) + ", " + out.reg(2 + i) + ", 0x2, " + out.reg(4));
  for (int i = 0; i < 8; ++i)
    out.add("STG.E.128", "desc[UR4][" + out.reg(6) + ".64+0x" + std::to_string(i * 10) + "], " +
                             out.reg(24 + 4 * i));
  out.add("EXIT", "");
  const std::uint32_t self = out.next_address();
  out.branch_to(self, "");
  while (function.instructions.size() % 8 != 0)
    out.add("NOP", "");
  return function;
}

}  // namespace

void write_synthetic_sass(const std::filesystem::path& directory, int last_step) {
  std::filesystem::remove_all(directory);
  std::vector<sass::SassKernelRecord> records;
  for (int step = 1; step <= last_step; ++step) {
    for (const DType dtype : {DType::FP16, DType::BF16}) {
      const KernelConfig config = configs::with_dtype(configs::headline_config(step), dtype);
      const std::string id =
          "s" + std::to_string(step) + "_" + std::string(dtype_lower_name(dtype));
      for (const std::string arch : {"sm_80", "sm_90a"}) {
        if (is_hopper_config(config) && arch != "sm_90a") continue;  // sm_90a-only, as built
        const std::string name = "_Z19synthetic_kernel_" + id;
        const SassFunction function = is_hopper_config(config)
                                          ? synthetic_hopper_function(config, name)
                                          : synthetic_function(step, config, arch, name);
        sass::SassKernelRecord record;
        record.step = step;
        record.config = config;
        record.arch = arch;
        record.function = name;
        record.registers = step < 8 ? 200 + step * 4 : 255;
        record.barriers = 1;
        record.spill_store_bytes = step >= 10 ? 96 : 0;
        record.spill_load_bytes = step >= 10 ? 100 : 0;
        record.stack_frame_bytes = step >= 10 ? 96 : 0;
        record.instructions = static_cast<int>(function.instructions.size());
        record.listing = "listings/" + id + "." + arch + std::string(sass::listing_extension());
        sass::write_text_file(directory / record.listing, sass::write_sass_listing(function));
        records.push_back(std::move(record));
      }
    }
  }
  sass::write_text_file(directory / "kernels.tsv", sass::format_kernel_index(records));
  sass::write_text_file(
      directory / "manifest.txt",
      sass::format_manifest({{"commit", "synthetic"},
                             {"disassembler", "synthetic test data (not a disassembly)"},
                             {"architectures", "80-real,90a-real"},
                             {"nvcc", "synthetic"}}));
}

}  // namespace flashscope::testing
