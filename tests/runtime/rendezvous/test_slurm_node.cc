// Finding a Slurm node's address: a name that resolves is used as it is; otherwise the
// NodeAddr field of `scontrol show node -o`, whose parsing is tested here on Slurm
// 22.05's own output. tests/slurm runs the scontrol path against a real cluster.
#include <criterion/criterion.h>
#include <stdlib.h>

#include <string>

#include "runtime/common/error.h"
#include "runtime/rendezvous/slurm_node.h"

using tutti::Deadline;
using tutti::rendezvous::node_addr_field;
using tutti::rendezvous::parse_slurm_steps;
using tutti::rendezvous::slurm_node_address;

Test(slurm_node, node_addr_field_of_scontrol_output, .timeout = 10) {
  // One line of `scontrol show node -o n1` from Debian's slurm-wlm 22.05.
  std::string line =
      "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=1.02 "
      "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost "
      "Version=22.05.8 OS=Linux 6.1.0 RealMemory=1 AllocMem=0 FreeMem=1024 State=IDLE\n";
  cr_expect_eq(node_addr_field(line), "127.0.0.1");
  cr_expect_eq(node_addr_field("NodeName=gpu01 NodeAddr=10.1.0.1"), "10.1.0.1");
  // A field whose name only ends in NodeAddr is not it.
  cr_expect_eq(node_addr_field("NodeName=x OldNodeAddr=1.2.3.4 NodeAddr=5.6.7.8 State=IDLE"), "5.6.7.8");
  cr_expect_eq(node_addr_field("Node n9 not found"), "");
  cr_expect_eq(node_addr_field(""), "");
}

Test(slurm_node, a_name_that_resolves_is_kept, .timeout = 10) {
  cr_expect_eq(slurm_node_address("localhost", Deadline::after_ms(5000)), "localhost");
  cr_expect_eq(slurm_node_address("127.0.0.1", Deadline::after_ms(5000)), "127.0.0.1");
}

Test(slurm_node, no_name_and_no_scontrol_is_a_clear_error, .timeout = 10) {
  // ".invalid" never resolves (RFC 6761), and with an empty PATH scontrol is not found.
  setenv("PATH", "/nonexistent", 1);
  try {
    slurm_node_address("n1.invalid", Deadline::after_ms(5000));
    cr_assert_fail("slurm_node_address did not fail");
  } catch (const tutti::Error& error) {
    std::string message = error.what();
    cr_expect(error.status() == tutti::Status::kInvalidArgument);
    cr_expect(message.find("Slurm node n1.invalid") != std::string::npos, "%s", message.c_str());
    cr_expect(message.find("scontrol cannot be run") != std::string::npos, "%s", message.c_str());
    cr_expect(message.find("set TUTTI_ADDR") != std::string::npos, "%s", message.c_str());
  }
}

// `scontrol show step -o` as Slurm 22.05 prints it: the running numbered steps, with
// their node lists; batch and extern steps, and steps no longer running, left out.
Test(slurm_node, running_steps_are_read_from_scontrol, .timeout = 10) {
  const std::string output =
      "StepId=12.0 UserId=0 StartTime=2026-11-26T13:29:29 TimeLimit=UNLIMITED State=RUNNING Partition=debug "
      "NodeList=n[1-2] Nodes=2 CPUs=2 Tasks=2 Name=sleep Network=(null) TRES=cpu=2,mem=0,node=2\n"
      "StepId=12.batch UserId=0 State=RUNNING NodeList=n1 Nodes=1\n"
      "StepId=12.extern UserId=0 State=RUNNING NodeList=n[1-2] Nodes=2\n"
      "StepId=12.3 UserId=0 State=COMPLETING NodeList=n2 Nodes=1\n"
      "StepId=13.11 UserId=0 State=RUNNING Partition=debug NodeList=gpu[01-03,07],cpu5 Nodes=5\n";
  auto steps = parse_slurm_steps(output);
  cr_assert_eq(steps.size(), 2u);
  cr_expect_eq(steps[0].job, 12);
  cr_expect_eq(steps[0].step, 0);
  cr_expect_eq(steps[0].nodes, "n[1-2]");
  cr_expect_eq(steps[1].job, 13);
  cr_expect_eq(steps[1].step, 11);
  cr_expect_eq(steps[1].nodes, "gpu[01-03,07],cpu5");
  cr_expect(parse_slurm_steps("No job steps exist for this job\n").empty());
  cr_expect(parse_slurm_steps("").empty());
  cr_expect(parse_slurm_steps("StepId=.0 NodeList=n1\nStepId=x.0 NodeList=n1\nStepId=5. NodeList=n1\n").empty());
}
