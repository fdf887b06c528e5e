package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 per second for user space on every
// architecture it runs on (sysconf(_SC_CLK_TCK)).
const clockTick = 10 * time.Millisecond

// Stat is what /proc/<pid>/stat says about a process's CPU time.
type Stat struct {
	PPID int
	// CPU is user plus system time (utime + stime, fields 14 and 15) over
	// all the process's threads.
	CPU time.Duration
	// Children is the same of the children it has waited for (cutime +
	// cstime, fields 16 and 17).
	Children time.Duration
}

// ParseStat reads the text of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so
// fields are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("no command name in %q", firstBytes(b, 60))
	}
	// After ") " come fields 3 (state) onwards: ppid is field 4, the 2nd
	// of them, utime field 14, the 12th.
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	var n [5]int64
	for j, k := range []int{1, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(string(f[k]), 10, 64)
		if err != nil || v < 0 {
			return Stat{}, fmt.Errorf("field %d %q: not a count", k+3, f[k])
		}
		n[j] = v
	}
	return Stat{PPID: int(n[0]), CPU: time.Duration(n[1]+n[2]) * clockTick, Children: time.Duration(n[3]+n[4]) * clockTick}, nil
}

// ParseCPU returns the CPU time (Stat.CPU) in the text of /proc/<pid>/stat.
func ParseCPU(b []byte) (time.Duration, error) {
	st, err := ParseStat(b)
	return st.CPU, err
}

// ReadCPU reads the CPU time process pid has used so far (ParseCPU).
func ReadCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseCPU(b)
}

func firstBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// ReadTreeCPU reads the CPU time a server process and its children have
// used so far: its own, its children's that ended (and were waited for)
// and that of each child still running. A PostgreSQL postmaster's is
// every backend's and background process's.
func ReadTreeCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return 0, err
	}
	total := st.CPU + st.Children
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if cs, err := ParseStat(b); err == nil && cs.PPID == pid {
			total += cs.CPU
		}
	}
	return total, nil
}
