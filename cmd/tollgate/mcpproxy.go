package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/mcpproxy"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

// mcpProxySynopsis is the usage line of `tollgate mcp-proxy`.
const mcpProxySynopsis = "--upstream NAME=URL... (-f PATH... | --decider-url URL | --bundle-namespace NS) [flags] [-- COMMAND ARGS...]"

// mcpProxyCommand is the MCP gateway: it serves each upstream MCP server at /mcp/<name> (Streamable
// HTTP) or, with --stdio, one server over stdin/stdout, and decides every tool call.
type mcpProxyCommand struct {
	upstreams   upstreamList
	name        string
	stdio       bool
	listen      listenOptions
	manifests   manifestOptions
	bundleNS    string
	deciderURL  string
	deciderTok  string
	passport    string
	defaultNS   string
	tokenFile   string
	tokenReview bool
	delegate    bool
	allowOpen   bool
	kube        kubeOptions
	review      tokenReviewOptions
	decisionLog decisionLogOptions
	log         logOptions
	session     time.Duration
	connect     time.Duration
	probe       string
	watch       bool
}

func newMCPProxyCommand() command {
	return &mcpProxyCommand{
		listen:      listenOptions{addr: "127.0.0.1:9190"},
		deciderURL:  os.Getenv(client.EnvURL),
		deciderTok:  os.Getenv(client.EnvTokenFile),
		passport:    os.Getenv(client.EnvPassport),
		review:      newTokenReviewOptions(),
		decisionLog: newDecisionLogOptions(false),
		log:         logOptions{format: logFormatText},
		session:     mcpproxy.DefaultSessionTimeout,
		connect:     mcpproxy.DefaultConnectTimeout,
		watch:       true,
	}
}

// BindFlags registers the proxy's flags.
func (c *mcpProxyCommand) BindFlags(fs *flag.FlagSet) {
	fs.Var(&c.upstreams, "upstream", "an upstream MCP server, `name=URL` (Streamable HTTP), served at /mcp/<name>; repeatable, or comma-separated")
	fs.StringVar(&c.name, "name", c.name, "name of the stdio server given after -- (default: the command's base name)")
	fs.BoolVar(&c.stdio, "stdio", c.stdio, "speak MCP over stdin/stdout to the agent that starts the proxy in place of the server (one upstream)")
	c.listen.BindFlags(fs)
	c.manifests.BindFlags(fs)
	fs.StringVar(&c.bundleNS, "bundle-namespace", c.bundleNS, "decide in process from the bundle ConfigMaps of this namespace (the operator's) in the cluster")
	fs.StringVar(&c.deciderURL, "decider-url", c.deciderURL, "ask this decision endpoint over HTTP (default $"+client.EnvURL+")")
	fs.StringVar(&c.deciderTok, "decider-token-file", c.deciderTok, "bearer token presented to --decider-url when the agent presented none (default $"+client.EnvTokenFile+")")
	fs.StringVar(&c.passport, "passport", c.passport, "passport presented for every agent, namespace/name (default $"+client.EnvPassport+
		"; empty: the one passport listing the agent's ServiceAccount)")
	bindDefaultNamespace(fs, &c.defaultNS, "the one namespace holding the passport")
	fs.StringVar(&c.tokenFile, "token-file", c.tokenFile, "authenticate agents with the bearer tokens listed in FILE (as tollgate serve --token-file)")
	fs.BoolVar(&c.tokenReview, "token-review", c.tokenReview, "authenticate agents' ServiceAccount tokens with TokenReview (through --kubeconfig or the in-cluster config)")
	fs.BoolVar(&c.delegate, "delegate-authentication", c.delegate, "require a bearer token and leave checking it to --decider-url, which receives it with every question")
	fs.BoolVar(&c.allowOpen, "allow-unauthenticated", c.allowOpen, "serve a non-loopback address without authenticating agents (anyone who reaches it acts with --passport)")
	c.kube.BindFlags(fs, kubeconfigUsage)
	c.review.BindFlags(fs)
	c.decisionLog.BindFlags(fs, "stderr (decisions in process)")
	c.log.BindFlags(fs)
	fs.DurationVar(&c.session, "session-timeout", c.session, "close agent sessions idle this long, and their upstream sessions")
	fs.DurationVar(&c.connect, "connect-timeout", c.connect, "bound on connecting to an upstream server")
	fs.BoolVar(&c.watch, "watch", c.watch, "with -f, reload the manifests when they change")
	fs.StringVar(&c.probe, "probe", c.probe, "check a running proxy at `host:port` (GET /healthz) and exit 0 when it answers: a container probe")
}

// upstreamList is the repeatable --upstream flag.
type upstreamList []mcpproxy.Upstream

func (u *upstreamList) String() string {
	parts := make([]string, len(*u))
	for i, up := range *u {
		parts[i] = up.Name + "=" + up.URL
	}
	return strings.Join(parts, ",")
}

// Set adds the upstreams of v.
func (u *upstreamList) Set(v string) error {
	ups, err := mcpproxy.ParseUpstreams(v)
	if err != nil {
		return err
	}
	*u = append(*u, ups...)
	return nil
}

// Run parses the command line itself (the stdio server's arguments after -- are not the proxy's
// flags), then serves until ctx ends.
func (c *mcpProxyCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	fs := newFlagSet("mcp-proxy", mcpProxySynopsis, cio.stderr)
	c.BindFlags(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	warnDeprecated(fs, cio.stderr)
	if c.probe != "" {
		return probeProxy(ctx, c.probe)
	}
	c.manifests.files = append(c.manifests.files, rest...)
	if err := c.addCommand(command); err != nil {
		fs.Usage()
		return err
	}
	log := c.log.logger(cio.stderr)
	dec, ready, stop, err := c.decisions(ctx, cio, log)
	if err != nil {
		return err
	}
	defer stop()
	cfg, desc, err := c.config(dec, log)
	if err != nil {
		return err
	}
	p, err := mcpproxy.New(cfg)
	if err != nil {
		return usageError("%w", err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			log.Warn("closing upstream sessions", "err", err)
		}
	}()
	if c.stdio {
		fmt.Fprintf(cio.stderr, "tollgate mcp-proxy: MCP over stdio for upstream %s (%s)\n", cfg.Upstreams[0].Name, desc)
		t := &mcp.IOTransport{Reader: io.NopCloser(cio.stdin), Writer: nopWriteCloser{cio.stdout}}
		if err := p.Server(cfg.Upstreams[0].Name).Run(ctx, t); err != nil && ctx.Err() == nil {
			return fmt.Errorf("serving MCP over stdio: %w", err)
		}
		return nil
	}
	return c.serveHTTP(ctx, cio, p, ready, desc, log)
}

// addCommand adds the stdio server given after --, if any.
func (c *mcpProxyCommand) addCommand(command []string) error {
	if len(command) == 0 {
		if c.name != "" {
			return usageError("--name names the stdio server given after --, and there is none")
		}
		if len(c.upstreams) == 0 {
			return usageError("no upstream MCP server: give --upstream NAME=URL, or a stdio server after --")
		}
		if c.stdio && len(c.upstreams) != 1 {
			return usageError("--stdio serves one upstream, got %d", len(c.upstreams))
		}
		return nil
	}
	name := c.name
	if name == "" {
		name = stdioName(command[0])
	}
	c.upstreams = append(c.upstreams, mcpproxy.Upstream{Name: name, Command: command})
	if c.stdio && len(c.upstreams) != 1 {
		return usageError("--stdio serves one upstream: give the stdio server after -- and no --upstream")
	}
	return nil
}

// stdioName derives an upstream name from a command: its base name, lowercased, other characters
// than letters and digits turned into hyphens ("server-filesystem" for @modelcontextprotocol/server-filesystem).
func stdioName(cmd string) string {
	base := strings.ToLower(filepath.Base(cmd))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-")
	}
	if name == "" {
		return "stdio"
	}
	return name
}

// decisions builds the decider: in process from manifests (-f) or the cluster (--bundle-namespace),
// or remote (--decider-url). ready reports whether decisions can be made; stop ends the background
// work (manifest watch, bundle watch, decision log).
func (c *mcpProxyCommand) decisions(ctx context.Context, cio *cmdIO, log *slog.Logger) (mcpproxy.Decider, func() bool, func(), error) {
	sources := 0
	for _, set := range []bool{len(c.manifests.files) > 0, c.bundleNS != "", c.deciderURL != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return nil, nil, nil, usageError("say where decisions come from, once: -f PATH (manifests, in process), --bundle-namespace NS (the cluster's bundles, in process) or --decider-url URL (a decision endpoint)")
	}
	if c.deciderURL != "" {
		if c.decisionLog.on() {
			return nil, nil, nil, usageError("--decision-log: the decision endpoint at --decider-url keeps the decision log")
		}
		cl := &client.Client{URL: c.deciderURL, Passport: c.passport, TokenFile: c.deciderTok}
		return &mcpproxy.Remote{Client: cl}, func() bool { return true }, func() {}, nil
	}
	dlog, err := c.decisionLog.open(cio.stderr, "stderr", log)
	if err != nil {
		return nil, nil, nil, err
	}
	store := decider.NewStore()
	svc := decider.NewService(store, decider.ServiceOptions{DefaultNamespace: c.defaultNS, DecisionLog: dlog})
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	stop := func() {
		cancel()
		bg.Wait()
		svc.Close()
	}
	ready := func() bool { return store.Len() > 0 }
	if c.bundleNS != "" {
		cs, err := c.kube.clientset("tollgate-mcp-proxy")
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		bg.Go(func() {
			if err := decider.WatchBundlesWithLogger(ctx, cs, c.bundleNS, store, log); err != nil && ctx.Err() == nil {
				log.Error("watching bundles stopped: decisions use the last bundles loaded", "err", err)
			}
		})
		return &mcpproxy.InProcess{Service: svc}, ready, stop, nil
	}
	fl := &fileLoader{paths: c.manifests.files, store: store, log: log}
	if err := fl.reload(); err != nil {
		stop()
		return nil, nil, nil, &exitError{code: exitFailed, err: err}
	}
	if c.watch {
		w, err := fl.watcher()
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		bg.Go(func() {
			if err := fl.watch(ctx, w); err != nil {
				log.Error("manifest watch stopped", "err", err)
			}
		})
	}
	return &mcpproxy.InProcess{Service: svc}, ready, stop, nil
}

// config builds the proxy's configuration and says how agents are authenticated.
func (c *mcpProxyCommand) config(dec mcpproxy.Decider, log *slog.Logger) (mcpproxy.Config, string, error) {
	cfg := mcpproxy.Config{Upstreams: c.upstreams, Decider: dec, Passport: c.passport, Logger: log,
		SessionTimeout: c.session, ConnectTimeout: c.connect}
	chosen := 0
	for _, b := range []bool{c.tokenFile != "", c.tokenReview, c.delegate} {
		if b {
			chosen++
		}
	}
	if chosen > 1 {
		return cfg, "", usageError("--token-file, --token-review and --delegate-authentication: choose one way to authenticate agents")
	}
	if c.stdio && chosen > 0 {
		return cfg, "", usageError("--stdio: the agent that starts the proxy is not authenticated; present --passport (and --decider-token-file) for it")
	}
	switch {
	case c.tokenFile != "":
		a, err := decider.NewStaticTokenAuthenticator(c.tokenFile)
		if err != nil {
			return cfg, "", &exitError{code: exitFailed, err: err}
		}
		cfg.Authenticator = a
		return cfg, "agents' bearer tokens from " + c.tokenFile, nil
	case c.tokenReview:
		cs, err := c.kube.clientset("tollgate-mcp-proxy")
		if err != nil {
			return cfg, "", err
		}
		cfg.Authenticator = c.review.authenticator(cs)
		return cfg, "agents' ServiceAccount tokens (TokenReview, audience " + c.review.audience + ")", nil
	case c.delegate:
		if c.deciderURL == "" {
			return cfg, "", usageError("--delegate-authentication needs --decider-url: the decision endpoint checks the tokens")
		}
		cfg.DelegateAuthentication = true
		return cfg, "agents' bearer tokens, checked by " + c.deciderURL, nil
	}
	if c.passport == "" {
		return cfg, "", usageError("agents are not authenticated, so there is no ServiceAccount to find a passport for: give --passport (or authenticate agents)")
	}
	return cfg, "agents not authenticated; passport " + c.passport, nil
}

// serveHTTP serves the proxy on --bind-address until ctx ends.
func (c *mcpProxyCommand) serveHTTP(ctx context.Context, cio *cmdIO, p *mcpproxy.Proxy, ready func() bool, desc string, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", c.listen.addr)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("listening on %s: %w", c.listen.addr, err)}
	}
	if strings.HasPrefix(desc, "agents not authenticated") && !isLoopback(ln.Addr()) && !c.allowOpen {
		_ = ln.Close()
		return usageError("agents are not authenticated and %s is not a loopback address: anyone reaching it would act with passport %s "+
			"(authenticate agents with --token-file, --token-review or --delegate-authentication, or pass --allow-unauthenticated)", ln.Addr(), c.passport)
	}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "no policy bundle loaded yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: decider.DefaultReadHeaderTimeout, IdleTimeout: decider.DefaultIdleTimeout,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	for _, path := range p.Paths() {
		fmt.Fprintf(cio.stderr, "tollgate mcp-proxy: MCP server on http://%s%s\n", ln.Addr(), path)
	}
	fmt.Fprintf(cio.stderr, "tollgate mcp-proxy: serving (%s)\n", desc)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", err)
	}
	return nil
}

// probeProxy asks a running proxy's /healthz.
func probeProxy(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return usageError("--probe %q: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe: %s answered %s", addr, resp.Status)
	}
	return nil
}

// nopWriteCloser is stdout as an io.WriteCloser that the transport may close without closing it.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }
