#include "repl/repl_loop.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "bindings/lua/ltutti.h"
#include "launcher/rank_list.h"
#include "repl/control_channel.h"
#include "repl/interrupt.h"
#include "repl/job.h"
#include "repl/line_reader.h"
#include "repl/lua_chunk.h"
#include "repl/lua_host.h"
#include "repl/output_capture.h"
#include "repl/rank_output.h"

namespace tutti::repl {
namespace {

// The control communicator waits for the next line as long as a person may leave a
// prompt alone; a lost rank still ends its waits at once (heartbeats).
constexpr int64_t kControlTimeoutMs = 7LL * 24 * 3600 * 1000;
// The user's communicator: a collective that one rank skipped fails this soon, with
// the runtime's message naming the missing ranks, instead of freezing the prompt.
constexpr int64_t kUserTimeoutMs = 10000;

// The statuses after which the user's communicator may be out of step between ranks:
// an operation that ran on some ranks and not on others.
constexpr tutti_status kBreakingStatuses[] = {TUTTI_ERR_TIMEOUT,   TUTTI_ERR_MISMATCH,  TUTTI_ERR_ABORTED,
                                              TUTTI_ERR_PEER_LOST, TUTTI_ERR_TRANSPORT, TUTTI_ERR_INTERNAL};

// The Lua module's errors for failed calls start with the status's name.
bool names_a_breaking_status(const std::string& error) {
  for (tutti_status status : kBreakingStatuses) {
    if (error.find(tutti_status_name(status)) != std::string::npos) return true;
  }
  return false;
}

bool declares_a_local(const std::string& chunk) {
  size_t start = chunk.find_first_not_of(" \t\n");
  return start != std::string::npos && chunk.compare(start, 5, "local") == 0 &&
         (start + 5 == chunk.size() || std::strchr(" \t\n", chunk[start + 5]) != nullptr);
}

class Session {
 public:
  Session(lua_State* L, tutti_comm* control, int64_t user_timeout_ms);
  ~Session();
  void run();

 private:
  enum class Input { kChunk, kAgain, kEnd };
  // Rank 0: the next chunk that compiles, or nullopt at the end of input.
  std::optional<std::string> read_chunk();
  // One try, as lua.c's loadline: a line, then more while the chunk is incomplete.
  // kAgain after a Ctrl-C or a syntax error (shown here).
  Input read_one_chunk(std::string* chunk);
  Report execute(const std::string& chunk);
  void replace_user_comm();

  lua_State* L_;
  tutti_comm* control_;
  tutti_comm* user_ = nullptr;
  int64_t user_timeout_ms_;
  int32_t rank_ = 0;
  int32_t size_ = 1;
  ControlChannel channel_;
  Interrupts interrupts_;
  OutputCapture capture_;
  std::unique_ptr<LineReader> reader_;  // rank 0 only
  bool warned_about_locals_ = false;
  bool interrupted_ = false;  // the last statement, here
};

Session::Session(lua_State* L, tutti_comm* control, int64_t user_timeout_ms)
    : L_(L), control_(control), user_timeout_ms_(user_timeout_ms), channel_(control), interrupts_(L) {
  tutti_comm_rank(control, &rank_);
  tutti_comm_size(control, &size_);
  if (rank_ == 0) reader_ = std::make_unique<LineReader>(interrupts_.reading_fd());
  tutti::lua::set_show_sink(L, OutputCapture::show_sink, &capture_);
  replace_user_comm();
}

Session::~Session() {
  interrupts_.abort_on_interrupt(nullptr);
  tutti::lua::destroy_world(L_);
}

// The user's tutti.world is split from the control communicator, and made again after
// any statement that left it out of step between ranks.
void Session::replace_user_comm() {
  interrupts_.abort_on_interrupt(nullptr);
  // Lua destroys it, once no tensor from tutti.mem_alloc maps its memory.
  tutti::lua::destroy_world(L_);
  user_ = nullptr;
  tutti_status status = tutti_comm_split(control_, 0, rank_, &user_);
  if (status == TUTTI_OK) status = tutti_comm_set_op_timeout(user_, user_timeout_ms_);
  if (status != TUTTI_OK) {
    throw ControlError(std::string("cannot make the user's communicator: ") + tutti_status_name(status) + ": " +
                       tutti_last_error());
  }
  tutti::lua::use_world(L_, user_);
  interrupts_.abort_on_interrupt(user_);
}

std::optional<std::string> Session::read_chunk() {
  std::string chunk;
  Input input;
  do {
    // Forgets a Ctrl-C that came while no line was being read.
    interrupts_.begin_reading();
    input = read_one_chunk(&chunk);
  } while (input == Input::kAgain);
  interrupts_.end_reading();
  if (input == Input::kEnd) return std::nullopt;
  return chunk;
}

Session::Input Session::read_one_chunk(std::string* chunk) {
  std::string line;
  LineReader::Result result = reader_->read("> ", &line);
  if (result != LineReader::Result::kLine) return result == LineReader::Result::kEnd ? Input::kEnd : Input::kAgain;
  // As lua.c does: an expression first, so that `1 + 1` shows its value.
  *chunk = "return " + line + ";";
  int status = luaL_loadbuffer(L_, chunk->data(), chunk->size(), "=stdin");
  lua_pop(L_, 1);
  if (status == LUA_OK) {
    reader_->remember(line);
    return Input::kChunk;
  }
  *chunk = line;
  while (is_incomplete(L_, status = luaL_loadbuffer(L_, chunk->data(), chunk->size(), "=stdin"))) {
    lua_pop(L_, 1);
    result = reader_->read(">> ", &line);
    if (result == LineReader::Result::kCancelled) return Input::kAgain;
    if (result == LineReader::Result::kEnd) {
      // lua.c says what the unfinished chunk lacks, then leaves.
      luaL_loadbuffer(L_, chunk->data(), chunk->size(), "=stdin");
      std::printf("%s\n", pop_error(L_).c_str());
      return Input::kEnd;
    }
    *chunk += "\n" + line;
  }
  reader_->remember(*chunk);
  if (status == LUA_OK) {
    lua_pop(L_, 1);
    return Input::kChunk;
  }
  std::printf("%s\n", pop_error(L_).c_str());
  return Input::kAgain;
}

Report Session::execute(const std::string& chunk) {
  Report report;
  lua_settop(L_, 0);
  capture_.begin();
  interrupts_.begin_statement();
  int status = luaL_loadbuffer(L_, chunk.data(), chunk.size(), "=stdin");
  if (status == LUA_OK) status = call_with_traceback(L_, 0, LUA_MULTRET);
  if (status == LUA_OK) status = print_results(L_);
  interrupted_ = interrupts_.end_statement();
  std::string error = status == LUA_OK ? std::string() : pop_error(L_);
  // A bad argument says where it was, on the line typed: its traceback adds nothing.
  if (error.find("bad argument #") != std::string::npos) error = error.substr(0, error.find("\nstack traceback:"));
  report.output = capture_.end();
  report.pictures = std::move(capture_.pictures());
  lua_settop(L_, 0);
  if (!error.empty()) report.output += error + "\n";
  report.comm_failed = interrupted_ || names_a_breaking_status(error);
  // A statement that failed here may have left the other ranks waiting in a collective
  // this rank never reached: ending this rank's world fails their wait at once
  // (PEER_LOST, naming this rank) rather than at the op timeout. Every rank then gets a
  // fresh world.
  if (!error.empty() && !report.comm_failed) {
    interrupts_.abort_on_interrupt(nullptr);
    tutti_comm_abort(user_);
    report.world_ended = true;
  }
  return report;
}

void Session::run() {
  if (rank_ == 0 && reader_->interactive()) {
    std::printf("tutti %s, Lua REPL on %d rank%s: each line runs on every rank. Ctrl-C interrupts, Ctrl-D leaves.\n",
                tutti_version_string(), size_, size_ == 1 ? "" : "s");
  }
  for (;;) {
    std::optional<std::string> chunk = channel_.share_chunk(rank_ == 0 ? read_chunk() : std::nullopt);
    if (!chunk) return;
    if (rank_ == 0 && !warned_about_locals_ && declares_a_local(*chunk)) {
      warned_about_locals_ = true;
      std::printf(
          "(a local lives only until the end of its chunk; leave out `local` to keep the variable for the "
          "next lines)\n");
    }
    ControlChannel::Gathered gathered = channel_.gather(execute(*chunk));
    if (rank_ == 0) {
      // The terminal echoed ^C where the cursor was.
      if (interrupted_ && reader_->interactive()) std::fputs("\n", stdout);
      std::fputs(group_by_rank(gathered.outputs).c_str(), stdout);
      std::fputs(pictures_side_by_side(gathered.pictures).c_str(), stdout);
    }
    if (!gathered.comm_failed.empty() || !gathered.world_ended.empty()) replace_user_comm();
    if (!gathered.comm_failed.empty()) {
      if (rank_ == 0) {
        std::printf("(tutti.world failed or was interrupted on %s; every rank has a fresh one now)\n",
                    launcher::format_ranks(gathered.comm_failed).c_str());
      }
    }
    std::fflush(stdout);
  }
}

// TUTTI_OP_TIMEOUT_MS when set (tutti_comm_init has checked it by now), else 10 s.
int64_t user_timeout_ms() {
  const char* value = std::getenv("TUTTI_OP_TIMEOUT_MS");
  return value != nullptr && *value != '\0' ? std::strtoll(value, nullptr, 10) : kUserTimeoutMs;
}

}  // namespace

int run_repl() {
  // Unless the user chose otherwise: every collective checks that all ranks called it
  // alike (a tensor of another shape on one rank is a MISMATCH naming the ranks), and
  // only errors are logged, since each failure comes back as the statement's error.
  setenv("TUTTI_CHECK", "1", 0);
  setenv("TUTTI_LOG_LEVEL", "error", 0);
  lua_State* L = new_lua_state();
  if (L == nullptr) {
    std::fputs("tutti: cannot create a Lua state: not enough memory\n", stderr);
    return 1;
  }
  tutti_comm* control = join_job("repl");
  if (control == nullptr) {
    lua_close(L);
    return 1;
  }
  int code = 0;
  try {
    tutti_comm_set_op_timeout(control, kControlTimeoutMs);
    Session session(L, control, user_timeout_ms());
    session.run();
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "tutti: %s\n", error.what());
    code = 1;
  }
  lua_close(L);
  tutti_comm_destroy(control);
  return code;
}

}  // namespace tutti::repl
