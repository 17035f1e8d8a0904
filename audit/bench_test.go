package audit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures durable appends (write + fsync per group-commit
// batch) with growing numbers of concurrent appenders: goroutines =
// parallelism × GOMAXPROCS. records/s is the number to compare; with one
// appender it is the fsync rate of the disk.
func BenchmarkAppend(b *testing.B) {
	for _, par := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			tb := setup(b, Options{})
			l := tb.open(b)
			e := entry(1)
			e.Result = make([]byte, 512)
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Append(context.Background(), e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.StopTimer()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkEncode is the in-memory cost per record: canonical encoding plus
// the hash in one pass, what Append does under its mutex.
func BenchmarkEncode(b *testing.B) {
	r := exportRecords()["allowed"]
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = r.appendSealed(buf[:0])
	}
}

// BenchmarkAppend8 is the gateway's shape: exactly eight appenders, each
// waiting for its record before appending the next.
func BenchmarkAppend8(b *testing.B) {
	tb := setup(b, Options{})
	l := tb.open(b)
	e := entry(1)
	e.Result = make([]byte, 512)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := l.Append(context.Background(), e); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/float64(l.writes), "records/write")
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAttemptOutcome8 is the gateway's shape since calls are recorded
// before dispatch: eight callers, each appending an attempt, then its
// outcome, then the next call. records/write shows the group commit: the
// attempts and outcomes of concurrent calls share durable writes.
func BenchmarkAttemptOutcome8(b *testing.B) {
	tb := setup(b, Options{})
	l := tb.open(b)
	attempt, outcome := entry(1), entry(1)
	attempt.Decision = Attempting
	outcome.Result = make([]byte, 512)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				r, err := l.Append(context.Background(), attempt)
				if err == nil {
					outcome.Attempt = r.Seq
					_, err = l.Append(context.Background(), outcome)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(2*b.N)/float64(l.writes), "records/write")
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppend1 is one sequential caller: every record is its own batch,
// so ns/op is the latency a lone gateway call pays for its durable record.
func BenchmarkAppend1(b *testing.B) {
	tb := setup(b, Options{})
	l := tb.open(b)
	e := entry(1)
	e.Result = make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
