/* One `tutti launch` job for the multi-process tests: the launcher's command line and
 * extra environment built up with printf-style helpers, run to its end with a bound,
 * and its tagged output searched rank by rank. All strings live inside the struct. */
#ifndef TUTTI_TESTS_SUPPORT_LAUNCH_JOB_H
#define TUTTI_TESTS_SUPPORT_LAUNCH_JOB_H

#include <stddef.h>

#include "tests/support/processes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_JOB_MAX_ARGS 40
#define TT_JOB_MAX_VARS 12

typedef struct tt_job {
  char* argv[TT_JOB_MAX_ARGS + 1];
  char* env[TT_JOB_MAX_VARS + 1];
  char text[TT_JOB_MAX_ARGS + TT_JOB_MAX_VARS][256];
  int used;
  int ranks;
  tt_process process;
  int ended;         /* the launcher ended within the bound given to tt_job_run */
  long long took_ms; /* how long it ran */
  char* output;      /* everything it printed, after tt_job_run; freed by tt_job_cleanup */
} tt_job;

/* `tutti launch -n RANKS --timeout TIMEOUT_S -- PROGRAM`; add the program's arguments
 * with tt_job_arg. PROGRAM is a path under the build's tests/programs/ when it has no
 * '/'. */
void tt_job_init(tt_job* job, int ranks, int timeout_s, const char* program);
/* Adds an option for the launcher itself (such as "--keep-going"), before the "--". */
void tt_job_launcher_option(tt_job* job, const char* option);
/* Runs the ranks on `nodes` emulated nodes (tutti launch --nodes); 0 leaves them on one. */
void tt_job_nodes(tt_job* job, int nodes);
/* Appends a printf-formatted argument for the program. */
__attribute__((format(printf, 2, 3))) void tt_job_arg(tt_job* job, const char* format, ...);
/* Appends a printf-formatted "NAME=value" to the launcher's (and so the ranks')
 * environment. */
__attribute__((format(printf, 2, 3))) void tt_job_env(tt_job* job, const char* format, ...);
/* Starts the launcher and waits at most bound_ms (scaled by tt_timeout_ms) for it to
 * end; kills it past that. Fills ended, took_ms and output. Returns ended. */
int tt_job_run(tt_job* job, int bound_ms);
/* The command line as one string, for messages (a static buffer). */
const char* tt_job_command(const tt_job* job);
/* Kills the launcher if it still runs, removes its output file and frees the output;
 * the job may then be initialised again. A zeroed job is fine to clean up. */
void tt_job_cleanup(tt_job* job);

/* How many times needle occurs in text. */
int tt_count(const char* text, const char* needle);
/* How many lines of text match the POSIX extended regular expression pattern; aborts
 * on a pattern that does not compile. For lines carrying a measured time, which a busy
 * machine moves (a report due at 1 s may say "1.1 s"). */
int tt_count_lines_matching(const char* text, const char* pattern);
/* Copies into out the HOST:PORT of the store tutti launch serves, from its line
 * "tutti launch: rendezvous store on HOST:PORT; ...". Returns 1 if found. */
int tt_launcher_store(const char* output, char* out, size_t out_size);
/* Copies into out the rest of rank's first output line that starts with "[RANK] " +
 * prefix (the text after the prefix, without the newline). Returns 1 if found. */
int tt_rank_line(const char* output, int rank, const char* prefix, char* out, size_t out_size);
/* A short excerpt of output for assertion messages: every line containing one of the
 * needles (NULL-terminated list; at most 40 lines), the first crash report (a
 * sanitizer's, std::terminate's or glibc's, up to 5000 characters) if there is one,
 * then the last 3000 characters. In a static buffer. */
const char* tt_excerpt(const char* output, const char* const* needles);

#ifdef __cplusplus
}
#endif

#endif
