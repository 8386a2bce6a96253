package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// memoryFigures is the process's resident memory under load, in bytes.
type memoryFigures struct {
	afterWarmup int64 // VmRSS when measuring starts
	peak        int64 // the largest VmRSS sampled while measuring
	end         int64 // VmRSS when measuring ends
	hwm         int64 // VmHWM: the process's peak so far, as the kernel saw it
}

// rssSampler reads /proc/self/status at an interval, keeping the largest
// VmRSS seen since its last reset. On a system without /proc it reads 0.
type rssSampler struct {
	max  atomic.Int64
	done chan struct{}
}

func startRSSSampler(every time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.note(s.current())
			}
		}
	}()
	return s
}

func (s *rssSampler) note(v int64) {
	for {
		m := s.max.Load()
		if v <= m || s.max.CompareAndSwap(m, v) {
			return
		}
	}
}

func (s *rssSampler) stop() { close(s.done) }

// reset starts a new peak from the current VmRSS.
func (s *rssSampler) reset() { s.max.Store(s.current()) }

// peak is the largest VmRSS sampled since the last reset, now included.
func (s *rssSampler) peak() int64 {
	s.note(s.current())
	return s.max.Load()
}

func (s *rssSampler) current() int64 { return procStatus("VmRSS:") }
func (s *rssSampler) hwm() int64     { return procStatus("VmHWM:") }

// procStatus reads one "Name:   123 kB" line of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(field)) {
			continue
		}
		fields := bytes.Fields(line[len(field):])
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
