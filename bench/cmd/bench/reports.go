package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// samplesPassport is config/samples' coding agent.
const samplesPassport = "coding-agent"

// reportInterval is the report interval of the write-rate measurement (the default is 10 s; a
// shorter one measures more intervals in the same time).
const reportInterval = time.Second

// benchReports measures what decider reports cost: the decision service's throughput with the
// reporter's counters on and off (interleaved run by run, so load elsewhere hits both), and the
// reporter's writes per interval and report size against a real kube-apiserver while deciding.
func benchReports(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	b := samplesBundle()
	if b.Namespace == "" {
		return nil, nil, fmt.Errorf("loading config/samples")
	}
	reqs := []policy.Request{
		{Passport: samplesPassport, ToolName: "bash", ToolInput: map[string]any{"command": "git status"}},
		{Passport: samplesPassport, ToolName: "bash", ToolInput: map[string]any{"command": "ls && rm -rf /"}},
		{Passport: samplesPassport, ToolName: "web_search", ToolInput: map[string]any{"query": "tollgate"}},
		{Passport: "research-agent", ToolName: "web_search"},
	}
	// Many short runs, alternating off and on, so that bursts of load elsewhere hit both alike.
	var off, on, offCPU, onCPU []float64
	for i := range 4 * cfg.runs {
		reporting := i%2 == 1
		rate, perCPU, err := serviceThroughput(ctx, b, reqs, reporting, cfg.benchDur)
		if err != nil {
			return nil, nil, err
		}
		if reporting {
			on, onCPU = append(on, rate), append(onCPU, perCPU)
		} else {
			off, offCPU = append(off, rate), append(offCPU, perCPU)
		}
	}
	offS, onS := stats.Summarize(off), stats.Summarize(on)
	offC, onC := stats.Summarize(offCPU), stats.Summarize(onCPU)
	over := fmt.Sprintf("%d runs", len(off))
	rows := []report.Row{
		{ID: "reports.decide_per_second_off", Name: "6. Decision service, reporting off", Unit: report.UnitPerSecond, Summary: offS, Over: over},
		{ID: "reports.decide_per_second_on", Name: fmt.Sprintf("6. Decision service, reporting on (median %+.1f%%)", 100*(onS.Median-offS.Median)/offS.Median),
			Unit: report.UnitPerSecond, Summary: onS, Over: over},
		{ID: "reports.decide_per_cpu_second_off", Name: "6. Same, per CPU-second, reporting off", Unit: report.UnitPerSecond, Summary: offC, Over: over},
		{ID: "reports.decide_per_cpu_second_on", Name: fmt.Sprintf("6. Same, per CPU-second, reporting on (median %+.1f%%)", 100*(onC.Median-offC.Median)/offC.Median),
			Unit: report.UnitPerSecond, Summary: onC, Over: over},
	}
	writes, size, err := reportWrites(ctx, b, reqs)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows,
		report.Row{ID: "reports.writes_per_interval", Name: "6. Report writes per replica per interval, while deciding", Unit: report.UnitCount,
			Summary: stats.Summarize([]float64{writes}), Over: overOneRun},
		report.Row{ID: "reports.report_bytes", Name: "6. Report size (samples namespace, JSON)", Unit: report.UnitBytes,
			Summary: stats.Summarize([]float64{size}), Over: overOneRun})
	notes := []string{fmt.Sprintf("Reports: the decision service (decider.Service, no HTTP) deciding a mix of 4 samples requests from %d goroutines for %s per run, the reporter's counters off and on in turn (per CPU-second = decisions ÷ this process's CPU time, which load elsewhere disturbs least); writes: a Reporter with a %s interval writing to envtest's kube-apiserver for 10 intervals while deciding (the default interval is 10 s, so a replica writes 6 reports a minute).",
		runtime.GOMAXPROCS(0), cfg.benchDur, reportInterval)}
	return rows, notes, nil
}

// serviceThroughput decides reqs in a loop on every core for d and returns decisions per second of
// wall time and per CPU-second of this process (the figure load elsewhere on the machine disturbs
// least).
func serviceThroughput(ctx context.Context, b policy.Bundle, reqs []policy.Request, reporting bool, d time.Duration) (float64, float64, error) {
	store := decider.NewStore()
	if err := store.Load(b); err != nil {
		return 0, 0, fmt.Errorf("loading the samples: %w", err)
	}
	opts := decider.ServiceOptions{}
	if reporting {
		opts.Reporter = decider.NewReporter(store, decider.ReporterOptions{})
	}
	svc := decider.NewService(store, opts)
	runtime.GC()
	cpu0, err := processCPU()
	if err != nil {
		return 0, 0, err
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	var firstErr atomic.Value
	for w := range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				req := reqs[i%len(reqs)]
				if _, err := svc.Decide(ctx, &req, nil); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, 0, fmt.Errorf("deciding: %w", err)
	}
	cpu1, err := processCPU()
	if err != nil {
		return 0, 0, err
	}
	return float64(n.Load()) / d.Seconds(), float64(n.Load()) / (cpu1 - cpu0).Seconds(), nil
}

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("reading the CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// reportWrites runs a Reporter against a real API server while deciding and returns its writes per
// interval and the last report's JSON size.
func reportWrites(ctx context.Context, b policy.Bundle, reqs []policy.Request) (float64, float64, error) {
	logf.SetLogger(logr.Discard())
	env, err := testenv.New()
	if err != nil {
		return 0, 0, err
	}
	rc, err := env.Start()
	if err != nil {
		return 0, 0, fmt.Errorf("starting envtest: %w", err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(rc, client.Options{Scheme: env.Scheme})
	if err != nil {
		return 0, 0, err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tollgate-system"}}); err != nil {
		return 0, 0, fmt.Errorf("creating the namespace: %w", err)
	}
	store := decider.NewStore()
	if err := store.Load(b); err != nil {
		return 0, 0, err
	}
	rep := decider.NewReporter(store, decider.ReporterOptions{Client: c, Namespace: "tollgate-system", Name: "bench-decider",
		Interval: reportInterval, Logger: slog.New(slog.DiscardHandler)})
	svc := decider.NewService(store, decider.ServiceOptions{Reporter: rep})
	rctx, cancel := context.WithTimeout(ctx, 10*reportInterval+reportInterval/2)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rep.Run(rctx) }()
	for i := 0; rctx.Err() == nil; i++ {
		req := reqs[i%len(reqs)]
		if _, err := svc.Decide(rctx, &req, nil); err != nil {
			return 0, 0, err
		}
		if i%1000 == 999 {
			time.Sleep(time.Millisecond) // leave the reporter room on a busy machine
		}
	}
	if err := <-done; err != nil {
		return 0, 0, err
	}
	if rep.Failures() > 0 {
		return 0, 0, fmt.Errorf("%d report writes failed", rep.Failures())
	}
	var last guardrailsv1alpha1.DeciderReport
	if err := c.Get(ctx, client.ObjectKey{Namespace: "tollgate-system", Name: "bench-decider"}, &last); err != nil {
		return 0, 0, fmt.Errorf("reading the report: %w", err)
	}
	data, err := json.Marshal(last.Spec)
	if err != nil {
		return 0, 0, err
	}
	// The first write happens at start, then one per interval: 11 writes over 10 intervals.
	return float64(rep.Writes()-1) / 10, float64(len(data)), nil
}
