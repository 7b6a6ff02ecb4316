// Command benchserver is the decision endpoint the benchmark drives over loopback HTTP: the
// decider's Store and Server (internal/decider) answering from manifest files, with authentication
// off and the decision log on (JSON lines on stdout). The benchmark starts it as a child process
// with GOMAXPROCS=1; it serves until interrupted or until -max-lifetime passes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
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
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := decider.NewStore()
	for _, b := range bundles {
		if err := store.Load(b); err != nil {
			return fmt.Errorf("loading bundle: %w", err)
		}
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

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return fmt.Sprint(*m) }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
