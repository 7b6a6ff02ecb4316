package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tollgate-dev/tollgate/bench/internal/fleet"
	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// Fleet targets (issue 19).
const (
	targetFleetHeap          = 1 << 30
	targetFleetSuspensionP99 = 1e9
	fleetReplicas            = 3
	fleetDecisions           = 200_000
)

// fleetConfig is the fleet stage's part of the command line.
type fleetConfig struct {
	shape            fleet.Shape // the fleet the decider memory and latency rows load
	envtestNamespace int         // namespaces of the envtest propagation run (same per-namespace shape)
	trials           int         // suspension trials of the envtest run
}

// bindFleetFlags adds the fleet stage's flags to fs.
func bindFleetFlags(fs interface {
	IntVar(p *int, name string, value int, usage string)
}, fc *fleetConfig) {
	fs.IntVar(&fc.shape.Namespaces, "fleet-namespaces", 1000, "fleet stage: namespaces")
	fs.IntVar(&fc.shape.Passports, "fleet-passports", 100, "fleet stage: passports per namespace")
	fs.IntVar(&fc.shape.Policies, "fleet-policies", 10, "fleet stage: GuardrailPolicies per namespace")
	fs.IntVar(&fc.shape.Rules, "fleet-rules", 10, "fleet stage: rules per GuardrailPolicy")
	fs.IntVar(&fc.shape.ClusterPolicies, "fleet-cluster-policies", 1, "fleet stage: ClusterGuardrailPolicies selecting every namespace")
	fs.IntVar(&fc.envtestNamespace, "fleet-envtest-namespaces", 50,
		"fleet stage: namespaces of the envtest propagation run (-fleet-namespaces for the full fleet; slow on 2 cores)")
	fs.IntVar(&fc.trials, "fleet-trials", 60, "fleet stage: suspension trials on the replicas")
}

// benchFleet measures the fleet: its bundles, a decider holding all of them (memory, decision
// latency) in a fresh process, and, in envtest with three decider replicas, write → enforced.
func benchFleet(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	fc := cfg.fleet
	s := fc.shape
	passports, policies := s.Total()
	scale := fmt.Sprintf("%s passports + %s policies in %s namespaces", report.FormatValue(float64(passports), report.UnitCount),
		report.FormatValue(float64(policies), report.UnitCount), report.FormatValue(float64(s.Namespaces), report.UnitCount))
	one := func(v float64) stats.Summary { return stats.Summarize([]float64{v}) }

	var heap []float64
	var fr fleetMemory
	for run := range max(cfg.runs/2, 1) { // each run compiles the whole fleet: fewer runs than elsewhere
		m, err := fleetServer(ctx, cfg, s, run == 0)
		if err != nil {
			return nil, nil, err
		}
		heap = append(heap, float64(m.HeapAlloc))
		if run == 0 {
			fr = m
		}
		progress("fleet run %d: decider heap %d MiB live, %d namespaces loaded in %s", run+1, m.HeapAlloc>>20, m.Namespaces,
			time.Duration(m.Fleet.LoadNanos).Round(time.Millisecond))
	}
	f := fr.Fleet
	rows := []report.Row{
		{ID: "fleet.bundle.json_bytes", Name: "5. Fleet bundles, JSON: " + scale, Unit: report.UnitBytes,
			Summary: one(float64(f.JSONBytes)), Over: deterministic,
			Note: report.FormatValue(float64(f.JSONBytes/max(s.Namespaces, 1)), report.UnitBytes) + " per namespace"},
		{ID: "fleet.bundle.stored_bytes", Name: "5. Fleet bundles stored (gzip, bundlestore)", Unit: report.UnitBytes,
			Summary: one(float64(f.StoredBytes)), Over: deterministic},
		report.Row{ID: "fleet.bundle.shards", Name: "5. Fleet bundle ConfigMap shards", Unit: report.UnitCount,
			Summary: one(float64(f.Shards)), Over: deterministic,
			Note: fmt.Sprintf("at most %d per namespace", f.MaxShardsPerNamespace)}.
			WithTarget(report.Target{Op: report.AtMost, Value: float64(s.Namespaces), Label: "1 per namespace"}),
		{ID: "fleet.decider.load", Name: "5. Decider: decode + compile every fleet bundle", Unit: report.UnitNanos,
			Summary: one(float64(f.LoadNanos)), Over: overOneRun},
		report.Row{ID: "fleet.decider.heap_live_bytes", Name: "5. Decider process heap with the fleet, live after GC", Unit: report.UnitBytes,
			Summary: stats.Summarize(heap), Over: fmt.Sprintf("%d runs", len(heap))}.
			WithTarget(report.Target{Op: report.AtMost, Value: targetFleetHeap}),
		{ID: "fleet.decide.p50", Name: "5. Decide on the fleet (random namespace and passport), p50", Unit: report.UnitNanos,
			Summary: one(float64(f.DecisionP50)), Over: fmt.Sprintf("%d decisions", f.Decisions)},
		{ID: "fleet.decide.p99", Name: "5. Decide on the fleet, p99", Unit: report.UnitNanos,
			Summary: one(float64(f.DecisionP99)), Over: fmt.Sprintf("%d decisions", f.Decisions)},
	}

	// Envtest: the real manager and three decider replicas.
	es := s
	es.Namespaces = min(fc.envtestNamespace, s.Namespaces)
	res, err := fleetEnvtest(ctx, es, fc.trials)
	if err != nil {
		return nil, nil, err
	}
	ep, epol := es.Total()
	escale := fmt.Sprintf("%s passports + %s policies in %d namespaces", report.FormatValue(float64(ep), report.UnitCount),
		report.FormatValue(float64(epol), report.UnitCount), es.Namespaces)
	lat := stats.Latencies(res.Suspension).Sort()
	trials := fmt.Sprintf("%d trials", len(lat))
	span := func(d time.Duration) stats.Summary {
		return stats.Summary{Median: float64(d), Min: float64(lat[0]), Max: float64(lat[len(lat)-1]), Runs: len(lat)}
	}
	rows = append(rows,
		report.Row{ID: "fleet.envtest.seed", Name: "5. Envtest: " + escale + " written → enforced on 3 replicas", Unit: report.UnitNanos,
			Summary: one(float64(res.Seed)), Over: overOneRun, Note: fmt.Sprintf("%d bundle writes", res.BundleWrites)},
		report.Row{ID: "fleet.envtest.cluster_change", Name: "5. Envtest: ClusterGuardrailPolicy change → enforced in every namespace on 3 replicas",
			Unit: report.UnitNanos, Summary: one(float64(res.ClusterChange)), Over: overOneRun},
		report.Row{ID: "fleet.envtest.suspension.p50", Name: "5. Envtest: suspension → deny on every one of 3 replicas, p50", Unit: report.UnitNanos,
			Summary: span(lat.Percentile(50)), Over: trials},
		report.Row{ID: "fleet.envtest.suspension.p99", Name: "5. Envtest: suspension → deny on every one of 3 replicas, p99", Unit: report.UnitNanos,
			Summary: span(lat.Percentile(99)), Over: trials}.WithTarget(report.Target{Op: report.AtMost, Value: targetFleetSuspensionP99}),
	)
	notes := []string{
		fmt.Sprintf("Fleet: %s generated by bench/internal/fleet (policies select one of 5 passport teams; the last two rules of each use CEL; "+
			"the cluster policy is merged into every namespace's bundle as cluster/<name>); namespace 0's bundle is built by convert.BundleBuilder "+
			"and the others are its copies under their own names. Decider rows: a fresh benchserver process decodes every bundle from its "+
			"bundlestore ConfigMaps, compiles it into one Store, and reports runtime.MemStats after a full GC, then times %d Decide calls "+
			"(engine, no HTTP) of random passports in random namespaces.", s, fleetDecisions),
		fmt.Sprintf("Fleet envtest: the manager's reconcilers and %d decider replicas (each its own API connection, informer and Store, "+
			"fed by WatchBundlesWithLogger) on one envtest API server holding %s; each trial suspends a random passport and times until the "+
			"last replica denies it (polled every 1ms). The envtest run is smaller than the fleet above when -fleet-envtest-namespaces says so: "+
			"a suspension rebuilds one namespace's bundle, whose size is the same, so its latency does not grow with the namespace count; "+
			"seeding time grows linearly with the objects written.", fleetReplicas, escale),
	}
	return rows, notes, nil
}

// fleetMemory is benchserver's -memory-report line with a fleet.
type fleetMemory struct {
	HeapAlloc  uint64 `json:"heap_alloc"`
	Namespaces int    `json:"namespaces"`
	Fleet      struct {
		JSONBytes             int   `json:"json_bytes"`
		StoredBytes           int   `json:"stored_bytes"`
		Shards                int   `json:"shards"`
		MaxShardsPerNamespace int   `json:"max_shards_per_namespace"`
		LoadNanos             int64 `json:"load_ns"`
		DecisionP50           int64 `json:"decision_p50_ns"`
		DecisionP99           int64 `json:"decision_p99_ns"`
		Decisions             int   `json:"decisions"`
	} `json:"fleet"`
}

// fleetServer runs benchserver -memory-report with the fleet loaded (timing decisions when decide).
func fleetServer(ctx context.Context, cfg config, s fleet.Shape, decide bool) (fleetMemory, error) {
	args := []string{"-f", filepath.Join(cfg.root, "config", "samples"), "-memory-report",
		"-fleet-namespaces", strconv.Itoa(s.Namespaces), "-fleet-passports", strconv.Itoa(s.Passports),
		"-fleet-policies", strconv.Itoa(s.Policies), "-fleet-rules", strconv.Itoa(s.Rules),
		"-fleet-cluster-policies", strconv.Itoa(s.ClusterPolicies)}
	if decide {
		args = append(args, "-fleet-decisions", strconv.Itoa(fleetDecisions))
	}
	cmd := exec.CommandContext(ctx, cfg.serverBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fleetMemory{}, fmt.Errorf("benchserver -memory-report with the fleet: %w: %s", err, stderr.String())
	}
	var m fleetMemory
	if err := json.Unmarshal(out, &m); err != nil {
		return fleetMemory{}, fmt.Errorf("reading the fleet memory report %q: %w", out, err)
	}
	if m.Namespaces < s.Namespaces {
		return fleetMemory{}, fmt.Errorf("benchserver loaded %d namespaces, want at least %d", m.Namespaces, s.Namespaces)
	}
	return m, nil
}

// fleetEnvtest runs the propagation of fleet s in a fresh envtest.
func fleetEnvtest(ctx context.Context, s fleet.Shape, trials int) (fleet.Result, error) {
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env, err := testenv.New()
	if err != nil {
		return fleet.Result{}, err
	}
	restCfg, err := env.Start()
	if err != nil {
		return fleet.Result{}, fmt.Errorf("starting envtest: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			progress("stopping envtest: %v", err)
		}
	}()
	return fleet.Run(ctx, restCfg, env.Scheme, fleet.Config{Shape: s, Replicas: fleetReplicas, Trials: trials, Warmup: 3,
		Writers: 16, Timeout: 15 * time.Second, Progress: progress})
}

// overOneRun is the Over of a row measured once.
const overOneRun = "1 run"
