// Package mcpproxy is Tollgate's MCP gateway: a Model Context Protocol proxy between agents and MCP
// servers that decides every tool call, so that an agent reaching its tools through MCP is guarded
// without any change to its code.
//
// The proxy serves each upstream server at /mcp/<name> over Streamable HTTP (or over stdio, for an
// agent that starts its MCP servers as commands). For every tools/call it asks the decision service
// a pre_tool_call question for the tool mcp__<name>__<tool> with the call's arguments as the tool
// input: a deny becomes an MCP tool error (isError) carrying the OAP code and reason, a modify sends
// the rewritten arguments upstream, and the result passes the post_tool_call guards before it
// reaches the agent. tools/list hides the tools the agent's passport can never use (visibility.go).
// Decisions come from bundles compiled in this process (InProcess) or from a decision endpoint over
// HTTP (Remote); agents authenticate with their ServiceAccount tokens exactly as at the decider.
package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Defaults of Config.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultSessionTimeout = 30 * time.Minute
	// MaxArgumentBytes bounds a tool call's arguments, as the decider bounds a request body.
	MaxArgumentBytes = decider.DefaultMaxBodyBytes
	// maxRequestBodyBytes bounds an MCP request body (arguments plus the JSON-RPC envelope).
	maxRequestBodyBytes = MaxArgumentBytes + 64<<10
)

// PathPrefix is where the proxy serves its upstreams: PathPrefix + name.
const PathPrefix = "/mcp/"

// Config configures a Proxy.
type Config struct {
	// Upstreams are the MCP servers behind the proxy (at least one).
	Upstreams []Upstream
	// Decider answers the decision requests (InProcess or Remote).
	Decider Decider
	// Authenticator checks agents' bearer tokens (a TokenReview or static-token authenticator, as the
	// decider uses); an agent without a valid token gets HTTP 401.
	Authenticator decider.Authenticator
	// DelegateAuthentication, without an Authenticator, requires a bearer token but leaves checking
	// it to a Remote decider, which receives it with every question (401 there becomes an error).
	DelegateAuthentication bool
	// Passport is the passport presented ("namespace/name" or "name"); empty means the one passport
	// listing the agent's ServiceAccount, as at the decider.
	Passport string
	// Logger receives operational messages (default slog.Default()). Argument values are never logged.
	Logger *slog.Logger
	// HTTPClient reaches HTTP upstreams (default: a client without a global timeout, since tool
	// calls may stream for long).
	HTTPClient *http.Client
	// ConnectTimeout bounds connecting to an upstream (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// SessionTimeout closes agent sessions idle this long, and their upstream sessions (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// VisibilityTTL is how long a tool's visibility is cached per caller (default 5s).
	VisibilityTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Proxy is the MCP gateway. It is an http.Handler serving PathPrefix + name for each upstream.
type Proxy struct {
	cfg      Config
	log      *slog.Logger
	vis      *visibility
	servers  map[string]*proxied
	handlers map[string]http.Handler
}

// proxied is one upstream and the MCP server the agents talk to in its place.
type proxied struct {
	name     string
	conns    *upstreamConns
	server   *mcp.Server
	toolBase string // "mcp__<name>__"
}

// New returns a proxy for cfg's upstreams. It connects to them on first use.
func New(cfg Config) (*Proxy, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("mcp proxy: no upstream servers")
	}
	if cfg.Decider == nil {
		return nil, errors.New("mcp proxy: no decider")
	}
	if cfg.DelegateAuthentication {
		if _, ok := cfg.Decider.(*Remote); !ok || cfg.Authenticator != nil {
			return nil, errors.New("mcp proxy: delegated authentication needs a remote decider and no authenticator")
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.VisibilityTTL <= 0 {
		cfg.VisibilityTTL = defaultVisibilityTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, servers: map[string]*proxied{}, handlers: map[string]http.Handler{},
		vis: &visibility{decider: cfg.Decider, passport: cfg.Passport, ttl: cfg.VisibilityTTL, now: cfg.Now,
			cache: map[visKey]visEntry{}}}
	for _, up := range cfg.Upstreams {
		if err := up.validate(); err != nil {
			return nil, fmt.Errorf("mcp proxy: %w", err)
		}
		if _, dup := p.servers[up.Name]; dup {
			return nil, fmt.Errorf("mcp proxy: upstream %s is named twice", up.Name)
		}
		px := &proxied{name: up.Name, toolBase: "mcp__" + up.Name + "__",
			conns: newUpstreamConns(up, cfg.HTTPClient, cfg.ConnectTimeout, cfg.Logger)}
		px.server = mcp.NewServer(&mcp.Implementation{Name: "tollgate-mcp-proxy/" + up.Name, Version: "v1"},
			&mcp.ServerOptions{Logger: cfg.Logger, Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
		px.server.AddReceivingMiddleware(p.middleware(px))
		p.servers[up.Name] = px
		h := http.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return px.server },
			&mcp.StreamableHTTPOptions{Logger: cfg.Logger, SessionTimeout: cfg.SessionTimeout,
				MaxRequestBodyBytes: maxRequestBodyBytes, JSONResponse: true}))
		if cfg.Authenticator != nil || cfg.DelegateAuthentication {
			h = auth.RequireBearerToken(p.verifyToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
		}
		p.handlers[up.Name] = h
	}
	return p, nil
}

// ServeHTTP serves PathPrefix + name for each upstream, and GET /healthz.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if h, found := p.handlers[strings.TrimSuffix(name, "/")]; ok && found {
		h.ServeHTTP(w, r)
		return
	}
	http.Error(w, "no MCP server at "+clip(r.URL.Path)+": the proxy serves "+strings.Join(p.Paths(), ", "), http.StatusNotFound)
}

// Paths returns the URL path of each upstream, in configuration order.
func (p *Proxy) Paths() []string {
	out := make([]string, 0, len(p.cfg.Upstreams))
	for _, up := range p.cfg.Upstreams {
		out = append(out, PathPrefix+up.Name)
	}
	return out
}

// Server returns the MCP server standing in for the named upstream, e.g. to run it over stdio
// (server.Run(ctx, &mcp.StdioTransport{})); nil when there is no such upstream.
func (p *Proxy) Server(name string) *mcp.Server {
	if px, ok := p.servers[name]; ok {
		return px.server
	}
	return nil
}

// Close closes every upstream session and stops stdio servers.
func (p *Proxy) Close() error {
	var errs []error
	for _, px := range p.servers {
		if err := px.conns.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// callerExtra is the key of the Caller in auth.TokenInfo.Extra.
const callerExtra = "tollgate.dev/caller"

// verifyToken authenticates an agent's bearer token for auth.RequireBearerToken. Sessions are bound
// to the authenticated ServiceAccount (the SDK refuses a session's requests from anyone else).
func (p *Proxy) verifyToken(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if p.cfg.Authenticator == nil { // delegated: the remote decider checks the token
		return &auth.TokenInfo{Extra: map[string]any{callerExtra: Caller{Token: token}}}, nil
	}
	c, err := p.cfg.Authenticator.Authenticate(ctx, token)
	if err != nil {
		if errors.Is(err, decider.ErrUnauthenticated) {
			return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
		}
		p.log.Warn("cannot authenticate an agent", "err", err)
		return nil, fmt.Errorf("cannot authenticate the agent right now: %w", err)
	}
	return &auth.TokenInfo{UserID: "serviceaccount:" + c.String(),
		Extra: map[string]any{callerExtra: Caller{Identity: &c, Token: token}}}, nil
}

// callerOf returns the caller of an MCP request (the zero Caller when authentication is off).
func callerOf(req mcp.Request) Caller {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if c, ok := ex.TokenInfo.Extra[callerExtra].(Caller); ok {
			return c
		}
	}
	return Caller{}
}

// middleware answers tools/list and tools/call from the upstream; every other method is the proxy
// server's own (initialize, ping, …).
func (p *Proxy) middleware(px *proxied) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				return p.listTools(ctx, px, r)
			case *mcp.CallToolRequest:
				return p.callTool(ctx, px, r)
			}
			return next(ctx, method, req)
		}
	}
}

// listTools lists the upstream's tools (one page, the agent's cursor passed through) and hides
// those the caller's passport can never use.
func (p *Proxy) listTools(ctx context.Context, px *proxied, req *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	cs, err := px.conns.session(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	params := &mcp.ListToolsParams{}
	if req.Params != nil {
		params.Cursor = req.Params.Cursor
	}
	res, err := cs.ListTools(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("listing the tools of upstream %s: %w", px.name, err)
	}
	names := make([]string, 0, len(res.Tools))
	tools := make([]*mcp.Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		if t == nil || !validToolName(t.Name) {
			continue // a name that cannot be decided (see callTool) is not offered
		}
		tools = append(tools, t)
		names = append(names, px.toolBase+t.Name)
	}
	visible, err := p.vis.filter(ctx, callerOf(req), names)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{Meta: res.Meta, NextCursor: res.NextCursor, Tools: make([]*mcp.Tool, 0, len(tools))}
	for i, t := range tools {
		if visible[i] {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

// validToolName reports whether an upstream tool name can be decided: MCP allows 1 to 128
// characters from [A-Za-z0-9_.-]; longer or other names are neither listed nor called.
func validToolName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// clip quotes at most 128 bytes of a caller-supplied value (policy.Clip).
func clip(s string) string { return policy.Clip(s, 128) }
