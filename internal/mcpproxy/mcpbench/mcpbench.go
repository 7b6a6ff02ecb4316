// Package mcpbench measures what Tollgate's MCP proxy adds to a tool call: an upstream MCP server
// (the official Go SDK's), the proxy in front of it and an agent session to each, all on loopback,
// and the same tools/call made directly and through the proxy, interleaved. The Go benchmark of
// internal/mcpproxy and `make bench` (bench/cmd/bench) both use it.
package mcpbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/mcpproxy"
	"github.com/tollgate-dev/tollgate/pkg/client"
)

// Decision modes.
const (
	// InProcess decides in the proxy's process (the decision service over the compiled bundle).
	InProcess = "in-process"
	// Remote asks a decision endpoint (decider.Server, on loopback in this process) over HTTP.
	Remote = "remote"
)

// Tool is the tool called: an allowed call under config/samples' coding-agent passport, whose
// result passes the post_tool_call guards (llm-guards).
const Tool = "search"

// Arguments are the call's arguments.
var Arguments = map[string]any{"query": "tollgate mcp gateway", "per_page": 20}

// token authenticates the agent (a static token of ServiceAccount default/coding-agent).
const token = "bench-coding-agent-token-0123456789"

// Setup is an upstream MCP server, a proxy in front of it and an agent session to each.
type Setup struct {
	// Direct is an agent session straight to the upstream.
	Direct *mcp.ClientSession
	// Proxied is an agent session through the proxy.
	Proxied *mcp.ClientSession

	closers []func() error
}

// Start starts everything on loopback. samples is the directory of manifests the decisions come from
// (config/samples); mode is InProcess or Remote.
func Start(ctx context.Context, samples, mode string) (s *Setup, err error) {
	s = &Setup{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	up := upstream()
	upURL, err := s.serve(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	if err != nil {
		return nil, err
	}
	set, err := manifest.Load(samples)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", samples, err)
	}
	store := decider.NewStore()
	if _, err := store.LoadSet(set); err != nil {
		return nil, fmt.Errorf("compiling %s: %w", samples, err)
	}
	authn, err := tokenAuthenticator()
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := mcpproxy.Config{Upstreams: []mcpproxy.Upstream{{Name: "bench", URL: upURL}}, Authenticator: authn, Logger: quiet}
	switch mode {
	case InProcess:
		svc := decider.NewService(store, decider.ServiceOptions{})
		s.closers = append(s.closers, func() error { svc.Close(); return nil })
		cfg.Decider = &mcpproxy.InProcess{Service: svc}
	case Remote:
		dURL, err := s.serve(decider.NewServer(store, decider.Options{Authenticator: authn, Logger: quiet}))
		if err != nil {
			return nil, err
		}
		cfg.Decider = &mcpproxy.Remote{Client: &client.Client{URL: dURL}}
		cfg.Passport = "default/coding-agent"
	default:
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	p, err := mcpproxy.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the proxy: %w", err)
	}
	s.closers = append(s.closers, p.Close)
	pURL, err := s.serve(p)
	if err != nil {
		return nil, err
	}
	if s.Direct, err = connect(ctx, upURL, ""); err != nil {
		return nil, fmt.Errorf("connecting to the upstream: %w", err)
	}
	s.closers = append(s.closers, s.Direct.Close)
	if s.Proxied, err = connect(ctx, pURL+mcpproxy.PathPrefix+"bench", token); err != nil {
		return nil, fmt.Errorf("connecting through the proxy: %w", err)
	}
	s.closers = append(s.closers, s.Proxied.Close)
	return s, nil
}

// Close stops everything.
func (s *Setup) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
	s.closers = nil
}

// serve serves h on a loopback port and returns its URL.
func (s *Setup) serve(h http.Handler) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening on loopback: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	s.closers = append(s.closers, hs.Close)
	return "http://" + ln.Addr().String(), nil
}

// tokenAuthenticator writes a one-token file and returns its authenticator.
func tokenAuthenticator() (*decider.StaticTokenAuthenticator, error) {
	dir, err := os.MkdirTemp("", "tollgate-mcpbench-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte(token+" system:serviceaccount:default:coding-agent\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing the token file: %w", err)
	}
	a, err := decider.NewStaticTokenAuthenticator(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	return a, nil
}

// upstream is the MCP server called: one tool answering with a short text.
func upstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: Tool, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: "3 results: tollgate-dev/tollgate, modelcontextprotocol/go-sdk, modelcontextprotocol/servers"}}}, nil
		})
	return s
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends r with the token.
func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func connect(ctx context.Context, endpoint, tok string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{tok, tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	return cs, nil
}

// Call makes one tools/call of Tool on cs; a tool error is an error.
func Call(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: Tool, Arguments: Arguments})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", Tool, err)
	}
	if res.IsError {
		return errors.New("tools/call " + Tool + " answered a tool error")
	}
	return nil
}

// Measure makes n calls on each session after warm calls, alternating direct and proxied, and
// returns each call's latency.
func (s *Setup) Measure(ctx context.Context, warm, n int) (direct, proxied []time.Duration, err error) {
	for range warm {
		if err := Call(ctx, s.Direct); err != nil {
			return nil, nil, err
		}
		if err := Call(ctx, s.Proxied); err != nil {
			return nil, nil, err
		}
	}
	direct, proxied = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range 2 * n {
		cs := s.Direct
		if i%2 == 1 {
			cs = s.Proxied
		}
		t := time.Now()
		if err := Call(ctx, cs); err != nil {
			return nil, nil, err
		}
		if i%2 == 1 {
			proxied = append(proxied, time.Since(t))
		} else {
			direct = append(direct, time.Since(t))
		}
	}
	return direct, proxied, nil
}
