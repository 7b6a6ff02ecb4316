package decider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultMaxBatch          = 1000
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	DefaultWriteTimeout      = 15 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownTimeout   = 20 * time.Second
)

// Options configures a Server. The zero value serves without authentication or decision log.
type Options struct {
	// Authenticator checks callers' bearer tokens; nil turns authentication off (local use only).
	// When set, the caller's ServiceAccount must be listed in the passport's subjects.serviceAccounts.
	Authenticator Authenticator
	// DefaultNamespace resolves a bare passport name; when empty a bare name must be unique among
	// the loaded namespaces.
	DefaultNamespace string
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes, 1 MiB).
	MaxBodyBytes int64
	// MaxBatch bounds the requests of one batch (default DefaultMaxBatch).
	MaxBatch int
	// MaxInFlightBytes bounds the request bodies decoded and decided at once (default
	// DefaultMaxInFlightBytes); a request that finds no room within InFlightWait (default
	// DefaultInFlightWait) gets a 429 with Retry-After.
	MaxInFlightBytes int64
	InFlightWait     time.Duration
	// DecisionLog receives one record per decision; nil disables it. The Server closes it in Close.
	DecisionLog *DecisionLog
	// Logger receives operational messages (default slog.Default()).
	Logger *slog.Logger
	// HTTP server limits for ListenAndServe and Serve (defaults above).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration
	// SeparateMetrics leaves /metrics out of the Server's routes (404): serve MetricsHandler on a
	// listener of its own instead.
	SeparateMetrics bool
}

// Server is the decision endpoint's http.Handler: POST /v1/decide, POST /v1/decide:batch,
// POST /api/verify/policy/{policy_id}, GET /healthz, /readyz, /metrics and /v1/status.
type Server struct {
	store    *Store
	opts     Options
	log      *slog.Logger
	metrics  *metrics
	metricsH http.Handler
	idPrefix string
	seq      atomic.Uint64
	draining atomic.Bool
	bufs     sync.Pool
	inflight *inFlight
}

// NewServer returns a Server answering from store's snapshots.
func NewServer(store *Store, opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{store: store, opts: opts, log: opts.Logger, idPrefix: randomPrefix(),
		inflight: newInFlight(opts.MaxInFlightBytes, opts.InFlightWait)}
	m, err := newMetrics(store, opts.DecisionLog)
	if err != nil {
		s.log.Error("metrics registration failed", "err", err)
	}
	s.metrics = m
	s.metricsH = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return s
}

func randomPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16) + "-s"
	}
	return hex.EncodeToString(b[:]) + "-s"
}

// Route names used as metric labels.
const (
	routeDecide  = "decide"
	routeBatch   = "decide_batch"
	routeVerify  = "verify"
	routeHealth  = "healthz"
	routeReady   = "readyz"
	routeMetrics = "metrics"
	routeStatus  = "status"
	routeOther   = "other"
)

const verifyPrefix = "/api/verify/policy/"

// ServeHTTP routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/v1/decide":
		s.post(w, r, routeDecide, s.handleDecide)
	case path == "/v1/decide:batch":
		s.post(w, r, routeBatch, s.handleBatch)
	case strings.HasPrefix(path, verifyPrefix):
		s.post(w, r, routeVerify, s.handleVerify)
	case path == "/healthz":
		s.get(w, r, routeHealth, s.handleHealth)
	case path == "/readyz":
		s.get(w, r, routeReady, s.handleReady)
	case path == "/metrics" && !s.opts.SeparateMetrics:
		s.serveMetrics(w, r)
	case path == "/v1/status":
		s.get(w, r, routeStatus, s.handleStatus)
	default:
		s.count(routeOther, writeError(w, http.StatusNotFound, &RequestError{Code: ErrCodeNotFound,
			Message: "no route " + clip(path) + ": want POST /v1/decide, POST /v1/decide:batch, POST " + verifyPrefix + "{policy_id}, GET /healthz, /readyz, /metrics or /v1/status"}))
	}
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.get(w, r, routeMetrics, func(w http.ResponseWriter, r *http.Request) int {
		s.metricsH.ServeHTTP(w, r)
		return http.StatusOK
	})
}

// MetricsHandler serves GET /metrics alone (404 elsewhere), for a metrics listener of its own (see
// Options.SeparateMetrics).
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			s.count(routeOther, writeError(w, http.StatusNotFound, &RequestError{Code: ErrCodeNotFound,
				Message: "no route " + clip(r.URL.Path) + ": this listener serves GET /metrics only"}))
			return
		}
		s.serveMetrics(w, r)
	})
}

func (s *Server) count(route string, code int) {
	s.metrics.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, route string, h func(http.ResponseWriter, *http.Request) int) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.count(route, writeError(w, http.StatusMethodNotAllowed, &RequestError{Code: ErrCodeMethodNotAllowed,
			Message: "method " + r.Method + " not allowed: use POST"}))
		return
	}
	s.count(route, s.throttle(w, r, h))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, route string, h func(http.ResponseWriter, *http.Request) int) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.count(route, writeError(w, http.StatusMethodNotAllowed, &RequestError{Code: ErrCodeMethodNotAllowed,
			Message: "method " + r.Method + " not allowed: use GET"}))
		return
	}
	s.count(route, h(w, r))
}

// errorBody is the body of every 4xx answer.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, e *RequestError) int {
	return writeJSON(w, status, struct {
		Error errorBody `json:"error"`
	}{errorBody{Code: e.Code, Message: e.Error(), Field: e.Field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		// Only values of our own types are written; fall back to a fixed error.
		status = http.StatusInternalServerError
		data = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	return writeRaw(w, status, append(data, '\n'))
}

var jsonContentType = []string{"application/json"}

// readBody reads the request body within the size limit and checks its media type.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *RequestError, int) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &RequestError{Code: ErrCodeUnsupportedMedia, Message: "Content-Type " + clip(ct) + " not supported: send application/json"}, http.StatusUnsupportedMediaType
		}
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, tooLarge(s.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(s.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge
		}
		return nil, &RequestError{Code: ErrCodeInvalidJSON, Message: "reading the request body: " + err.Error()}, http.StatusBadRequest
	}
	return body, nil, 0
}

func tooLarge(n int64) *RequestError {
	return &RequestError{Code: ErrCodeBodyTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", n)}
}

// authenticate returns the caller, or writes the 401/503 answer and returns ok=false.
// admit authenticates the caller of a POST route and reads its body. When it reports false it has
// already answered, with the returned status.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*Caller, []byte, int, bool) {
	caller, status, ok := s.authenticate(w, r)
	if !ok {
		return nil, nil, status, false
	}
	body, rerr, status := s.readBody(w, r)
	if rerr != nil {
		return nil, nil, writeError(w, status, rerr), false
	}
	return caller, body, 0, true
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*Caller, int, bool) {
	if s.opts.Authenticator == nil {
		return nil, 0, true
	}
	h := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		token, ok = strings.CutPrefix(h, "bearer ")
	}
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		s.metrics.authFails.Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate"`)
		return nil, writeError(w, http.StatusUnauthorized, &RequestError{Code: ErrCodeUnauthenticated,
			Field: "Authorization", Message: "a bearer ServiceAccount token with audience " + DefaultAudience + " is required"}), false
	}
	c, err := s.opts.Authenticator.Authenticate(r.Context(), token)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			s.metrics.authFails.Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate", error="invalid_token"`)
			return nil, writeError(w, http.StatusUnauthorized, &RequestError{Code: ErrCodeUnauthenticated,
				Field: "Authorization", Message: err.Error()}), false
		}
		s.log.Warn("authentication unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		return nil, writeError(w, http.StatusServiceUnavailable, &RequestError{Code: ErrCodeUnavailable,
			Message: "cannot authenticate the caller right now: " + err.Error()}), false
	}
	return &c, 0, true
}

func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) int {
	caller, body, status, ok := s.admit(w, r)
	if !ok {
		return status
	}
	req, err := DecodeRequest(body)
	if err != nil {
		return writeError(w, http.StatusBadRequest, asRequestError(err))
	}
	d, rerr := s.decide(r.Context(), &req, caller, "")
	if rerr != nil {
		return writeError(w, http.StatusBadRequest, rerr)
	}
	buf := s.getBuf()
	defer s.putBuf(buf)
	b, err := appendDecision((*buf)[:0], d)
	*buf = b
	if err != nil {
		return writeJSON(w, http.StatusOK, d)
	}
	return writeRaw(w, http.StatusOK, append(b, '\n'))
}

// getBuf and putBuf recycle response buffers.
func (s *Server) getBuf() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1024)
	return &b
}

func (s *Server) putBuf(b *[]byte) {
	if cap(*b) <= 64<<10 {
		s.bufs.Put(b)
	}
}

func writeRaw(w http.ResponseWriter, status int, data []byte) int {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.WriteHeader(status)
	_, _ = w.Write(data)
	return status
}

func asRequestError(err error) *RequestError {
	var re *RequestError
	if errors.As(err, &re) {
		return re
	}
	return &RequestError{Code: ErrCodeInvalidJSON, Message: err.Error()}
}

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) int {
	caller, body, status, ok := s.admit(w, r)
	if !ok {
		return status
	}
	var br batchRequest
	if err := decodeJSON(body, &br, ""); err != nil {
		return writeError(w, http.StatusBadRequest, asRequestError(err))
	}
	if br.Requests == nil {
		return writeError(w, http.StatusBadRequest, fieldErr(ErrCodeMissingField, "requests", "required: an array of decision requests"))
	}
	if len(br.Requests) > s.opts.MaxBatch {
		return writeError(w, http.StatusBadRequest, fieldErr(ErrCodeBatchTooLarge, "requests", "%d requests exceed the batch limit of %d", len(br.Requests), s.opts.MaxBatch))
	}
	reqs := make([]policy.Request, len(br.Requests))
	for i, raw := range br.Requests {
		prefix := "requests[" + strconv.Itoa(i) + "]"
		if err := decodeJSON(raw, &reqs[i], prefix); err != nil {
			return writeError(w, http.StatusBadRequest, asRequestError(err))
		}
		if err := ValidateRequest(&reqs[i], prefix); err != nil {
			return writeError(w, http.StatusBadRequest, asRequestError(err))
		}
	}
	ds := make([]*policy.Decision, len(reqs))
	for i := range reqs {
		d, rerr := s.decide(r.Context(), &reqs[i], caller, "requests["+strconv.Itoa(i)+"].")
		if rerr != nil {
			return writeError(w, http.StatusBadRequest, rerr)
		}
		ds[i] = d
	}
	b := append(make([]byte, 0, 512*len(ds)+16), `{"decisions":[`...)
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendDecision(b, d); err != nil {
			return writeJSON(w, http.StatusOK, batchResponse{Decisions: ds})
		}
	}
	return writeRaw(w, http.StatusOK, append(b, "]}\n"...))
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) int {
	policyID := strings.TrimPrefix(r.URL.Path, verifyPrefix)
	if policyID == "" || strings.Contains(policyID, "/") || len(policyID) > maxNameLen {
		return writeError(w, http.StatusNotFound, fieldErr(ErrCodeNotFound, "policy_id", "want %s{policy_id}", verifyPrefix))
	}
	caller, body, status, ok := s.admit(w, r)
	if !ok {
		return status
	}
	req, err := decodeVerify(body, policyID)
	if err != nil {
		return writeError(w, http.StatusBadRequest, asRequestError(err))
	}
	d, rerr := s.decide(r.Context(), &req, caller, "")
	if rerr != nil {
		return writeError(w, http.StatusBadRequest, rerr)
	}
	vd := verifyDecision{Decision: d, PassportID: req.AgentID}
	if vd.PassportID == "" {
		if snap, err := s.store.resolve(&req, s.opts.DefaultNamespace); err == nil {
			if p, ok := snap.Passport(req.Passport); ok {
				vd.PassportID = effectiveAgentID(p)
			}
		}
	}
	b := append(make([]byte, 0, 1024), `{"decision":{`...)
	b, err = appendDecisionFields(b, d)
	if err != nil {
		return writeJSON(w, http.StatusOK, verifyResponse{Decision: vd})
	}
	if vd.PassportID != "" {
		b = append(b, `,"passport_id":`...)
		b = appendString(b, vd.PassportID)
	}
	return writeRaw(w, http.StatusOK, append(b, "}}\n"...))
}

func effectiveAgentID(p policy.Passport) string {
	if p.Spec.AgentID != "" {
		return p.Spec.AgentID
	}
	return p.UID
}

// decide answers one validated request: it finds the snapshot, checks the caller against the
// passport's subjects, decides, and records metrics and the decision log. A *RequestError means the
// request itself is unusable (4xx); every other problem is a deny decision.
func (s *Server) decide(ctx context.Context, req *policy.Request, caller *Caller, fieldPrefix string) (*policy.Decision, *RequestError) {
	start := time.Now()
	var d policy.Decision
	if req.Passport == "" && req.AgentID == "" {
		if rerr := s.passportForCaller(req, caller, fieldPrefix); rerr != nil {
			return nil, rerr
		}
	}
	snap, err := s.store.resolve(req, s.opts.DefaultNamespace)
	switch err.(type) {
	case nil:
		d = s.decideWith(ctx, snap, req, caller)
	case errNoPassport:
		return nil, fieldErr(ErrCodeMissingField, fieldPrefix+"passport", "%s", err.Error())
	case errAmbiguous:
		return nil, fieldErr(ErrCodeInvalidField, fieldPrefix+"passport", "%s", err.Error())
	default: // no bundle for the namespace, or nowhere to be found
		d = s.ownDecision(start, policy.CodePassportNotFound, err.Error(), "", "")
	}
	elapsed := time.Since(start)
	s.record(&d, req, caller, elapsed, snap)
	return &d, nil
}

func (s *Server) decideWith(ctx context.Context, snap *policy.Snapshot, req *policy.Request, caller *Caller) policy.Decision {
	if caller != nil {
		var p policy.Passport
		var found bool
		if req.Passport != "" {
			p, found = snap.Passport(req.Passport)
		} else {
			p, found = snap.PassportByAgentID(req.AgentID)
		}
		// An unknown passport is left to the engine (oap.passport_not_found).
		if found && !subjectAllowed(p, snap.Namespace(), *caller) {
			return s.ownDecision(time.Now(), policy.CodeSubjectNotAllowed,
				fmt.Sprintf("service account %s may not present passport %s/%s (not in spec.subjects.serviceAccounts)",
					caller, snap.Namespace(), p.Name),
				policy.PassportDigest(p), snap.Revision())
		}
	}
	return snap.Decide(ctx, *req)
}

// subjectAllowed reports whether the caller's ServiceAccount may present p.
func subjectAllowed(p policy.Passport, namespace string, c Caller) bool {
	ns := p.Namespace
	if ns == "" {
		ns = namespace
	}
	return (c.Namespace == ns || c.AnyNamespace) && c.ServiceAccount != "" &&
		slices.Contains(p.Spec.Subjects.ServiceAccounts, c.ServiceAccount)
}

// ownDecision is a deny made by the server itself (no snapshot, or the caller may not present the
// passport). It is never cacheable.
func (s *Server) ownDecision(now time.Time, code, msg, digest, revision string) policy.Decision {
	return policy.Decision{
		DecisionID:     s.idPrefix + strconv.FormatUint(s.seq.Add(1), 16),
		Allow:          false,
		Decision:       policy.DecisionDeny,
		Reasons:        []policy.Reason{{Code: code, Message: msg}},
		PassportDigest: digest,
		BundleRevision: revision,
		CreatedAt:      now,
	}
}

// record counts the decision and queues its log record. Metric labels come from closed sets (see
// labels.go), never from the request; the log record carries argument values only when the log opts
// in (see redact.go).
func (s *Server) record(d *policy.Decision, req *policy.Request, caller *Caller, elapsed time.Duration, snap *policy.Snapshot) {
	code := ""
	if len(d.Reasons) > 0 {
		code = d.Reasons[0].Code
	}
	s.metrics.decisions.WithLabelValues(closedLabel(outcomeLabels, d.Decision), closedLabel(codeLabels, code),
		s.store.policyLabel(d.PolicyID)).Inc()
	s.metrics.latency.Observe(elapsed.Seconds())
	l := s.opts.DecisionLog
	if l == nil {
		return
	}
	rec := &LogRecord{
		DecisionID: d.DecisionID, Time: d.CreatedAt, Passport: req.Passport, AgentID: req.AgentID,
		Hook: req.Hook, Tool: req.ToolName, ThreadID: req.ThreadID, CallID: req.CallID,
		Outcome: d.Decision, Reasons: d.Reasons, PolicyID: d.PolicyID, BundleRevision: d.BundleRevision,
		LatencyMS: float64(elapsed.Nanoseconds()) / 1e6,
		src:       logSource{input: req.ToolInput, modified: d.ModifiedInput, snap: snap},
	}
	if rec.Hook == "" {
		rec.Hook = policy.HookPreToolCall
	}
	if caller != nil {
		rec.Caller = caller.String()
	}
	if d.Metadata != nil {
		rec.src.dryRun, rec.src.warnings = d.Metadata.DryRun, d.Metadata.Warnings
		rec.Risk, rec.Suppressed = d.Metadata.Risk, d.Metadata.Suppressed
	}
	if l.IncludesInput() {
		rec.ToolInput = req.ToolInput
	}
	l.Log(rec)
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) int {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) int {
	switch {
	case s.draining.Load():
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
	case s.store.Len() == 0:
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "no policy bundle loaded yet"})
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Status is the body of GET /v1/status.
type Status struct {
	// Ready is true once a snapshot is loaded (and the server is not draining).
	Ready bool `json:"ready"`
	// Namespaces is the load state of each namespace.
	Namespaces []NamespaceStatus `json:"namespaces"`
	// LoadErrors counts failed bundle loads since start.
	LoadErrors uint64 `json:"load_errors"`
	// Authentication says whether callers must present a token.
	Authentication bool `json:"authentication"`
	// DecisionLog reports the decision log's counters (absent when it is off).
	DecisionLog *DecisionLogStatus `json:"decision_log,omitempty"`
}

// DecisionLogStatus reports the decision log's counters.
type DecisionLogStatus struct {
	Written uint64 `json:"written"`
	Dropped uint64 `json:"dropped"`
}

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) int {
	st := Status{
		Ready:          s.store.Len() > 0 && !s.draining.Load(),
		Namespaces:     s.store.Status(),
		LoadErrors:     s.store.LoadErrors(),
		Authentication: s.opts.Authenticator != nil,
	}
	if l := s.opts.DecisionLog; l != nil {
		st.DecisionLog = &DecisionLogStatus{Written: l.Written(), Dropped: l.Dropped()}
	}
	return writeJSON(w, http.StatusOK, st)
}

// Close flushes and stops the decision log. Call it after the HTTP server has stopped.
func (s *Server) Close() {
	if s.opts.DecisionLog != nil {
		s.opts.DecisionLog.Close()
	}
}

// ListenAndServe listens on addr and serves until ctx is done, then drains in-flight requests
// (bounded by Options.ShutdownTimeout) and closes the decision log.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then shuts down gracefully like ListenAndServe.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := s.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("decision endpoint listening", "addr", ln.Addr().String())
	var serveErr error
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
		s.draining.Store(true)
		timeout := s.opts.ShutdownTimeout
		if timeout <= 0 {
			timeout = DefaultShutdownTimeout
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			serveErr = fmt.Errorf("draining HTTP connections: %w", err)
			_ = hs.Close()
		}
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = errors.Join(serveErr, fmt.Errorf("serving HTTP: %w", err))
		}
	}
	s.Close()
	return serveErr
}

// HTTPServer returns an *http.Server for s with the configured timeouts.
func (s *Server) HTTPServer() *http.Server {
	d := func(v, def time.Duration) time.Duration {
		if v <= 0 {
			return def
		}
		return v
	}
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: d(s.opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       d(s.opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      d(s.opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       d(s.opts.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
