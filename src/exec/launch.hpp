// exec/launch: spawning local worker processes (fork + exec with torchrun-style environment) and supervising
// them: reap every child, and when one fails give the others the grace period to notice and exit on their own,
// then SIGKILL the rest — no zombie or orphan is left. Internal to src/exec; no torch here.
#pragma once
#include <string>
#include <vector>

namespace strata::exec::detail {

// The running binary (/proc/self/exe).
std::string self_exe();
// A fresh private directory under $TMPDIR (or /tmp); removed by TempDir's destructor.
struct TempDir {
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};
// A TCP port that was free on 127.0.0.1 a moment ago (the kernel's ephemeral choice).
int free_local_port();

// Starts `world` processes `exe args...` with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT
// and STRATA_EXEC_LOOPBACK=1 set, waits for all of them and returns normally only when every one exited with
// status 0. Otherwise throws ExecError with one line per failing rank ("rank 1 was killed by signal 9 ...").
// `grace_s`: after the first failure, how long the others get to exit before they are killed.
void spawn_and_wait(const std::string& exe, const std::vector<std::string>& args, int world, double grace_s,
                    const std::string& what);

}  // namespace strata::exec::detail
