package decider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/internal/counters"
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
	// the loaded namespaces (ServiceOptions.DefaultNamespace).
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
	// TracerProvider records a span per decision, a child of the caller's W3C traceparent (see
	// tracing.go); nil turns tracing off.
	TracerProvider trace.TracerProvider
	// Logger receives operational messages (default slog.Default()).
	Logger *slog.Logger
	// HTTP server limits for ListenAndServe and Serve (defaults above).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration
	// SeparateMetrics leaves /metrics out of the Server's routes (404): serve MetricsHandler on a
	// listener of its own instead.
	SeparateMetrics bool
	// Reporter counts decisions for the replica's DeciderReport (report.go); nil disables it.
	Reporter *Reporter
	// Signer signs every decision answered and serves its public keys at /.well-known/jwks.json
	// (signing.go); nil answers unsigned decisions.
	Signer *Signer
}

// Server is the decision service's HTTP transport, an http.Handler: POST /v1/decide, POST
// /v1/decide:batch, POST /api/verify/policy/{policy_id}, GET /healthz, /readyz, /metrics and
// /v1/status. Its routes are http.ServeMux patterns (routes.go) whose handlers decode the request,
// call the Service and encode its answer; middleware (middleware.go, inflight.go) counts the
// answers, bounds the bodies in flight, authenticates the caller and reads the body within its
// limit.
type Server struct {
	svc      *Service
	store    *Store
	opts     Options
	log      *slog.Logger
	metrics  *metrics
	metricsH http.Handler
	draining atomic.Bool
	bufs     sync.Pool
	inflight *inFlight

	// mux routes the decision API and metricsMux the metrics listener (MetricsHandler); patterns
	// are mux's registered patterns, in registration order.
	mux, metricsMux *http.ServeMux
	patterns        []string
	// fallback answers the paths mux would redirect, and metricsFallback those of metricsMux.
	fallback, metricsFallback http.Handler
	// decide is mux's handler of POST /v1/decide.
	decide http.Handler
}

// NewServer returns a Server answering from store's snapshots through a Service of its own (see
// Service).
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
	svc := NewService(store, ServiceOptions{DefaultNamespace: opts.DefaultNamespace, DecisionLog: opts.DecisionLog,
		Reporter: opts.Reporter, TracerProvider: opts.TracerProvider})
	s := &Server{svc: svc, store: store, opts: opts, log: opts.Logger,
		inflight: newInFlight(opts.MaxInFlightBytes, opts.InFlightWait)}
	m, err := newMetrics(svc)
	if err != nil {
		s.log.Error("metrics registration failed", "err", err)
	}
	s.metrics = m
	s.metricsH = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	s.routes()
	return s
}

// Service returns the decision service behind the transport, for other transports to share (its
// metrics and decision log).
func (s *Server) Service() *Service { return s.svc }

// errorBody is the body of every 4xx answer.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, e *RequestError) {
	writeJSON(w, status, struct {
		Error errorBody `json:"error"`
	}{errorBody{Code: e.Code, Message: e.Error(), Field: e.Field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// Only values of our own types are written; fall back to a fixed error.
		status = http.StatusInternalServerError
		data = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	writeRaw(w, status, append(data, '\n'))
}

var jsonContentType = []string{"application/json"}

func writeRaw(w http.ResponseWriter, status int, data []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func asRequestError(err error) *RequestError {
	var re *RequestError
	if errors.As(err, &re) {
		return re
	}
	return &RequestError{Code: ErrCodeInvalidJSON, Message: err.Error()}
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

// handleDecide answers POST /v1/decide.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request, caller *Caller, body []byte) {
	req := new(policy.Request)
	if err := decodeRequest(body, req); err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	d, err := s.svc.Decide(s.remoteParent(r), req, caller)
	if err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	buf := s.getBuf()
	defer s.putBuf(buf)
	b, err := appendDecision((*buf)[:0], d)
	*buf = b
	if err == nil && s.opts.Signer != nil {
		b, err = s.opts.Signer.Sign(b)
	}
	if err != nil {
		writeJSON(w, http.StatusOK, d)
		return
	}
	writeRaw(w, http.StatusOK, append(b, '\n'))
}

// handleBatch answers POST /v1/decide:batch: every request is decoded and validated before any is
// decided.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, caller *Caller, body []byte) {
	var br batchRequest
	if err := decodeJSON(body, &br, ""); err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	if br.Requests == nil {
		writeError(w, http.StatusBadRequest, fieldErr(ErrCodeMissingField, "requests", "required: an array of decision requests"))
		return
	}
	if len(br.Requests) > s.opts.MaxBatch {
		writeError(w, http.StatusBadRequest, fieldErr(ErrCodeBatchTooLarge, "requests", "%d requests exceed the batch limit of %d", len(br.Requests), s.opts.MaxBatch))
		return
	}
	reqs := make([]policy.Request, len(br.Requests))
	for i, raw := range br.Requests {
		prefix := "requests[" + strconv.Itoa(i) + "]"
		if err := decodeJSON(raw, &reqs[i], prefix); err != nil {
			writeError(w, http.StatusBadRequest, asRequestError(err))
			return
		}
		if err := ValidateRequest(&reqs[i], prefix); err != nil {
			writeError(w, http.StatusBadRequest, asRequestError(err))
			return
		}
	}
	ctx := s.remoteParent(r)
	if t := s.svc.tracer; t != nil {
		var span trace.Span
		ctx, span = t.Start(ctx, SpanDecideBatch, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(AttrBatchSize.Int(len(reqs))))
		defer span.End()
	}
	ds, err := s.svc.DecideBatch(ctx, reqs, caller)
	if err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	b := append(make([]byte, 0, 512*len(ds)+16), `{"decisions":[`...)
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = s.appendSigned(b, d); err != nil {
			writeJSON(w, http.StatusOK, batchResponse{Decisions: ds})
			return
		}
	}
	writeRaw(w, http.StatusOK, append(b, "]}\n"...))
}

// handleVerify answers POST /api/verify/policy/{policy_id} (the id was checked by checkPolicyID).
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request, caller *Caller, body []byte) {
	req, err := decodeVerify(body, r.PathValue("policy_id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	d, passportID, err := s.svc.Verify(s.remoteParent(r), &req, caller)
	if err != nil {
		writeError(w, http.StatusBadRequest, asRequestError(err))
		return
	}
	b := append(make([]byte, 0, 1024), `{"decision":{`...)
	b, err = appendDecisionFields(b, d)
	if err != nil {
		writeJSON(w, http.StatusOK, verifyResponse{Decision: verifyDecision{Decision: d, PassportID: passportID}})
		return
	}
	if passportID != "" {
		b = append(b, `,"passport_id":`...)
		b = appendString(b, passportID)
	}
	b = append(b, '}')
	if s.opts.Signer != nil {
		const prefix = len(`{"decision":`)
		signed, err := s.opts.Signer.Sign(b[prefix:])
		if err != nil {
			writeJSON(w, http.StatusOK, verifyResponse{Decision: verifyDecision{Decision: d, PassportID: passportID}})
			return
		}
		b = append(b[:prefix], signed...)
	}
	writeRaw(w, http.StatusOK, append(b, "}\n"...))
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
	case s.store.Len() == 0:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "no policy bundle loaded yet"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
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
	// Counters reports where rate-limit and budget counters live and whether that store answers.
	Counters counters.Status `json:"counters"`
}

// DecisionLogStatus reports the decision log's counters.
type DecisionLogStatus struct {
	// Written counts the records handed to the sinks.
	Written uint64 `json:"written"`
	// Dropped counts the records dropped, in the log's buffer or by any sink.
	Dropped uint64 `json:"dropped"`
	// Sinks are each sink's counters, after the buffer's (sink "queue").
	Sinks []SinkStats `json:"sinks"`
}

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) {
	st := Status{
		Ready:          s.store.Len() > 0 && !s.draining.Load(),
		Namespaces:     s.store.Status(),
		LoadErrors:     s.store.LoadErrors(),
		Authentication: s.opts.Authenticator != nil,
		Counters:       s.store.CounterStatus(),
	}
	if l := s.svc.log; l != nil {
		st.DecisionLog = &DecisionLogStatus{Written: l.Written(), Dropped: l.Dropped(), Sinks: l.SinkStats()}
	}
	writeJSON(w, http.StatusOK, st)
}

// Close flushes and stops the decision log. Call it after the HTTP server has stopped.
func (s *Server) Close() {
	s.svc.Close()
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
