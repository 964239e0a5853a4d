#define _GNU_SOURCE
#include "tests/support/launch_job.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TUTTI_TEST_LAUNCHER
#error "TUTTI_TEST_LAUNCHER (the tutti binary) must be defined by tests/support/CMakeLists.txt"
#endif

static char* keep(tt_job* job, const char* format, va_list args) {
  if (job->used >= TT_JOB_MAX_ARGS + TT_JOB_MAX_VARS) {
    fprintf(stderr, "tt_job: more than %d arguments and variables; raise TT_JOB_MAX_*\n",
            TT_JOB_MAX_ARGS + TT_JOB_MAX_VARS);
    abort();
  }
  char* slot = job->text[job->used++];
  int length = vsnprintf(slot, sizeof job->text[0], format, args);
  if (length >= (int)sizeof job->text[0]) {
    fprintf(stderr, "tt_job: \"%s...\" is longer than %zu characters\n", slot, sizeof job->text[0] - 1);
    abort();
  }
  return slot;
}

static void append(char** list, int max, char* item) {
  int n = 0;
  while (list[n]) ++n;
  if (n >= max) {
    fprintf(stderr, "tt_job: more than %d entries; raise TT_JOB_MAX_*\n", max);
    abort();
  }
  list[n] = item;
}

static void add_arg(tt_job* job, const char* format, ...) {
  va_list args;
  va_start(args, format);
  append(job->argv, TT_JOB_MAX_ARGS, keep(job, format, args));
  va_end(args);
}

void tt_job_init(tt_job* job, int ranks, int timeout_s, const char* program) {
  memset(job, 0, sizeof *job);
  job->ranks = ranks;
  add_arg(job, "%s", TUTTI_TEST_LAUNCHER);
  add_arg(job, "launch");
  add_arg(job, "-n");
  add_arg(job, "%d", ranks);
  add_arg(job, "--timeout");
  add_arg(job, "%d", timeout_s);
  add_arg(job, "--");
  if (strchr(program, '/') == NULL) {
    add_arg(job, "%s/tests/programs/%s", TUTTI_TEST_BINARY_DIR, program);
  } else {
    add_arg(job, "%s", program);
  }
}

void tt_job_launcher_option(tt_job* job, const char* option) {
  int n = 0;
  while (job->argv[n]) ++n;
  int separator = 0;
  while (separator < n && strcmp(job->argv[separator], "--") != 0) ++separator;
  add_arg(job, "%s", option); /* appended, then moved in front of the "--" */
  char* added = job->argv[n];
  memmove(&job->argv[separator + 1], &job->argv[separator], (size_t)(n - separator) * sizeof(char*));
  job->argv[separator] = added;
}

void tt_job_nodes(tt_job* job, int nodes) {
  if (nodes <= 0) return;
  char count[16];
  snprintf(count, sizeof count, "%d", nodes);
  tt_job_launcher_option(job, "--nodes");
  tt_job_launcher_option(job, count);
}

void tt_job_arg(tt_job* job, const char* format, ...) {
  va_list args;
  va_start(args, format);
  append(job->argv, TT_JOB_MAX_ARGS, keep(job, format, args));
  va_end(args);
}

void tt_job_env(tt_job* job, const char* format, ...) {
  va_list args;
  va_start(args, format);
  append(job->env, TT_JOB_MAX_VARS, keep(job, format, args));
  va_end(args);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tt_job_run(tt_job* job, int bound_ms) {
  long long started = now_ms();
  if (tt_spawn(&job->process, job->argv, job->env) != 0) {
    job->output = strdup("tt_job_run: cannot start the launcher");
    return 0;
  }
  job->ended = tt_wait(&job->process, tt_timeout_ms(bound_ms));
  job->took_ms = now_ms() - started;
  if (!job->ended) tt_cleanup(&job->process); /* kill it, so that its output is final */
  job->output = tt_output(&job->process);
  return job->ended;
}

const char* tt_job_command(const tt_job* job) {
  static char line[4096];
  size_t used = 0;
  line[0] = '\0';
  for (char* const* entry = job->env; *entry && used < sizeof line; ++entry) {
    used += (size_t)snprintf(line + used, sizeof line - used, "%s ", *entry);
  }
  for (char* const* arg = job->argv; *arg && used < sizeof line; ++arg) {
    used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", arg == job->argv ? "" : " ", *arg);
  }
  return line;
}

void tt_job_cleanup(tt_job* job) {
  tt_cleanup(&job->process);
  free(job->output);
  job->output = NULL;
}

int tt_count(const char* text, const char* needle) {
  int count = 0;
  for (const char* at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) ++count;
  return count;
}

int tt_launcher_store(const char* output, char* out, size_t out_size) {
  static const char kLine[] = "tutti launch: rendezvous store on ";
  const char* at = strstr(output, kLine);
  if (at == NULL) return 0;
  at += sizeof kLine - 1;
  size_t length = strcspn(at, ";\n");
  if (length == 0 || length >= out_size) return 0;
  memcpy(out, at, length);
  out[length] = '\0';
  return 1;
}

int tt_count_lines_matching(const char* text, const char* pattern) {
  regex_t compiled;
  if (regcomp(&compiled, pattern, REG_EXTENDED | REG_NOSUB | REG_NEWLINE) != 0) {
    fprintf(stderr, "tt_count_lines_matching: the pattern %s does not compile\n", pattern);
    abort();
  }
  int count = 0;
  for (const char* line = text; line != NULL && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    size_t length = strcspn(line, "\n");
    char* copy = strndup(line, length);
    if (regexec(&compiled, copy, 0, NULL, 0) == 0) ++count;
    free(copy);
  }
  regfree(&compiled);
  return count;
}

int tt_rank_line(const char* output, int rank, const char* prefix, char* out, size_t out_size) {
  char head[96];
  snprintf(head, sizeof head, "[%d] %s", rank, prefix);
  size_t head_length = strlen(head);
  for (const char* line = output; line != NULL && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, head, head_length) != 0) continue;
    const char* rest = line + head_length;
    size_t length = strcspn(rest, "\n");
    if (length >= out_size) length = out_size - 1;
    memcpy(out, rest, length);
    out[length] = '\0';
    return 1;
  }
  return 0;
}

/* Where output first shows a crash report (a sanitizer's, std::terminate's, glibc's on
 * a corrupt heap, UCX's), from the start of its line; NULL if none. */
static const char* first_crash_report(const char* output) {
  static const char* const kMarkers[] = {"Sanitizer", "runtime error:", "std::terminate called", "terminate called",
                                         "free(): ",  "malloc(): ",     "double free",           "corrupted ",
                                         "Fatal:",    "Assertion",      "Caught signal",         NULL};
  const char* first = NULL;
  for (const char* const* marker = kMarkers; *marker; ++marker) {
    const char* at = strstr(output, *marker);
    if (at != NULL && (first == NULL || at < first)) first = at;
  }
  while (first != NULL && first > output && first[-1] != '\n') --first;
  return first;
}

const char* tt_excerpt(const char* output, const char* const* needles) {
  static char text[16000];
  size_t used = 0;
  int lines = 0;
  text[0] = '\0';
  for (const char* line = output; line != NULL && *line && lines < 40;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    size_t length = strcspn(line, "\n");
    int match = 0;
    for (const char* const* needle = needles; needle && *needle && !match; ++needle) {
      const char* at = strstr(line, *needle);
      match = at != NULL && at < line + length;
    }
    if (!match) continue;
    if (length > 400) length = 400;
    if (used + length + 2 >= 6000) break;
    memcpy(text + used, line, length);
    used += length;
    text[used++] = '\n';
    text[used] = '\0';
    ++lines;
  }
  /* A crash's report is what says why; the tail below may have cut it off. */
  const char* crash = first_crash_report(output);
  if (crash != NULL) {
    int written = snprintf(text + used, sizeof text - used, "--- the first crash report ---\n%.5000s\n", crash);
    if (written > 0) used += (size_t)written < sizeof text - used ? (size_t)written : sizeof text - used - 1;
  }
  size_t total = strlen(output);
  const char* tail = total > 3000 ? output + total - 3000 : output;
  snprintf(text + used, sizeof text - used, "--- last %zu characters of output ---\n%s",
           total > 3000 ? (size_t)3000 : total, tail);
  return text;
}
