// Package benchmem measures memory in benchmarks: the peak of the heap
// in use while a piece of work runs, sampled from a goroutine, for
// targets stated as a peak (a report streamed to a file, a run read back
// page by page) that testing's allocation counts do not give.
package benchmem

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// SampleHeapInuse samples runtime.MemStats.HeapInuse every 5 ms until the
// returned function is called, which stops sampling and returns the peak
// seen, in MiB.
func SampleHeapInuse() func() float64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		return float64(peak.Load()) / (1 << 20)
	}
}
