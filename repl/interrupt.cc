#include "repl/interrupt.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

namespace tutti::repl {
namespace {

enum Phase : int { kIdle, kReading, kRunning };

// What the handler may touch: atomics, the Lua state's hook, and pipe writes. A
// handler runs on whichever thread the kernel picks; only the main thread may set the
// hook of the state it is running, so the others pass the signal on to it.
std::atomic<int> phase{kIdle};
std::atomic<bool> interrupted{false};
std::atomic<unsigned> aborts_asked{0};
lua_State* state = nullptr;
pid_t main_tid = 0;
pthread_t main_thread;
int reading_pipe[2] = {-1, -1};
int watcher_pipe[2] = {-1, -1};

// The watcher's side.
std::mutex mutex;
std::condition_variable aborts_done_changed;
unsigned aborts_done = 0;            // guarded by mutex
tutti_comm* abort_target = nullptr;  // guarded by mutex
// Not a static std::thread: one still running when user code calls os.exit (exit(3),
// which runs static destructors) would end the process in std::terminate.
std::thread* watcher = nullptr;

constexpr char kAbort = 'a';
constexpr char kQuit = 'q';
// How long after its SIGINT a rank aborts its communicator. The terminal's SIGINT
// reaches rank 0 first and the other ranks through the launcher a moment later (on a
// busy machine, milliseconds later); a rank's abort fails its peers' collective
// (TUTTI_ERR_PEER_LOST), and a peer whose own SIGINT has not come yet then reports
// that instead of "interrupted!". Aborting this much later lets every rank's SIGINT
// arrive first, so that every interrupted rank stops the same way.
constexpr auto kAbortDelay = std::chrono::milliseconds(200);

// lua.c's lstop: stop at the next call, return, line or instruction.
void stop_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted!");
}

void on_sigint(int) {
  int saved_errno = errno;
  if (static_cast<pid_t>(syscall(SYS_gettid)) != main_tid) {
    pthread_kill(main_thread, SIGINT);
  } else if (phase.load() == kReading) {
    ssize_t ignored = write(reading_pipe[1], "c", 1);
    (void)ignored;
  } else if (phase.load() == kRunning) {
    if (interrupted.exchange(true)) {
      signal(SIGINT, SIG_DFL);  // the second: the default action once this handler returns
      raise(SIGINT);
    } else {
      lua_sethook(state, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
      aborts_asked.fetch_add(1);
      ssize_t ignored = write(watcher_pipe[1], &kAbort, 1);
      (void)ignored;
    }
  }
  errno = saved_errno;
}

void watch() {
  char byte = 0;
  for (;;) {
    ssize_t n = read(watcher_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kQuit) return;
    std::this_thread::sleep_for(kAbortDelay);
    std::lock_guard<std::mutex> lock(mutex);
    if (abort_target != nullptr) tutti_comm_abort(abort_target);
    ++aborts_done;
    aborts_done_changed.notify_all();
  }
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
}

}  // namespace

Interrupts::Interrupts(lua_State* L) {
  state = L;
  main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  main_thread = pthread_self();
  make_pipe(reading_pipe);
  make_pipe(watcher_pipe);
  fcntl(reading_pipe[0], F_SETFL, O_NONBLOCK);
  // The watcher must never take SIGINT itself: it is created with it blocked.
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &previous);
  watcher = new std::thread(watch);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  struct sigaction action = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
}

Interrupts::~Interrupts() {
  signal(SIGINT, SIG_DFL);
  ssize_t ignored = write(watcher_pipe[1], &kQuit, 1);
  (void)ignored;
  watcher->join();
  delete watcher;
  watcher = nullptr;
  for (int* fd : {&reading_pipe[0], &reading_pipe[1], &watcher_pipe[0], &watcher_pipe[1]}) {
    close(*fd);
    *fd = -1;
  }
  state = nullptr;
}

void Interrupts::abort_on_interrupt(tutti_comm* comm) {
  std::lock_guard<std::mutex> lock(mutex);
  abort_target = comm;
}

void Interrupts::begin_reading() {
  char drained[64];
  while (read(reading_pipe[0], drained, sizeof drained) > 0) {
  }
  phase.store(kReading);
}

void Interrupts::end_reading() { phase.store(kIdle); }

int Interrupts::reading_fd() const { return reading_pipe[0]; }

void Interrupts::begin_statement() {
  interrupted.store(false);
  phase.store(kRunning);
}

bool Interrupts::end_statement() {
  phase.store(kIdle);
  // A hook set just as the statement ended would otherwise stop the next one.
  lua_sethook(state, nullptr, 0, 0);
  unsigned asked = aborts_asked.load();
  std::unique_lock<std::mutex> lock(mutex);
  // tutti_comm_abort returns within 1 s; the bound only guards against a stuck watcher.
  aborts_done_changed.wait_for(lock, std::chrono::seconds(5), [asked] { return aborts_done >= asked; });
  return interrupted.load();
}

}  // namespace tutti::repl
