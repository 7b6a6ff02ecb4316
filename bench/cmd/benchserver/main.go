// Command benchserver is a decision endpoint for the benchmark: the decider's Store and Server
// (internal/decider) answering from manifest files plus, optionally, a generated large bundle passed
// through the ConfigMap storage format, with authentication off and the decision log on (JSON lines
// on stdout). The benchmark runs it with -memory-report to measure the decider's heap with the
// large bundle loaded in a fresh process; it can also serve (until interrupted or -max-lifetime).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/fleet"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("benchserver", flag.ContinueOnError)
	var paths multiFlag
	fs.Var(&paths, "f", "manifest file or directory (repeatable; default config/samples)")
	addr := fs.String("addr", "127.0.0.1:8080", "loopback address to listen on")
	lifetime := fs.Duration("max-lifetime", 15*time.Minute, "exit after this long even if nobody stops the server")
	largePassports := fs.Int("large-passports", 0, "also load a generated bundle (namespace "+policytest.Namespace+") with this many passports")
	largePolicies := fs.Int("large-policies", 0, "… and this many policies")
	memoryReport := fs.Bool("memory-report", false, "print the heap after loading as one JSON line on stdout and exit instead of serving")
	var shape fleet.Shape
	fs.IntVar(&shape.Namespaces, "fleet-namespaces", 0, "also load a generated fleet (bench/internal/fleet) of this many namespaces")
	fs.IntVar(&shape.Passports, "fleet-passports", 100, "… with this many passports per namespace")
	fs.IntVar(&shape.Policies, "fleet-policies", 10, "… and this many policies per namespace")
	fs.IntVar(&shape.Rules, "fleet-rules", 10, "… of this many rules each")
	fs.IntVar(&shape.ClusterPolicies, "fleet-cluster-policies", 1, "… plus this many cluster policies in every namespace")
	decisions := fs.Int("fleet-decisions", 0, "with -memory-report and a fleet: time this many decisions on random fleet passports")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if len(paths) == 0 {
		paths = multiFlag{"config/samples"}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", *addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: only loopback addresses are allowed", *addr)
	}

	set, err := manifest.Load(paths...)
	if err != nil {
		return fmt.Errorf("loading manifests: %w", err)
	}
	bundles, err := set.Bundles()
	if err != nil {
		return fmt.Errorf("building bundles: %w", err)
	}
	if len(bundles) == 0 {
		return errors.New("no GuardrailPolicy or AgentPassport found")
	}
	if *largePassports > 0 || *largePolicies > 0 {
		large, err := storedLargeBundle(*largePassports, *largePolicies)
		if err != nil {
			return err
		}
		bundles = append(bundles, large)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := decider.NewStore()
	for _, b := range bundles {
		if err := store.Load(b); err != nil {
			return fmt.Errorf("loading bundle: %w", err)
		}
	}
	clear(bundles) // the store holds what it needs; let the decoded bundles go
	var fr fleetReport
	if shape.Namespaces > 0 {
		if fr, err = loadFleet(store, shape); err != nil {
			return err
		}
	}
	if *memoryReport {
		return reportMemory(store, shape, fr, *decisions)
	}
	srv := decider.NewServer(store, decider.Options{
		DecisionLog: decider.NewDecisionLog(os.Stdout, decider.DefaultLogBuffer, false),
		Logger:      log,
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	if err := srv.ListenAndServe(ctx, *addr); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// storedLargeBundle generates a bundle and passes it through the storage format (bundlestore
// Encode and Decode), so the decider holds what it would after reading it from ConfigMaps.
func storedLargeBundle(passports, policies int) (policy.Bundle, error) {
	cms, err := bundlestore.Encode("tollgate-system", policytest.LargeBundle(passports, policies))
	if err != nil {
		return policy.Bundle{}, fmt.Errorf("encoding the generated bundle: %w", err)
	}
	b, err := bundlestore.Decode(cms)
	if err != nil {
		return policy.Bundle{}, fmt.Errorf("decoding the generated bundle: %w", err)
	}
	return b, nil
}

// memoryReport is the line -memory-report prints.
type memoryReport struct {
	// HeapAlloc is the live heap after a full GC, in bytes.
	HeapAlloc uint64 `json:"heap_alloc"`
	// HeapInuse is the heap spans in use, in bytes.
	HeapInuse uint64 `json:"heap_inuse"`
	// Sys is the memory obtained from the OS, in bytes.
	Sys uint64 `json:"sys"`
	// Namespaces is the number of loaded snapshots.
	Namespaces int `json:"namespaces"`
	// Fleet describes the generated fleet, when one was loaded.
	Fleet *fleetReport `json:"fleet,omitempty"`
}

// fleetReport is what loading (and deciding on) a generated fleet measured.
type fleetReport struct {
	// JSONBytes and StoredBytes are the fleet's bundles as JSON and as stored (gzip), summed.
	JSONBytes   int `json:"json_bytes"`
	StoredBytes int `json:"stored_bytes"`
	// Shards is the number of ConfigMaps the bundles take; MaxShardsPerNamespace the most one takes.
	Shards                int `json:"shards"`
	MaxShardsPerNamespace int `json:"max_shards_per_namespace"`
	// LoadNanos is the time to decode and compile every bundle into the store.
	LoadNanos int64 `json:"load_ns"`
	// DecisionP50, DecisionP99 and DecisionP999 are percentiles of the per-decision latency, in ns.
	DecisionP50  int64 `json:"decision_p50_ns,omitempty"`
	DecisionP99  int64 `json:"decision_p99_ns,omitempty"`
	DecisionP999 int64 `json:"decision_p999_ns,omitempty"`
	// Decisions is the number of decisions timed.
	Decisions int `json:"decisions,omitempty"`
}

// loadFleet generates the fleet's bundles, passes each through the storage format (bundlestore
// Encode and Decode) and loads them into store, as a decider reading them from ConfigMaps does.
func loadFleet(store *decider.Store, shape fleet.Shape) (fleetReport, error) {
	var fr fleetReport
	bundles, err := shape.Bundles()
	if err != nil {
		return fr, fmt.Errorf("generating the fleet: %w", err)
	}
	start := time.Now()
	var load time.Duration
	for i, b := range bundles {
		raw, err := json.Marshal(b)
		if err != nil {
			return fr, fmt.Errorf("encoding bundle %s: %w", b.Namespace, err)
		}
		fr.JSONBytes += len(raw)
		cms, err := bundlestore.Encode("tollgate-system", b)
		if err != nil {
			return fr, fmt.Errorf("storing bundle %s: %w", b.Namespace, err)
		}
		fr.Shards += len(cms)
		fr.MaxShardsPerNamespace = max(fr.MaxShardsPerNamespace, len(cms))
		for _, cm := range cms {
			fr.StoredBytes += len(cm.BinaryData[bundlestore.DataKey])
		}
		t := time.Now()
		decoded, err := bundlestore.Decode(cms)
		if err != nil {
			return fr, fmt.Errorf("decoding bundle %s: %w", b.Namespace, err)
		}
		if err := store.Load(decoded); err != nil {
			return fr, fmt.Errorf("loading bundle %s: %w", b.Namespace, err)
		}
		load += time.Since(t)
		bundles[i] = policy.Bundle{}
	}
	fr.LoadNanos = int64(load)
	fmt.Fprintf(os.Stderr, "benchserver: fleet %s loaded in %s (%s with encoding)\n", shape, load.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return fr, nil
}

// timeDecisions decides n probe calls of random fleet passports in random namespaces through the
// store and records the latency percentiles in fr.
func timeDecisions(store *decider.Store, shape fleet.Shape, n int, fr *fleetReport) error {
	rng := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 0, n)
	ctx := context.Background()
	for range n {
		ns, pp := shape.Namespace(rng.IntN(shape.Namespaces)), rng.IntN(shape.Passports)
		req := fleet.Request(pp)
		t := time.Now()
		snap, ok := store.Snapshot(ns)
		if !ok {
			return fmt.Errorf("namespace %s is not loaded", ns)
		}
		d := snap.Decide(ctx, req)
		lat = append(lat, time.Since(t))
		if d.Decision != policy.DecisionAllow {
			return fmt.Errorf("probe decision in %s: %s %v, want allow", ns, d.Decision, d.Reasons)
		}
	}
	slices.Sort(lat)
	at := func(p float64) int64 { return int64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	fr.DecisionP50, fr.DecisionP99, fr.DecisionP999, fr.Decisions = at(0.50), at(0.99), at(0.999), n
	return nil
}

// reportMemory prints the process's heap with store loaded, after a full GC (and, with a fleet
// and decisions > 0, the decision latencies measured after that).
func reportMemory(store *decider.Store, shape fleet.Shape, fr fleetReport, decisions int) error {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep := memoryReport{HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, Sys: ms.Sys, Namespaces: store.Len()}
	if shape.Namespaces > 0 {
		if decisions > 0 {
			if err := timeDecisions(store, shape, decisions, &fr); err != nil {
				return err
			}
		}
		rep.Fleet = &fr
	}
	runtime.KeepAlive(store)
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return fmt.Errorf("writing the memory report: %w", err)
	}
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return fmt.Sprint(*m) }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
