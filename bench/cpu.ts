/** Per-process CPU time and RSS from /proc (Linux only; every reader returns null elsewhere). */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clockTicks: number | null = null;

/** `getconf CLK_TCK`, usually 100. */
export function clkTck(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime of the whole process (all threads), in clock ticks. */
export function cpuTicks(pid: number): number | null {
  try {
    return statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** utime + stime of a /proc stat line (a process's or a thread's), in clock ticks. */
function statTicks(stat: string): number {
  // comm (field 2) may contain spaces and parentheses: parse after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Field 3 (state) is fields[0]; utime is field 14, stime field 15.
  return Number(fields[11]) + Number(fields[12]);
}

/** Resident set size in KiB (VmRSS). */
export function rssKiB(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** utime + stime by thread name (comm; same-named threads summed), in clock ticks. */
export function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      out.set(name, (out.get(name) ?? 0) + statTicks(stat));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** Microseconds of CPU per completed request by thread name, between two `threadTicks` snapshots. */
export function threadUsPerRequest(before: Map<string, number>, after: Map<string, number>, completed: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, ticks] of after) out.set(name, (((ticks - (before.get(name) ?? 0)) / clkTck()) * 1e6) / Math.max(1, completed));
  return out;
}

export interface CpuMeter {
  /** Microseconds of CPU per completed request since the meter started. */
  stop(completed: number): number | null;
}

export function startCpuMeter(pid: number): CpuMeter {
  const before = cpuTicks(pid);
  return {
    stop(completed) {
      const after = cpuTicks(pid);
      if (before === null || after === null || completed <= 0) return null;
      return ((after - before) / clkTck() / completed) * 1e6;
    },
  };
}

export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
