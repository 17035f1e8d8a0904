// Package benchcpu reports a benchmark's process CPU time per operation,
// which, unlike ns/op, does not grow when other processes share the
// machine's cores.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Start begins measuring; call the returned func after the loop to report
// "cpu-ns/op" (all threads of the process, GC included).
func Start(b *testing.B) func() {
	start := cpu()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
