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

// ParseCPU returns the CPU time a process has used, user plus system
// (utime + stime, fields 14 and 15), over all its threads, from the text
// of /proc/<pid>/stat. The command name (field 2) is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last
// ')'.
func ParseCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", firstBytes(b, 60))
	}
	// After ") " come fields 3 (state) onwards: utime is field 14, the
	// 12th of them.
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("utime/stime %q: not a tick count", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
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
