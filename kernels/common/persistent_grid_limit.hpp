// A cap on the multiprocessors a persistent kernel's grid is sized for. The tile scheduler's
// `scheduling::current_device_sm_count()` (tile_scheduler.hpp), which every persistent step's
// launcher sizes its grid by, reports the smaller of the device's count and this cap.
//
// `explorer check --persistent-ctas` sets it so that a small problem runs several tiles on each
// CTA: a CTA's later tiles reuse its barrier rings, their phases and its shared memory, and
// compute-sanitizer sees those paths only then, at shapes it can afford. It lives in a header of
// its own so that the kernels, which include tile_scheduler.hpp, do not depend on it.
#pragma once

namespace flashscope::scheduling {

// 0: no cap. Throws std::invalid_argument for a negative count. Set before the first launch;
// the timing paths (sweeps, forward_timed) never set it.
void limit_persistent_sms(int sms);
// The cap, 0 when there is none.
int persistent_sm_limit();

}  // namespace flashscope::scheduling
