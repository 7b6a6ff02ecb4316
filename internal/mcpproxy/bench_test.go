package mcpproxy_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/mcpproxy/mcpbench"
)

// BenchmarkProxyAddedLatency measures what the proxy adds to a tools/call on loopback: each
// iteration makes the same call directly to the upstream and through the proxy, and the benchmark
// reports both medians and their difference (target: at most 1 ms added at p50). ns/op and
// allocs/op are of the pair, counting every goroutine of this process: the agent's client, the
// proxy, the upstream server and, in remote mode, the decision endpoint.
func BenchmarkProxyAddedLatency(b *testing.B) {
	for _, mode := range []string{mcpbench.InProcess, mcpbench.Remote} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := mcpbench.Start(ctx, "../../config/samples", mode)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, _, err := s.Measure(ctx, 50, 0); err != nil {
				b.Fatal(err)
			}
			direct := make([]time.Duration, 0, b.N)
			proxied := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t := time.Now()
				if err := mcpbench.Call(ctx, s.Direct); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := mcpbench.Call(ctx, s.Proxied); err != nil {
					b.Fatal(err)
				}
				direct = append(direct, t2.Sub(t))
				proxied = append(proxied, time.Since(t2))
			}
			b.StopTimer()
			d, p := median(direct), median(proxied)
			b.ReportMetric(float64(d.Nanoseconds()), "direct-p50-ns")
			b.ReportMetric(float64(p.Nanoseconds()), "proxied-p50-ns")
			b.ReportMetric(float64((p - d).Nanoseconds()), "added-p50-ns")
		})
	}
}

func median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
