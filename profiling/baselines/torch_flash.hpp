// FlashAttention-2 forward as built into PyTorch (its flash SDPA backend), called from C++ on our
// device buffers. Only present when CMake found Torch (FLASHSCOPE_HAVE_TORCH_FA2).
#pragma once

#include <memory>
#include <string_view>

#include "profiling/baselines/baseline_attention.hpp"

namespace flashscope {

// How the kernel is reached. Both run the same FA2 kernel on the same [b, N, h, d] memory.
enum class TorchFlashEntry {
  // pytorch_flash::mha_fwd, the C++ function behind the flash SDPA backend: it takes our layout
  // natively and an output tensor, so it writes O in place and only the kernel is timed.
  in_place,
  // at::_scaled_dot_product_flash_attention, the public op: it has no out= form, so its output
  // is copied into O, one extra read and write of O inside the timed region.
  sdpa_op,
  // in_place where this libtorch exports it, sdpa_op otherwise.
  automatic,
};

std::string_view torch_flash_entry_name(TorchFlashEntry entry);

// The "fa2" baseline. Needs no GPU until prepare(); a requested entry this libtorch lacks makes
// prepare() throw BaselineUnavailable.
std::unique_ptr<BaselineAttention> make_torch_flash_baseline(
    TorchFlashEntry entry = TorchFlashEntry::automatic);

}  // namespace flashscope
