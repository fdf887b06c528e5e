package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemStatus is what /proc/<pid>/status says about a process's memory, in kB.
type MemStatus struct {
	RSS int64 // VmRSS: resident now
	HWM int64 // VmHWM: the peak of VmRSS since the process started
}

// ParseStatus reads VmRSS and VmHWM from the text of /proc/<pid>/status.
func ParseStatus(b []byte) (MemStatus, error) {
	var m MemStatus
	var seen int
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(k) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		f := bytes.Fields(v)
		if len(f) != 2 || string(f[1]) != "kB" {
			return m, fmt.Errorf("%s: unexpected value %q", k, bytes.TrimSpace(v))
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", k, err)
		}
		*dst = n
		seen++
	}
	if seen != 2 {
		return m, fmt.Errorf("no VmRSS and VmHWM lines (a kernel thread, or the process is gone)")
	}
	return m, nil
}

// ReadStatus reads /proc/<pid>/status.
func ReadStatus(pid int) (MemStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return MemStatus{}, err
	}
	return ParseStatus(b)
}

// Sampler reads a process's VmRSS every interval until stopped.
type Sampler struct {
	pid    int
	stopCh chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	samples []int64 // VmRSS, kB
	err     error   // the first failed read
}

// StartSampler samples pid's VmRSS every interval.
func StartSampler(ctx context.Context, pid int, interval time.Duration) *Sampler {
	s := &Sampler{pid: pid, stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			m, err := ReadStatus(pid)
			s.mu.Lock()
			if err != nil && s.err == nil {
				s.err = err
			} else if err == nil {
				s.samples = append(s.samples, m.RSS)
			}
			s.mu.Unlock()
			select {
			case <-s.stopCh:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the samples.
func (s *Sampler) Stop() ([]int64, error) {
	close(s.stopCh)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.err
}

// Flatness thresholds: a streaming proxy's resident set may grow by its
// buffers and the garbage collector's headroom, not with the rows.
const (
	MaxGrowthKB = 64 << 10 // peak minus start
	MaxTrendKB  = 16 << 10 // late samples minus early samples
)

// Flatness judges whether RSS stayed flat while a result streamed: the peak
// (VmHWM) exceeds the RSS before the query by at most MaxGrowthKB, and the
// median of the last quarter of the samples exceeds that of the second
// quarter by at most MaxTrendKB (no upward trend: memory that grows with
// the rows streamed would show both). Fewer than 8 samples are too few for
// a trend; then only the growth counts.
func Flatness(startKB, hwmKB int64, samples []int64) (flat bool, growthKB, trendKB int64, why string) {
	growthKB = hwmKB - startKB
	if n := len(samples); n >= 8 {
		q := n / 4
		trendKB = MedianInt(samples[n-q:]) - MedianInt(samples[q:2*q])
	}
	switch {
	case growthKB > MaxGrowthKB:
		return false, growthKB, trendKB, fmt.Sprintf("peak %s above the start, more than %s", MiB(growthKB), MiB(MaxGrowthKB))
	case trendKB > MaxTrendKB:
		return false, growthKB, trendKB, fmt.Sprintf("still rising: the last quarter of the samples is %s above the second, more than %s", MiB(trendKB), MiB(MaxTrendKB))
	case len(samples) < 8:
		return true, growthKB, trendKB, fmt.Sprintf("only %d samples: no trend computed", len(samples))
	}
	return true, growthKB, trendKB, ""
}

// MedianInt is the median of xs (0 for none).
func MedianInt(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MiB formats a size in kB as MiB.
func MiB(kb int64) string {
	return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
}
