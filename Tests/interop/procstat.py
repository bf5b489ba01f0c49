"""What the tests read of a gateway process from /proc: resident memory, open descriptors, CPU time."""
import os
import time


def rss_bytes(pid):
    """Resident set size of the process, in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS missing")


def open_fds(pid):
    """How many file descriptors the process holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    """utime + stime of the whole process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_share(pid, seconds=2.0):
    """The share of one core the process used over `seconds`."""
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - started)
