// How a job started by `tutti launch` can be found from outside it: the launcher
// writes a small file while the job runs, with its store's address and secret, and
// `tutti top` reads it. The files live in a folder of this user's only (mode 0700, in
// $TMPDIR or /tmp): the secret in them is as private as the ranks' environment, which
// only this user can read too. A launcher killed without cleaning up leaves its file:
// readers skip (and remove) the files of launchers that are gone.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tutti::observe {

struct JobFile {
  pid_t launcher_pid = 0;
  std::string store_address;  // "127.0.0.1:40123"
  std::string secret;
  int ranks = 0;
  int64_t started_ms = 0;  // wall clock, ms since the epoch
  std::string command;     // the program and its arguments, for people
};

// "/tmp/tutti-0/jobs": where this user's job files are.
std::string jobs_folder();

// Writes job's file (named for its launcher's pid); returns its path, or "" with
// *why set when it cannot (the job runs on; only `tutti top` cannot find it).
std::string write_job_file(const JobFile& job, std::string* why);
void remove_job_file(const std::string& path);

// The jobs whose launcher still runs, oldest first. Files that cannot be read are
// skipped, and those of launchers that are gone removed.
std::vector<JobFile> running_jobs();

}  // namespace tutti::observe
