#include "observe/job_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

constexpr const char* kPrefix = "job-";

// A folder of ours alone: made with mode 0700, or found so and owned by us. Anything
// else (someone else's, or opened up) is not trusted with a secret.
bool own_private_folder(const std::string& path, std::string* why) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = concat("cannot make ", path, ": ", std::strerror(errno));
    return false;
  }
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) {
    *why = concat("cannot read ", path, ": ", std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(info.st_mode) || info.st_uid != geteuid() || (info.st_mode & 077) != 0) {
    *why = concat(path, " is not a folder of this user's alone (mode 0700); remove it");
    return false;
  }
  return true;
}

std::string user_folder() {
  const char* tmp = std::getenv("TMPDIR");
  return concat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/tutti-", geteuid());
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

bool read_job_file(const std::string& path, JobFile* job) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    std::string name = line.substr(0, space), value = line.substr(space + 1);
    if (name == "launcher_pid") job->launcher_pid = static_cast<pid_t>(std::atol(value.c_str()));
    if (name == "store") job->store_address = value;
    if (name == "secret") job->secret = value;
    if (name == "ranks") job->ranks = std::atoi(value.c_str());
    if (name == "started_ms") job->started_ms = std::atoll(value.c_str());
    if (name == "command") job->command = value;
  }
  return job->launcher_pid > 0 && !job->store_address.empty();
}

}  // namespace

std::string jobs_folder() { return user_folder() + "/jobs"; }

std::string write_job_file(const JobFile& job, std::string* why) {
  if (!own_private_folder(user_folder(), why) || !own_private_folder(jobs_folder(), why)) return "";
  std::string path = concat(jobs_folder(), "/", kPrefix, job.launcher_pid);
  std::string temporary = path + ".new";
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *why = concat("cannot write ", temporary, ": ", std::strerror(errno));
    return "";
  }
  std::string command = job.command;
  std::replace(command.begin(), command.end(), '\n', ' ');
  std::string text = concat("launcher_pid ", job.launcher_pid, "\nstore ", job.store_address, "\nsecret ", job.secret,
                            "\nranks ", job.ranks, "\nstarted_ms ", job.started_ms, "\ncommand ", command, "\n");
  bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  // Renamed into place whole, so that a reader never sees half a file.
  if (!written || rename(temporary.c_str(), path.c_str()) != 0) {
    *why = concat("cannot write ", path, ": ", std::strerror(errno));
    unlink(temporary.c_str());
    return "";
  }
  return path;
}

void remove_job_file(const std::string& path) {
  if (!path.empty()) unlink(path.c_str());
}

std::vector<JobFile> running_jobs() {
  std::vector<JobFile> jobs;
  std::string folder = jobs_folder();
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return jobs;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind(kPrefix, 0) != 0 || name.find('.') != std::string::npos) continue;
    std::string path = concat(folder, "/", name);
    JobFile job;
    if (!read_job_file(path, &job)) continue;
    if (!alive(job.launcher_pid)) {
      unlink(path.c_str());
      continue;
    }
    jobs.push_back(std::move(job));
  }
  closedir(dir);
  std::sort(jobs.begin(), jobs.end(), [](const JobFile& a, const JobFile& b) { return a.started_ms < b.started_ms; });
  return jobs;
}

}  // namespace tutti::observe
