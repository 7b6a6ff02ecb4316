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
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

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
	if *memoryReport {
		return reportMemory(store)
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
}

// reportMemory prints the process's heap with store loaded, after a full GC.
func reportMemory(store *decider.Store) error {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep := memoryReport{HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, Sys: ms.Sys, Namespaces: store.Len()}
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
