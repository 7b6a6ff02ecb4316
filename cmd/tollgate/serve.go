package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
)

// reloadDebounce groups the bursts of events an editor or `git pull` makes into one reload.
const reloadDebounce = 150 * time.Millisecond

// serveCommand serves the decider's HTTP API from manifest files, reloading them when they change.
type serveCommand struct {
	manifests        manifestOptions
	listen           listenOptions
	defaultNamespace string
	watch            bool
	log              logOptions
	decisionLog      decisionLogOptions
	tokenFile        string
	kube             kubeOptions
	tokenReview      tokenReviewOptions
	signing          signingOptions
	counters         counterStoreOptions
	tracing          tracingOptions
}

func newServeCommand() command {
	return &serveCommand{
		counters:    newCounterStoreOptions(),
		listen:      listenOptions{addr: "127.0.0.1:8080"},
		watch:       true,
		log:         logOptions{format: logFormatText},
		decisionLog: newDecisionLogOptions(false),
		tokenReview: newTokenReviewOptions(),
		tracing:     tracingOptions{service: "tollgate-serve"},
	}
}

// BindFlags registers serve's flags.
func (c *serveCommand) BindFlags(flags *flag.FlagSet) {
	c.manifests.BindFlags(flags)
	c.listen.BindFlags(flags)
	c.listen.bindMetricsFlag(flags)
	bindDefaultNamespace(flags, &c.defaultNamespace, "the one namespace holding the passport")
	flags.BoolVar(&c.watch, "watch", c.watch, "reload the manifests when they change; an invalid change keeps the last good set")
	c.log.BindFlags(flags)
	c.decisionLog.BindFlags(flags, "stderr")
	flags.StringVar(&c.tokenFile, "token-file", c.tokenFile, "require a bearer token listed in FILE (lines \"<token> <subject>\", "+
		"subject system:serviceaccount:<ns>:<name> or a ServiceAccount name); re-read on change and on SIGHUP")
	c.kube.BindFlags(flags, "require a ServiceAccount bearer token checked with TokenReview through this kubeconfig")
	c.tokenReview.BindFlags(flags)
	c.signing.BindFlags(flags)
	c.counters.BindFlags(flags)
	c.tracing.BindFlags(flags)
	deprecatedAliases(flags,
		alias{"addr", "bind-address"}, alias{"metrics-addr", "metrics-bind-address"}, alias{"namespace", "default-namespace"})
}

// Run loads the manifests and serves decisions from them until ctx ends.
func (c *serveCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	files, err := c.manifests.paths(cio, args)
	if err != nil {
		return err
	}
	if c.tokenFile != "" && c.kube.kubeconfig != "" {
		return usageError("--token-file and --kubeconfig: choose one way to authenticate callers")
	}
	log := c.log.logger(cio.stderr)
	setMemoryLimit(log)
	auth, err := c.authentication()
	if err != nil {
		return err
	}
	signer, err := c.signing.signer()
	if err != nil {
		return err
	}
	counterStore, closeCounters, err := c.counters.open(ctx, log)
	if err != nil {
		return err
	}
	defer closeCounters()
	store := decider.NewStore(counterStore)
	fl := &fileLoader{paths: files, store: store, log: log}
	if err := fl.reload(); err != nil {
		return err
	}
	tp, stopTracing, err := c.tracing.tracerProvider(ctx, log)
	if err != nil {
		return err
	}
	defer flushTraces(stopTracing, log)
	dlog, err := c.decisionLog.open(cio.stderr, "stderr", log)
	if err != nil {
		return err
	}
	srv := decider.NewServer(store, decider.Options{
		DefaultNamespace: c.defaultNamespace, Logger: log, SeparateMetrics: c.listen.metricsAddr != "",
		Authenticator: auth.authenticator, DecisionLog: dlog, TracerProvider: tp, Signer: signer,
	})
	l, err := c.listeners(ctx)
	if err != nil {
		return err
	}
	return c.serve(ctx, cio, srv, fl, auth, l, log)
}

// serveAuth is how serve authenticates callers.
type serveAuth struct {
	// authenticator is nil when authentication is off.
	authenticator decider.Authenticator
	// tokens is the --token-file authenticator, watched for changes.
	tokens *decider.StaticTokenAuthenticator
	// desc says which, for the start-up line.
	desc string
}

// authentication builds the authenticator --token-file or --kubeconfig asks for.
func (c *serveCommand) authentication() (serveAuth, error) {
	switch {
	case c.tokenFile != "":
		tokens, err := decider.NewStaticTokenAuthenticator(c.tokenFile)
		if err != nil {
			return serveAuth{}, err
		}
		return serveAuth{authenticator: tokens, tokens: tokens, desc: "bearer tokens from " + c.tokenFile}, nil
	case c.kube.kubeconfig != "":
		cs, err := c.kube.clientset("tollgate-serve")
		if err != nil {
			return serveAuth{}, err
		}
		return serveAuth{authenticator: c.tokenReview.authenticator(cs),
			desc: "ServiceAccount tokens (TokenReview, audience " + c.tokenReview.audience + ")"}, nil
	}
	return serveAuth{desc: "authentication off"}, nil
}

// serveListeners are the decision API's listener and, with --metrics-bind-address, the metrics one.
type serveListeners struct {
	api, metrics net.Listener
}

// close closes both.
func (l serveListeners) close() {
	_ = l.api.Close()
	if l.metrics != nil {
		_ = l.metrics.Close()
	}
}

// listeners opens the listeners.
func (c *serveCommand) listeners(ctx context.Context) (serveListeners, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", c.listen.addr)
	if err != nil {
		return serveListeners{}, fmt.Errorf("listening on %s: %w", c.listen.addr, err)
	}
	l := serveListeners{api: ln}
	if c.listen.metricsAddr != "" {
		if l.metrics, err = lc.Listen(ctx, "tcp", c.listen.metricsAddr); err != nil {
			_ = ln.Close()
			return serveListeners{}, fmt.Errorf("listening on %s: %w", c.listen.metricsAddr, err)
		}
	}
	return l, nil
}

// serve serves on the listeners until ctx ends, with the manifest watch (--watch), the token-file
// watch and the metrics listener running beside; it returns once they have stopped.
func (c *serveCommand) serve(ctx context.Context, cio *cmdIO, srv *decider.Server, fl *fileLoader, auth serveAuth,
	l serveListeners, log *slog.Logger) error {
	var bg sync.WaitGroup // the token watcher and the metrics listener
	defer bg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // runs before bg.Wait
	watchErr := make(chan error, 1)
	if c.watch {
		w, err := fl.watcher()
		if err != nil {
			l.close()
			return err
		}
		go func() { watchErr <- fl.watch(ctx, w) }()
	}
	if auth.tokens != nil {
		bg.Go(func() { watchTokenFile(ctx, auth.tokens, log) })
	}
	if l.metrics != nil {
		bg.Go(func() { serveMetrics(ctx, l.metrics, srv, log) })
		fmt.Fprintf(cio.stderr, "tollgate serve: metrics on http://%s/metrics\n", l.metrics.Addr())
	}
	if auth.authenticator == nil && !isLoopback(l.api.Addr()) {
		log.Warn("authentication is off on a non-loopback address: anyone who reaches it may present any passport (use --token-file or --kubeconfig)",
			"addr", l.api.Addr().String())
	}
	fmt.Fprintf(cio.stderr, "tollgate serve: decision API on http://%s (%s; POST /v1/decide)\n", l.api.Addr(), auth.desc)
	serveErr := srv.Serve(ctx, l.api)
	cancel()
	if c.watch {
		if err := <-watchErr; err != nil && serveErr == nil {
			serveErr = err
		}
	}
	return serveErr
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

// reload loads every path and compiles each namespace's bundle once (Store.LoadSet); when anything
// is invalid the store keeps its snapshots and the error is recorded (visible in /v1/status) and
// returned. Namespaces the files no longer hold are dropped.
func (l *fileLoader) reload() error {
	set, err := manifest.Load(l.paths...)
	if err != nil {
		l.recordError(err)
		return err
	}
	loaded, err := l.store.LoadSet(set)
	if err != nil {
		l.recordError(err)
		return err
	}
	for _, ns := range l.loaded {
		if !slices.Contains(loaded, ns) {
			l.store.Remove(ns)
		}
	}
	l.loaded = loaded
	policies, passports := 0, 0
	for _, o := range set.Objects {
		if o.Passport != nil {
			passports++
		} else {
			policies++
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
