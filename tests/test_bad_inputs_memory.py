"""The memory refusals read the limit the process really runs under (issue 35): its
address-space limit (``RLIMIT_AS``: ``prlimit --as``, ``ulimit -v``) or its container's cgroup
limit (v2 ``memory.max``, v1 ``memory.limit_in_bytes``) where smaller than half of the RAM, and
say which it is. The platform is simulated by monkeypatching."""

import resource

import pytest
from tests.badinput import check

from infsched import limits
from infsched.errors import ConfigError

GiB = 2**30


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A 64 GiB machine with no limit set; returns a setter for the limits."""
    monkeypatch.delenv("INFSCHED_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(limits, "physical_memory", lambda: 64 * GiB)
    monkeypatch.setattr(limits, "CGROUP_MEMORY_FILES", ())
    monkeypatch.setattr(limits, "CGROUP_PROC", tmp_path / "no-proc-self-cgroup")
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def set_limits(rlimit_as=None, v2=None, v1=None):
        if rlimit_as is not None:
            monkeypatch.setattr(resource, "getrlimit",
                                lambda which: (rlimit_as, resource.RLIM_INFINITY)
                                if which == resource.RLIMIT_AS else
                                (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        files = []
        for name, text in (("memory.max", v2), ("memory.limit_in_bytes", v1)):
            if text is not None:  # a new file each time: a process reads each path once
                f = tmp_path / f"{len(list(tmp_path.iterdir()))}-{name}"
                f.write_text(text + "\n")
                files.append(f)
        monkeypatch.setattr(limits, "CGROUP_MEMORY_FILES", tuple(files))
    return set_limits


def test_no_limit_is_half_the_ram(machine):
    machine(v2="max", v1=str(2**63 - 4096))          # v2's and v1's ways of saying "no limit"
    assert limits.effective_limit() is None and limits.memory_limit() == 32 * GiB
    msg = check("n", lambda: limits.check_memory("n", 5, 40 * GiB, "the state of 5 servers"))
    assert "more than the limit of 32 GiB (half of this machine's 64 GiB)" in msg


@pytest.mark.parametrize("kind, source", [
    ("rlimit_as", "this process's address-space limit, RLIMIT_AS"),
    ("v2", "this container's cgroup memory limit, "),
    ("v1", "this container's cgroup memory limit, "),
])
def test_a_smaller_limit_is_read_and_named(machine, kind, source):
    machine(**{kind: 4 * GiB if kind == "rlimit_as" else str(4 * GiB)})
    assert limits.memory_limit() == 4 * GiB
    msg = check("n", lambda: limits.check_memory("n", 5, 6 * GiB, "the state of 5 servers"))
    assert f"would need about 6 GiB of memory, more than the limit of 4 GiB ({source}" in msg, msg
    limits.check_memory("n", 5, 3 * GiB, "the state of 5 servers")    # fits: no refusal


def test_the_smallest_limit_wins_and_a_larger_one_is_ignored(machine):
    machine(rlimit_as=6 * GiB, v2=str(3 * GiB))
    assert limits.effective_limit()[0] == 3 * GiB and limits.memory_limit() == 3 * GiB
    machine(rlimit_as=48 * GiB, v2=str(40 * GiB))   # above half of the RAM: half of it
    assert limits.memory_limit() == 32 * GiB


def test_infsched_memory_limit_overrides_the_platform(machine, monkeypatch):
    machine(rlimit_as=2 * GiB)
    monkeypatch.setenv("INFSCHED_MEMORY_LIMIT", "8G")
    assert limits.memory_limit() == 8 * GiB
    msg = check("n", lambda: limits.check_memory("n", 5, 9 * GiB, "x"))
    assert "(INFSCHED_MEMORY_LIMIT)" in msg or "($INFSCHED_MEMORY_LIMIT)" in msg


def test_a_simulator_refuses_under_the_address_space_limit(machine):
    """TAD at 2^28 servers needs 10 GiB: it fits half of the 64 GiB machine, not `prlimit --as=8G`."""
    from infsched.tad import sim
    from infsched.tad.model import MAIN

    machine(rlimit_as=8 * GiB)
    with pytest.raises(ConfigError, match=r"n = 268435456: the state of 268435456 servers would need "
                                          r"about 10 GiB of memory, more than the limit of 8 GiB "
                                          r"\(this process's address-space limit, RLIMIT_AS\)"):
        sim.simulate(MAIN, "tad", 2**28, rho=0.5, a_star=76.0, n_jobs=1000)


@pytest.mark.parametrize("proc, limit_file", [
    ("0::/system.slice/job.service\n", "system.slice/memory.max"),           # v2: a parent's limit
    ("5:cpu:/x\n4:memory:/batch/step_0\n", "memory/batch/step_0/memory.limit_in_bytes"),  # v1
])
def test_the_processs_own_cgroup_limit_is_read(machine, tmp_path, monkeypatch, proc, limit_file):
    """Not only the root cgroup's files: the limit of the process's own cgroup, or of a cgroup
    above it, as /proc/self/cgroup names it (a systemd service, a batch job's step)."""
    root = tmp_path / "cgroup"
    (root / limit_file).parent.mkdir(parents=True)
    (root / limit_file).write_text(f"{3 * GiB}\n")
    (tmp_path / "proc-cgroup").write_text(proc)
    monkeypatch.setattr(limits, "CGROUP_PROC", tmp_path / "proc-cgroup")
    monkeypatch.setattr(limits, "CGROUP_ROOT", root)
    assert limits.memory_limit() == 3 * GiB
    assert str(root / limit_file) in limits.effective_limit()[1]
