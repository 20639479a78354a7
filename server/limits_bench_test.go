package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/internal/procmem"
)

// BenchmarkHostileClient runs the real `gauntlet serve`, with an API
// token, against a client without it that sends, at once, 30 webhook
// bodies of 60 MiB (half with their length declared, half streamed) and
// opens 200 slow connections (headers that stop; bodies declared and
// stopped after one byte, to the webhook and to the API, with and without
// the token). It reports the growth of the server's resident memory
// (rss-MB, from /proc; the peak is sampled) and the longest a slow
// connection was held (hold-s), and fails above 100 MB or 30 s. Linux
// only; one iteration takes about 20 s (the default body deadline):
//
//	go test -run '^$' -bench HostileClient -benchtime 1x ./server
func BenchmarkHostileClient(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	bin := filepath.Join(b.TempDir(), "gauntlet")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/gauntlet").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	const token = "hostile-client-bench-token"
	dir := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--api-token", token,
		"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "definitions"), "--plugins", filepath.Join(dir, "plugins"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the server did not start: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	addr := strings.TrimPrefix(strings.Fields(strings.SplitAfter(line, "listening on ")[1])[0], "http://")
	pid := cmd.Process.Pid

	b.ResetTimer()
	for range b.N {
		base := rssKB(b, pid)
		peak := base
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					peak = max(peak, rssKB(b, pid))
				}
			}
		}()

		var wg sync.WaitGroup
		var mu sync.Mutex
		var hold time.Duration
		var sent int64
		for i := range 30 {
			wg.Go(func() {
				n := floodWebhook(addr, i, 60<<20, i%2 == 1)
				mu.Lock()
				sent += n
				mu.Unlock()
			})
		}
		for i := range 200 {
			wg.Go(func() {
				d := slowClient(addr, token, i%4)
				mu.Lock()
				hold = max(hold, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		close(stop)
		<-sampled
		grown := float64(peak-base) / 1024
		b.ReportMetric(grown, "rss-MB")
		b.ReportMetric(hold.Seconds(), "hold-s")
		b.ReportMetric(float64(sent)/(1<<20), "sent-MiB")
		if grown > 100 {
			b.Errorf("the server's memory grew by %.0f MB (from %d MB)", grown, base/1024)
		}
		if hold > 30*time.Second {
			b.Errorf("a slow client held a connection for %s", hold)
		}
	}
}

// rssKB is the resident memory of process pid, in KiB.
func rssKB(b *testing.B, pid int) int64 {
	n, ok := procmem.RSS(pid)
	if !ok {
		b.Fatal("no VmRSS for process", pid)
	}
	return n >> 10
}

// floodWebhook posts a body of size bytes to a webhook without
// signature, declared or streamed, until the server stops taking it; it
// returns the bytes written.
func floodWebhook(addr string, i int, size int64, streamed bool) int64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	head := "POST /api/channels/c" + strconv.Itoa(i) + "/webhook HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
	if streamed {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += "Content-Length: " + strconv.FormatInt(size, 10) + "\r\n\r\n"
	}
	if _, err := io.WriteString(c, head); err != nil {
		return 0
	}
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	var n int64
	for n < size {
		if streamed {
			if _, err := fmt.Fprintf(c, "%x\r\n", len(chunk)); err != nil {
				break
			}
		}
		m, err := c.Write(chunk)
		n += int64(m)
		if err != nil {
			break
		}
		if streamed {
			if _, err := io.WriteString(c, "\r\n"); err != nil {
				break
			}
		}
	}
	io.Copy(io.Discard, c)
	return n
}

// slowClient opens a connection that stops sending, of one of four
// kinds, and returns how long the server kept it open.
func slowClient(addr, token string, kind int) time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(2 * time.Minute))
	var req string
	switch kind {
	case 0: // headers that stop
		req = "POST /api/agents HTTP/1.1\r\nHost: bench\r\n"
	case 1: // the webhook, one byte of a declared body
		req = "POST /api/channels/c1/webhook HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
	case 2: // the API without the token
		req = "POST /api/agents HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
	default: // the API with the token
		req = "POST /api/agents HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
	}
	if _, err := io.WriteString(c, req); err != nil {
		return time.Since(start)
	}
	io.Copy(io.Discard, c)
	return time.Since(start)
}
