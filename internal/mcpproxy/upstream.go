package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream is one MCP server behind the proxy: a Streamable HTTP endpoint or a local stdio server.
type Upstream struct {
	// Name names the server in tool names (mcp__<name>__<tool>) and in the proxy's path
	// (/mcp/<name>): lowercase letters, digits and single hyphens or underscores, at most 63
	// characters, no "__".
	Name string
	// URL is the server's Streamable HTTP endpoint (http or https).
	URL string
	// Command is a stdio server's command and arguments (instead of URL). It is started on first
	// use, shared by every agent session, and started again when it exits.
	Command []string
	// Env is added to the stdio server's environment (KEY=VALUE).
	Env []string
	// Stderr receives the stdio server's standard error (default: the proxy's).
	Stderr io.Writer
}

var upstreamName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|[-_][a-z0-9]){0,62}$`)

// validate checks the name and exactly one of URL and Command.
func (u *Upstream) validate() error {
	if !upstreamName.MatchString(u.Name) || len(u.Name) > 63 {
		return fmt.Errorf("upstream name %q: want lowercase letters, digits and single - or _ between them, at most 63 characters", u.Name)
	}
	switch {
	case u.URL != "" && len(u.Command) > 0:
		return fmt.Errorf("upstream %s: give a URL or a command, not both", u.Name)
	case u.URL != "":
		pu, err := url.Parse(u.URL)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("upstream %s: URL %q: want an http or https URL", u.Name, u.URL)
		}
	case len(u.Command) == 0 || u.Command[0] == "":
		return fmt.Errorf("upstream %s: give a URL or a command", u.Name)
	}
	return nil
}

// upstreamConns holds the client sessions to one upstream server. An HTTP upstream gets one client
// session per agent session (the server may keep per-session state, which agents must not share);
// a stdio upstream has one process and one session for every agent session.
type upstreamConns struct {
	up      Upstream
	client  *mcp.Client
	hc      *http.Client
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*lazySession
	closed   bool
}

// lazySession is a client session being connected (ready closes when cs or err is set).
type lazySession struct {
	ready chan struct{}
	cs    *mcp.ClientSession
	err   error
}

func newUpstreamConns(up Upstream, hc *http.Client, timeout time.Duration, log *slog.Logger) *upstreamConns {
	c := mcp.NewClient(&mcp.Implementation{Name: "tollgate-mcp-proxy", Version: "v1"}, &mcp.ClientOptions{Logger: log})
	return &upstreamConns{up: up, client: c, hc: hc, timeout: timeout, log: log,
		sessions: map[*mcp.ServerSession]*lazySession{}}
}

// shared reports whether every agent session shares one upstream session.
func (u *upstreamConns) shared() bool { return len(u.up.Command) > 0 }

// session returns the client session serving the agent session ss, connecting it on first use.
func (u *upstreamConns) session(ctx context.Context, ss *mcp.ServerSession) (*mcp.ClientSession, error) {
	key := ss
	if u.shared() {
		key = nil
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, errors.New("the proxy is shutting down")
	}
	ls, ok := u.sessions[key]
	if !ok {
		ls = &lazySession{ready: make(chan struct{})}
		u.sessions[key] = ls
	}
	u.mu.Unlock()
	if ok {
		select {
		case <-ls.ready:
			return ls.cs, ls.err
		case <-ctx.Done():
			return nil, fmt.Errorf("connecting to upstream %s: %w", u.up.Name, ctx.Err())
		}
	}
	ls.cs, ls.err = u.connect(ctx)
	close(ls.ready)
	if ls.err != nil {
		u.forget(key, ls)
		return nil, ls.err
	}
	go u.watch(key, ls, ss)
	return ls.cs, nil
}

// watch closes the upstream session when the agent session ends, and forgets it when it ends by
// itself (the server went away; the next call connects again).
func (u *upstreamConns) watch(key *mcp.ServerSession, ls *lazySession, ss *mcp.ServerSession) {
	done := make(chan struct{})
	go func() {
		_ = ls.cs.Wait()
		close(done)
	}()
	var agentDone <-chan struct{}
	if key != nil && ss != nil {
		ch := make(chan struct{})
		go func() {
			_ = ss.Wait()
			close(ch)
		}()
		agentDone = ch
	}
	select {
	case <-done:
	case <-agentDone:
		if err := ls.cs.Close(); err != nil {
			u.log.Debug("closing upstream session", "upstream", u.up.Name, "err", err)
		}
		<-done
	}
	u.forget(key, ls)
}

func (u *upstreamConns) forget(key *mcp.ServerSession, ls *lazySession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sessions[key] == ls {
		delete(u.sessions, key)
	}
}

// connect opens a client session to the upstream.
func (u *upstreamConns) connect(ctx context.Context) (*mcp.ClientSession, error) {
	// The session outlives the request that opened it; only the handshake is bounded by it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), u.timeout)
	defer cancel()
	var t mcp.Transport
	if u.shared() {
		cmd := exec.Command(u.up.Command[0], u.up.Command[1:]...) //nolint:gosec // the operator's configured server command
		cmd.Env = append(os.Environ(), u.up.Env...)
		cmd.Stderr = u.up.Stderr
		if cmd.Stderr == nil {
			cmd.Stderr = os.Stderr
		}
		t = &mcp.CommandTransport{Command: cmd}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: u.up.URL, HTTPClient: u.hc, DisableStandaloneSSE: true}
	}
	cs, err := u.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to upstream %s: %w", u.up.Name, err)
	}
	return cs, nil
}

// close closes every upstream session (and stops a stdio server).
func (u *upstreamConns) close() error {
	u.mu.Lock()
	u.closed = true
	all := make([]*lazySession, 0, len(u.sessions))
	for _, ls := range u.sessions {
		all = append(all, ls)
	}
	u.mu.Unlock()
	var errs []error
	for _, ls := range all {
		<-ls.ready
		if ls.cs != nil {
			if err := ls.cs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing upstream %s: %w", u.up.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ParseUpstreams reads upstreams written "name=URL", several separated by commas (the form of
// `tollgate mcp-proxy --upstream` and of the pod annotation tollgate.dev/mcp-upstreams), and checks
// each as New does. Names must be distinct.
func ParseUpstreams(s string) ([]Upstream, error) {
	var out []Upstream
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, u, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("upstream %q: want name=URL", clip(item))
		}
		up := Upstream{Name: strings.TrimSpace(name), URL: strings.TrimSpace(u)}
		if err := up.validate(); err != nil {
			return nil, err
		}
		if seen[up.Name] {
			return nil, fmt.Errorf("upstream %s is named twice", up.Name)
		}
		seen[up.Name] = true
		out = append(out, up)
	}
	if len(out) == 0 {
		return nil, errors.New("no upstream: want name=URL[,name=URL...]")
	}
	return out, nil
}
