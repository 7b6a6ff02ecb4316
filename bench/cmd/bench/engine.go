package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// Engine targets (issue 3).
const (
	targetNameRulesNs = 1000
	targetCELRulesNs  = 5000
	targetCompileNs   = 2e9
	targetCompileHeap = 200 << 20
	largePassports    = 10_000
	largePolicies     = 1_000
	// The guard (issue 11).
	targetShellAnalysisNs = 10_000
	targetShellDecideNs   = 15_000
)

// shellCommand200 is a realistic 200-character command an agent runs.
const shellCommand200 = `git status --short && git diff --stat HEAD~1 | head -50; find . -name '*.go' -newer go.mod | xargs grep -n 'TODO' 2>/dev/null | sort | uniq -c | sort -rn | head -20 && echo done`

// distinctShellRequests returns n shell calls under the sample passport that differ in one path, so
// that no decision finds its command's analysis in the snapshot's cache (which keeps 2,048).
func distinctShellRequests(n int) []policy.Request {
	reqs := make([]policy.Request, n)
	for i := range reqs {
		reqs[i] = policy.Request{Passport: "coding-agent", ToolName: "bash", ToolInput: map[string]any{
			"command": fmt.Sprintf("git diff --stat HEAD~1 | head -50 && grep -rn TODO internal/p%d/ | wc -l", i)}}
	}
	return reqs
}

// samplesBundle is config/samples' namespace bundle (the coding-agent passport and the policies).
func samplesBundle() policy.Bundle {
	set, err := manifest.Load(filepath.Join(testenv.RepoRoot(), "config", "samples"))
	if err != nil {
		return policy.Bundle{}
	}
	bundles, err := set.Bundles()
	if err != nil || len(bundles) == 0 {
		return policy.Bundle{}
	}
	return bundles[0]
}

// decideCase is one engine Decide measurement.
type decideCase struct {
	id, name string
	bundle   func() policy.Bundle
	req      policy.Request
	reqs     []policy.Request // when set, the requests decided in turn instead of req
	want     string
	snap     *policy.Snapshot
	ns       []float64
	allocs   int64
}

// benchEngine measures Decide for cases (a), (b) and (c) and Compile of (c), each cfg.runs times.
func benchEngine(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	testing.Init()
	if err := flag.Set("test.benchtime", cfg.benchDur.String()); err != nil {
		return nil, nil, fmt.Errorf("setting benchtime: %w", err)
	}
	cases := []*decideCase{
		{id: "engine.decide.name_rules_100", name: "1a. Engine Decide: 100 name-only rules",
			bundle: func() policy.Bundle { return policytest.OnePolicyBundle(policytest.NameRules(100)) },
			req:    policytest.ToolRequest("agent", "tool-50"), want: policy.DecisionAllow},
		{id: "engine.decide.cel_rules_20", name: "1b. Engine Decide: 20 CEL rules",
			bundle: func() policy.Bundle { return policytest.OnePolicyBundle(policytest.CELRules(20)) },
			req:    policytest.ToolRequest("agent", "bash"), want: policy.DecisionAllow},
		{id: "engine.decide.cel_rules_20_distinct", name: "1b. Same, 20 distinct conditions (no shared results)",
			bundle: func() policy.Bundle { return policytest.OnePolicyBundle(policytest.CELRulesDistinct(20)) },
			req:    policytest.ToolRequest("agent", "bash"), want: policy.DecisionAllow},
		{id: "engine.decide.large", name: "1c. Engine Decide: 10,000 passports + 1,000 policies",
			bundle: func() policy.Bundle { return policytest.LargeBundle(largePassports, largePolicies) },
			req:    policytest.ToolRequest("agent-7777", "tool-50"), want: policy.DecisionAllow},
		{id: "engine.decide.shell_sample", name: "1d. Engine Decide: shell call under the sample passport",
			bundle: samplesBundle,
			req: policy.Request{Passport: "coding-agent", ToolName: "bash",
				ToolInput: map[string]any{"command": "git diff --stat HEAD~1 | head -50 && grep -rn TODO internal/ | wc -l"}},
			want: policy.DecisionAllow},
		{id: "engine.decide.shell_sample_cold", name: "1d. Same, a new command every call (no cached analysis)",
			bundle: samplesBundle, req: distinctShellRequests(1)[0], reqs: distinctShellRequests(1 << 14),
			want: policy.DecisionAllow},
	}
	// Each group's snapshots are alive only while the group runs, as in a decider serving that bundle
	// alone: the large bundle's 50 MiB live heap would otherwise make every collection during the
	// small cases (and the shell analysis) slower. Within a group, the cases are interleaved run by
	// run so that a burst of load elsewhere spreads over all of them.
	small := []*decideCase{cases[0], cases[1], cases[2], cases[4], cases[5]}
	if err := runDecideCases(ctx, cfg, small); err != nil {
		return nil, nil, err
	}
	if err := runDecideCases(ctx, cfg, []*decideCase{cases[3]}); err != nil {
		return nil, nil, err
	}
	var rows []report.Row
	for _, c := range cases {
		rows = append(rows, report.Row{ID: c.id, Name: c.name, Unit: report.UnitNanos, Summary: stats.Summarize(c.ns),
			Over: fmt.Sprintf("%d runs", len(c.ns)), Note: fmt.Sprintf("%d allocs/op", c.allocs)})
	}
	rows[0] = rows[0].WithTarget(report.Target{Op: report.AtMost, Value: targetNameRulesNs})
	rows[1] = rows[1].WithTarget(report.Target{Op: report.AtMost, Value: targetCELRulesNs})
	rows[2] = rows[2].WithTarget(report.Target{Op: report.AtMost, Value: targetCELRulesNs})
	rows[3] = rows[3].WithTarget(report.Target{Op: report.AtMost, Value: 2 * rows[0].Median, Label: "2× (a)"})
	rows[4] = rows[4].WithTarget(report.Target{Op: report.AtMost, Value: targetShellDecideNs})
	rows[5] = rows[5].WithTarget(report.Target{Op: report.AtMost, Value: targetShellDecideNs})
	runtime.GC()
	shellRow, err := benchShellAnalysis(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, shellRow, benchCalibration(cfg))

	compileRows, err := benchCompile(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	notes := []string{fmt.Sprintf("Engine: testing.Benchmark in process (%s per run); (a), (b) and (d) interleaved run by run with only their own small snapshots alive, then (c) alone, then the shell analysis on a collected heap; (c) decides for passport agent-7777 of a bundle where every passport is selected by two policies of 102 rules each.", cfg.benchDur)}
	return append(rows, compileRows...), notes, nil
}

// runDecideCases compiles the cases' bundles, measures Decide cfg.runs times per case (interleaved)
// and releases the snapshots.
func runDecideCases(ctx context.Context, cfg config, cases []*decideCase) error {
	for _, c := range cases {
		snap, err := policy.Compile(c.bundle())
		if err != nil {
			return fmt.Errorf("compiling %s: %w", c.id, err)
		}
		if d := snap.Decide(ctx, c.req); d.Decision != c.want {
			return fmt.Errorf("%s: decision %s %v, want %s", c.id, d.Decision, d.Reasons, c.want)
		}
		c.snap = snap
	}
	defer func() {
		for _, c := range cases {
			c.snap, c.reqs = nil, nil // nothing of a case stays alive for the next measurements
		}
		runtime.GC()
	}()
	for run := range cfg.runs {
		var line []string
		for _, c := range cases {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("engine benchmark: %w", err)
			}
			r := testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				if c.reqs != nil {
					for i := range b.N {
						c.snap.Decide(ctx, c.reqs[i%len(c.reqs)])
					}
					return
				}
				for range b.N {
					c.snap.Decide(ctx, c.req)
				}
			})
			if r.N == 0 {
				return fmt.Errorf("%s: the benchmark did not run", c.id)
			}
			c.ns = append(c.ns, float64(r.T.Nanoseconds())/float64(r.N))
			c.allocs = r.AllocsPerOp()
			line = append(line, fmt.Sprintf("%s=%.0f ns", c.id, c.ns[run]))
		}
		progress("engine run %d/%d: %s", run+1, cfg.runs, strings.Join(line, " "))
	}
	return nil
}

// benchShellAnalysis measures shell.Analyze of a 200-character command, cfg.runs times.
func benchShellAnalysis(ctx context.Context, cfg config) (report.Row, error) {
	var ns []float64
	var allocs int64
	for range cfg.runs {
		if err := ctx.Err(); err != nil {
			return report.Row{}, fmt.Errorf("shell benchmark: %w", err)
		}
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := shell.Analyze(shellCommand200, shell.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if r.N == 0 {
			return report.Row{}, fmt.Errorf("shell analysis: the benchmark did not run")
		}
		ns = append(ns, float64(r.T.Nanoseconds())/float64(r.N))
		allocs = r.AllocsPerOp()
	}
	row := report.Row{ID: "engine.shell.analyze_200", Name: "1e. Shell analysis: a 200-character command", Unit: report.UnitNanos,
		Summary: stats.Summarize(ns), Over: fmt.Sprintf("%d runs", len(ns)), Note: fmt.Sprintf("%d allocs/op", allocs)}
	return row.WithTarget(report.Target{Op: report.AtMost, Value: targetShellAnalysisNs}), nil
}

// benchCalibration times a fixed CPU-bound loop (200 bytes, no memory traffic, no allocation),
// cfg.runs times: the speed of the core the engine rows ran on, to compare runs across machines or
// across the load of a shared one (about 70 ns on an idle modern core).
func benchCalibration(cfg config) report.Row {
	var buf [200]byte
	for i := range buf {
		buf[i] = byte(i)
	}
	var ns []float64
	sink := 0
	for range cfg.runs {
		r := testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				for _, c := range buf {
					if c == ' ' {
						sink++
					}
					sink += int(c >> 3)
				}
			}
		})
		if r.N > 0 {
			ns = append(ns, float64(r.T.Nanoseconds())/float64(r.N))
		}
	}
	runtime.KeepAlive(sink)
	return report.Row{ID: "engine.calibration", Name: "1. Calibration: a fixed 200-byte loop (the core's speed)", Unit: report.UnitNanos,
		Summary: stats.Summarize(ns), Over: fmt.Sprintf("%d runs", len(ns))}
}

// benchCompile measures the time and heap of compiling the large bundle, cfg.runs times.
func benchCompile(ctx context.Context, cfg config) ([]report.Row, error) {
	bundle := policytest.LargeBundle(largePassports, largePolicies)
	var secs, peaks, retained []float64
	for run := range cfg.runs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("compile benchmark: %w", err)
		}
		runtime.GC()
		base := heapObjectBytes()
		stop := samplePeakHeap()
		start := time.Now()
		snap, err := policy.Compile(bundle)
		took := time.Since(start)
		peak := stop()
		if err != nil {
			return nil, fmt.Errorf("compiling the large bundle: %w", err)
		}
		runtime.GC()
		live := heapObjectBytes()
		runtime.KeepAlive(snap)
		peakGrowth, liveGrowth := growth(max(peak, live), base), growth(live, base)
		secs = append(secs, float64(took.Nanoseconds()))
		peaks = append(peaks, float64(peakGrowth))
		retained = append(retained, float64(liveGrowth))
		progress("compile run %d/%d: %s, peak heap +%d MiB, live +%d MiB", run+1, cfg.runs, took.Round(time.Millisecond),
			peakGrowth>>20, liveGrowth>>20)
	}
	over := fmt.Sprintf("%d runs", cfg.runs)
	return []report.Row{
		report.Row{ID: "engine.compile.large.time", Name: "1c. Compile time, 10,000 passports + 1,000 policies", Unit: report.UnitNanos,
			Summary: stats.Summarize(secs), Over: over}.WithTarget(report.Target{Op: report.AtMost, Value: targetCompileNs}),
		report.Row{ID: "engine.compile.large.peak_heap", Name: "1c. Compile heap, peak growth during compile", Unit: report.UnitBytes,
			Summary: stats.Summarize(peaks), Over: over}.WithTarget(report.Target{Op: report.AtMost, Value: targetCompileHeap}),
		{ID: "engine.compile.large.retained_heap", Name: "1c. Compiled snapshot, live heap", Unit: report.UnitBytes,
			Summary: stats.Summarize(retained), Over: over},
	}, nil
}

// growth returns v-base, or 0 when v < base.
func growth(v, base uint64) uint64 {
	if v < base {
		return 0
	}
	return v - base
}

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// heapObjectBytes returns the bytes of heap objects (live and not yet swept) right now.
func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// samplePeakHeap samples heapObjectBytes every 2 ms until the returned function is called, which
// returns the highest value seen.
func samplePeakHeap() func() uint64 {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, heapObjectBytes())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(peak, heapObjectBytes())
	}
}
