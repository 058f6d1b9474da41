"""How much memory the device the trainer computes on has free now: a GPU's from its driver (plus
what torch's caching allocator holds unused), the host's from the kernel, bounded by the process's
cgroup limit (a container)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class DeviceMemory:
    device: str
    free_bytes: int
    total_bytes: int


def device_memory(device: torch.device) -> DeviceMemory:
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        # Blocks torch keeps cached for reuse are free to this process, not to the driver.
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return DeviceMemory(str(device), int(free), int(total))
    total = _host_total()
    available = _meminfo("MemAvailable") or total // 2
    limit = _cgroup_limit()
    if limit is not None:
        total = min(total, limit)
        available = min(available, max(limit - _cgroup_usage(), 0))
    return DeviceMemory(str(device), int(available), int(total))


def _host_total() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return _meminfo("MemTotal") or 8 << 30


def _meminfo(field: str) -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" or v1's huge number: no limit
            return int(text)
    return None


def _cgroup_usage() -> int:
    """The cgroup's working set: its usage less the page cache the kernel can drop (as container
    runtimes count it), so files read once do not look like memory in use."""
    for usage, stat in (("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat"), ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "/sys/fs/cgroup/memory/memory.stat")):
        try:
            used = int(Path(usage).read_text().strip())
        except (OSError, ValueError):
            continue
        inactive = 0
        try:
            for line in Path(stat).read_text().splitlines():
                name, _, value = line.partition(" ")
                if name in ("inactive_file", "total_inactive_file"):
                    inactive = int(value)
                    break
        except (OSError, ValueError):
            pass
        return max(used - inactive, 0)
    return 0
