package server

import (
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRunDetails reads get-run of a stored run of 100,000 results
// (100,000 tests, one repeat, in three cells; each with a transcript and
// a model call) over loopback, through the gzip middleware, compressed and
// not, and reports the body's size and the peak Go heap while answering
// (HeapInuse sampled every 5 ms; the client only counts the bytes, so the
// heap is the server's). The run is stored once, before the timer.
func BenchmarkRunDetails(b *testing.B) {
	const n = 100_000
	e := newStreamEnv(b, nil)
	seedStreamRun(b, e.runs, "big", n, 1)
	for _, gz := range []bool{false, true} {
		name := "identity"
		if gz {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			runtime.GC()
			debug.FreeOSMemory()
			stop := sampleHeapInuse()
			var size int64
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/run/big", nil)
				req.Header.Set("Accept-Encoding", map[bool]string{true: "gzip", false: "identity"}[gz])
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				size, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d, %v", resp.StatusCode, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(stop(), "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "body-MiB")
		})
	}
}

// sampleHeapInuse samples HeapInuse every 5 ms until the returned
// function is called, which returns the peak in MiB.
func sampleHeapInuse() func() float64 {
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
