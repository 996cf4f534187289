// common/sigpipe.hpp — writes to a peer that has gone must fail with EPIPE, not kill the process
// with SIGPIPE (private). A library may not ignore the signal process-wide, so a thread that
// writes to sockets or pipes blocks it for the scope of the writes and drops any it caused.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace gpupool {

class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old_);
  }
  ~SigpipeBlock() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    const timespec zero{0, 0};
    while (sigtimedwait(&s, nullptr, &zero) > 0) {}
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_;
};

}  // namespace gpupool
