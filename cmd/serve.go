package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
)

// reloadDebounce groups the bursts of events an editor or `git pull` makes into one reload.
const reloadDebounce = 150 * time.Millisecond

// runServe serves the decider's HTTP API from manifest files, reloading them when they change.
func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	flags := newFlagSet("serve", "-f PATH... [--addr 127.0.0.1:8080] [flags]", stderr)
	var files pathList
	flags.Var(&files, "f", "GuardrailPolicy/AgentPassport manifest file or directory (repeatable; YAML or JSON)")
	flags.Var(&files, "filename", "same as -f")
	addr := flags.String("addr", "127.0.0.1:8080", "listen address (loopback by default; use e.g. :8080 to listen on every interface)")
	metricsAddr := flags.String("metrics-addr", "", "serve /metrics on this address instead (empty: on --addr)")
	namespace := flags.String("namespace", "", "namespace of bare passport names (default: the one namespace holding the passport)")
	watch := flags.Bool("watch", true, "reload the manifests when they change; an invalid change keeps the last good set")
	logFormat := flags.String("log-format", "text", "log format: text or json")
	decisionLog := flags.Bool("decision-log", false, "write one JSON decision record per decision to stderr")
	logInput := flags.Bool("decision-log-include-input", false, "include tool arguments and rewritten arguments in the decision log (off: no argument value is logged)")
	tokenFile := flags.String("token-file", "", "require a bearer token listed in FILE (lines \"<token> <subject>\", subject system:serviceaccount:<ns>:<name> or a ServiceAccount name); re-read on change and on SIGHUP")
	kubeconfig := flags.String("kubeconfig", "", "require a ServiceAccount bearer token checked with TokenReview through this kubeconfig")
	audience := flags.String("token-audience", decider.DefaultAudience, "audience TokenReview tokens must carry (with --kubeconfig)")
	rest, err := parseFlags(flags, args)
	if err != nil {
		return helpOK(err)
	}
	files = append(files, rest...)
	if len(files) == 0 {
		flags.Usage()
		return usageError("no manifests: give -f PATH (a file or directory of GuardrailPolicy and AgentPassport manifests)")
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(stderr, nil)
	default:
		return usageError("--log-format %q: want text or json", *logFormat)
	}
	if *tokenFile != "" && *kubeconfig != "" {
		return usageError("--token-file and --kubeconfig: choose one way to authenticate callers")
	}
	log := slog.New(handler)
	setMemoryLimit(log)

	opts := decider.Options{DefaultNamespace: *namespace, Logger: log, SeparateMetrics: *metricsAddr != ""}
	authnDesc := "authentication off"
	var tokens *decider.StaticTokenAuthenticator
	switch {
	case *tokenFile != "":
		if tokens, err = decider.NewStaticTokenAuthenticator(*tokenFile); err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		opts.Authenticator = tokens
		authnDesc = fmt.Sprintf("bearer tokens from %s", *tokenFile)
	case *kubeconfig != "":
		cs, err := kubeClient(*kubeconfig)
		if err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		opts.Authenticator = decider.NewTokenReviewAuthenticator(cs, decider.TokenReviewConfig{Audience: *audience})
		authnDesc = "ServiceAccount tokens (TokenReview, audience " + *audience + ")"
	}

	store := decider.NewStore()
	fl := &fileLoader{paths: files, store: store, log: log}
	if err := fl.reload(); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if *decisionLog {
		opts.DecisionLog = decider.NewDecisionLog(stderr, decider.DefaultLogBuffer, *logInput)
	}
	srv := decider.NewServer(store, opts)

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("listening on %s: %w", *addr, err)}
	}
	var mln net.Listener
	if *metricsAddr != "" {
		if mln, err = lc.Listen(ctx, "tcp", *metricsAddr); err != nil {
			_ = ln.Close()
			return &exitError{code: exitFailed, err: fmt.Errorf("listening on %s: %w", *metricsAddr, err)}
		}
	}
	var bg sync.WaitGroup // the token watcher and the metrics listener
	defer bg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // runs before bg.Wait
	watchErr := make(chan error, 1)
	if *watch {
		w, err := fl.watcher()
		if err != nil {
			_ = ln.Close()
			if mln != nil {
				_ = mln.Close()
			}
			return &exitError{code: exitFailed, err: err}
		}
		go func() { watchErr <- fl.watch(ctx, w) }()
	}
	if tokens != nil {
		bg.Go(func() { watchTokenFile(ctx, tokens, log) })
	}
	if mln != nil {
		bg.Go(func() { serveMetrics(ctx, mln, srv, log) })
		fmt.Fprintf(stderr, "tollgate serve: metrics on http://%s/metrics\n", mln.Addr())
	}
	if opts.Authenticator == nil && !isLoopback(ln.Addr()) {
		log.Warn("authentication is off on a non-loopback address: anyone who reaches it may present any passport (use --token-file or --kubeconfig)",
			"addr", ln.Addr().String())
	}
	fmt.Fprintf(stderr, "tollgate serve: decision API on http://%s (%s; POST /v1/decide)\n", ln.Addr(), authnDesc)
	serveErr := srv.Serve(ctx, ln)
	cancel()
	if *watch {
		if err := <-watchErr; err != nil && serveErr == nil {
			serveErr = err
		}
	}
	return serveErr
}

// kubeClient builds a clientset from a kubeconfig file.
func kubeClient(path string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "tollgate-serve"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes client: %w", err)
	}
	return cs, nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// serveMetrics serves srv's /metrics on ln until ctx is done.
func serveMetrics(ctx context.Context, ln net.Listener, srv *decider.Server, log *slog.Logger) {
	hs := &http.Server{
		Handler:           srv.MetricsHandler(),
		ReadHeaderTimeout: decider.DefaultReadHeaderTimeout,
		ReadTimeout:       decider.DefaultReadTimeout,
		WriteTimeout:      decider.DefaultWriteTimeout,
		IdleTimeout:       decider.DefaultIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("metrics listener stopped", "err", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		// Wait for Serve to return: http.ErrServerClosed after Shutdown or Close, so nothing to report.
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics listener stopped", "err", err)
		}
	}
}

// watchTokenFile re-reads the token file when its directory changes (debounced; a Kubernetes Secret
// volume swaps a symlink) and on SIGHUP. An invalid file authenticates no one until it is fixed.
func watchTokenFile(ctx context.Context, a *decider.StaticTokenAuthenticator, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err != nil {
		log.Warn("cannot watch the token file; reload it with SIGHUP", "err", err)
	} else {
		defer func() { _ = w.Close() }()
		if err := w.Add(filepath.Dir(a.Path())); err != nil {
			log.Warn("cannot watch the token file; reload it with SIGHUP", "err", err)
		} else {
			events = w.Events
		}
	}
	reload := func() {
		changed, err := a.Reload()
		switch {
		case err != nil:
			log.Error("token file invalid: no bearer token is accepted until it is fixed", "err", err)
		case changed:
			log.Info("reloaded token file", "tokens", a.Len())
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload()
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			timer.Reset(reloadDebounce)
		case <-timer.C:
			reload()
		}
	}
}

// fileLoader loads manifest files into a decider store.
type fileLoader struct {
	paths []string
	store *decider.Store
	log   *slog.Logger
	// loaded are the namespaces of the last good set.
	loaded []string
}

// reload loads and compiles every path; when anything is invalid the store keeps its snapshots and
// the error is recorded (visible in /v1/status) and returned.
func (l *fileLoader) reload() error {
	set, err := manifest.Load(l.paths...)
	if err == nil {
		_, err = set.Compile()
	}
	if err != nil {
		l.recordError(err)
		return err
	}
	bundles, err := set.Bundles()
	if err != nil {
		l.recordError(err)
		return err
	}
	now := map[string]bool{}
	for _, b := range bundles {
		if err := l.store.Load(b); err != nil {
			return err
		}
		now[b.Namespace] = true
	}
	for _, ns := range l.loaded {
		if !now[ns] {
			l.store.Remove(ns)
		}
	}
	l.loaded = set.Namespaces()
	policies, passports := 0, 0
	for _, o := range set.Objects {
		if o.Policy != nil {
			policies++
		} else {
			passports++
		}
	}
	l.log.Info("loaded manifests", "files", len(set.Files), "policies", policies, "passports", passports,
		"namespaces", strings.Join(l.loaded, ","))
	return nil
}

// recordError records a failed reload against every namespace being served, so /v1/status shows it.
func (l *fileLoader) recordError(err error) {
	if len(l.loaded) == 0 {
		l.store.RecordError("", err)
	}
	for _, ns := range l.loaded {
		l.store.RecordError(ns, err)
	}
}

// watcher watches every directory named or holding a named file (files are often replaced by
// rename, which only their directory sees), and directories below named directories.
func (l *fileLoader) watcher() (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching manifests: %w", err)
	}
	if err := l.addWatches(w); err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

func (l *fileLoader) addWatches(w *fsnotify.Watcher) error {
	for _, p := range l.paths {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("watching %s: %w", p, err)
		}
		if !info.IsDir() {
			if err := w.Add(filepath.Dir(p)); err != nil {
				return fmt.Errorf("watching %s: %w", filepath.Dir(p), err)
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return w.Add(path)
		})
		if err != nil {
			return fmt.Errorf("watching %s: %w", p, err)
		}
	}
	return nil
}

// relevant reports whether an event may change the loaded set.
func (l *fileLoader) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Clean(ev.Name)
	for _, p := range l.paths {
		p = filepath.Clean(p)
		if name == p {
			return true
		}
		if rel, err := filepath.Rel(p, name); err == nil && !strings.HasPrefix(rel, "..") {
			// Inside a watched directory: manifests and new subdirectories matter.
			if manifest.IsManifestFile(filepath.Base(name)) {
				return true
			}
			if info, err := os.Stat(name); err == nil && info.IsDir() {
				return true
			}
		}
	}
	return false
}

// watch reloads on relevant events (debounced) until ctx is done.
func (l *fileLoader) watch(ctx context.Context, w *fsnotify.Watcher) error {
	defer func() { _ = w.Close() }()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("manifest watcher stopped")
			}
			if l.relevant(ev) {
				timer.Reset(reloadDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("manifest watcher stopped")
			}
			l.log.Warn("manifest watcher error", "err", err)
		case <-timer.C:
			// New directories need watches of their own; re-adding existing ones is harmless.
			if err := l.addWatches(w); err != nil {
				l.log.Warn("updating manifest watches", "err", err)
			}
			if err := l.reload(); err != nil {
				l.log.Error("manifests changed but are invalid; still serving the last good set", "err", err)
			}
		}
	}
}
