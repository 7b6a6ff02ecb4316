package decider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Service is the decision service. Every way into Tollgate's decisions goes through it: the HTTP
// transport (Server), `tollgate eval` and `tollgate test`, the MCP proxy and the tests. For each
// request it finds the snapshot that answers (the passport's namespace, or the caller's one
// passport when the request names none), hands the request and the authenticated caller to the
// engine (which checks the caller against the passport's spec.subjects.serviceAccounts), and
// records the outcome: the decision metrics and the decision log. It is safe for concurrent use.
type Service struct {
	store     *Store
	defaultNS string
	log       *DecisionLog
	reporter  *Reporter
	// tracer records a span per decision; nil when tracing is off (tracing.go).
	tracer trace.Tracer

	decisions *prometheus.CounterVec
	latency   prometheus.Histogram
	// passportDenials, toolDenials and evalErrors are labelled from closed sets too (labels.go).
	passportDenials *prometheus.CounterVec
	toolDenials     *prometheus.CounterVec
	evalErrors      *prometheus.CounterVec

	// idPrefix and seq number the denies the service makes itself (no snapshot to ask).
	idPrefix string
	seq      atomic.Uint64
}

// ServiceOptions configures a Service. The zero value resolves bare passport names only when they
// are unique and keeps no decision log.
type ServiceOptions struct {
	// DefaultNamespace resolves a bare passport name; when empty a bare name must be unique among
	// the loaded namespaces.
	DefaultNamespace string
	// DecisionLog receives one record per decision; nil disables it. Close closes it.
	DecisionLog *DecisionLog
	// Reporter counts every decision for the replica's DeciderReport; nil disables it.
	Reporter *Reporter
	// TracerProvider records a span per decision (tracing.go); nil turns tracing off.
	TracerProvider trace.TracerProvider
}

// NewService returns a service deciding from store's snapshots.
func NewService(store *Store, opts ServiceOptions) *Service {
	return &Service{
		store:     store,
		defaultNS: opts.DefaultNamespace,
		log:       opts.DecisionLog,
		reporter:  opts.Reporter,
		tracer:    newTracer(opts.TracerProvider),
		idPrefix:  randomPrefix(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_decisions_total",
			Help: "Decisions made, by outcome (allow, deny, modify), first reason code (an OAP code, else other) and deciding policy (a policy id of a served snapshot, else other).",
		}, []string{"outcome", "code", "policy"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tollgate_decision_duration_seconds",
			Help:    "Time to decide one request, from decoded request to decision (authentication included).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1},
		}),
		passportDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_passport_denials_total",
			Help: "Deny decisions by bundle namespace and passport (a passport of that namespace's served snapshot, else other).",
		}, []string{labelNamespace, labelPassport}),
		toolDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_tool_denials_total",
			Help: "Deny decisions by bundle namespace and tool (a built-in tool name or one the namespace's policies name literally, else other).",
		}, []string{labelNamespace, labelTool}),
		evalErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_evaluation_errors_total",
			Help: "Policy evaluations that failed (CEL errors, external evaluator failures and timeouts), whatever the policy's failurePolicy and enforcementAction, by policy.",
		}, []string{"policy"}),
	}
}

func randomPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16) + "-s"
	}
	return hex.EncodeToString(b[:]) + "-s"
}

// collectors are the service's metrics: decisions by outcome, their latency, the store's load
// state and the decision log's counters. The transport registers them beside its own.
func (s *Service) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{s.decisions, s.latency, s.evalErrors, &storeCollector{store: s.store},
		&prunedCounterVec{vec: s.passportDenials, keep: func(l map[string]string) bool {
			return s.store.knownPassport(l[labelNamespace], l[labelPassport])
		}},
		&prunedCounterVec{vec: s.toolDenials, keep: func(l map[string]string) bool {
			return s.store.knownPassport(l[labelNamespace], labelOther) && s.store.knownTool(l[labelNamespace], l[labelTool])
		}},
	}
	if l := s.log; l != nil {
		cs = append(cs, &logCollector{log: l})
	}
	return cs
}

// Decide answers one request for caller (nil when authentication is off). req must be valid (see
// DecodeRequest and ValidateRequest); Decide sets req.Caller to caller and, when req names no
// passport, req.Passport to the caller's one passport. The error, a *RequestError, means the
// request itself is unusable (HTTP answers 400): it names no passport and the caller has none or
// several, or a bare passport name is ambiguous or missing. Every other problem (no bundle for the
// namespace, an unknown passport, a caller the passport does not list, …) is a deny decision.
func (s *Service) Decide(ctx context.Context, req *policy.Request, caller *Caller) (*policy.Decision, error) {
	d, _, rerr := s.decide(ctx, req, caller, "")
	if rerr != nil {
		return nil, rerr
	}
	return d, nil
}

// DecideBatch answers reqs in order for caller, as Decide does each. The first unusable request
// refuses the batch: its *RequestError names the field as requests[i].passport.
func (s *Service) DecideBatch(ctx context.Context, reqs []policy.Request, caller *Caller) ([]*policy.Decision, error) {
	ds := make([]*policy.Decision, len(reqs))
	for i := range reqs {
		d, _, rerr := s.decide(ctx, &reqs[i], caller, "requests["+strconv.Itoa(i)+"].")
		if rerr != nil {
			return nil, rerr
		}
		ds[i] = d
	}
	return ds, nil
}

// Verify answers an OAP verify request (POST /api/verify/policy/{policy_id}, decoded with its
// policy pack into req) as Decide does, and returns the OAP passport id the decision was made for:
// the request's agent id, else the effective agent id of the passport it named ("" when unknown).
func (s *Service) Verify(ctx context.Context, req *policy.Request, caller *Caller) (*policy.Decision, string, error) {
	d, snap, rerr := s.decide(ctx, req, caller, "")
	if rerr != nil {
		return nil, "", rerr
	}
	passportID := req.AgentID
	if passportID == "" && snap != nil {
		if p, ok := snap.Passport(req.Passport); ok {
			passportID = effectiveAgentID(p)
		}
	}
	return d, passportID, nil
}

func effectiveAgentID(p policy.Passport) string {
	if p.Spec.AgentID != "" {
		return p.Spec.AgentID
	}
	return p.UID
}

// decide finds the snapshot, decides and records the decision; it also returns the snapshot that
// answered (nil when none did). Field paths of a *RequestError start with fieldPrefix.
func (s *Service) decide(ctx context.Context, req *policy.Request, caller *Caller, fieldPrefix string) (*policy.Decision, *policy.Snapshot, *RequestError) {
	ctx, span := s.startDecisionSpan(ctx)
	d, snap, rerr := s.decideIn(ctx, req, caller, fieldPrefix)
	endDecisionSpan(span, req, caller, d, rerr)
	return d, snap, rerr
}

// decideIn is decide inside the decision's span (if any).
func (s *Service) decideIn(ctx context.Context, req *policy.Request, caller *Caller, fieldPrefix string) (*policy.Decision, *policy.Snapshot, *RequestError) {
	start := time.Now()
	req.Caller = caller
	if req.Passport == "" && req.AgentID == "" {
		if rerr := s.passportForCaller(req, caller, fieldPrefix); rerr != nil {
			return nil, nil, rerr
		}
	}
	var d policy.Decision
	snap, err := s.store.resolve(req, s.defaultNS)
	switch err.(type) {
	case nil:
		d = snap.Decide(ctx, *req)
	case errNoPassport:
		return nil, nil, fieldErr(ErrCodeMissingField, fieldPrefix+"passport", "%s", err.Error())
	case errAmbiguous:
		return nil, nil, fieldErr(ErrCodeInvalidField, fieldPrefix+"passport", "%s", err.Error())
	default: // no bundle for the namespace, or nowhere to be found
		d = s.ownDecision(start, policy.CodePassportNotFound, err.Error())
	}
	s.record(ctx, &d, req, caller, time.Since(start), snap)
	return &d, snap, nil
}

// ownDecision is a deny the service makes itself, when no snapshot can answer. It is never
// cacheable.
func (s *Service) ownDecision(now time.Time, code, msg string) policy.Decision {
	return policy.Decision{
		DecisionID: s.idPrefix + strconv.FormatUint(s.seq.Add(1), 16),
		Allow:      false,
		Decision:   policy.DecisionDeny,
		Reasons:    []policy.Reason{{Code: code, Message: msg}},
		CreatedAt:  now,
	}
}

// record counts the decision and queues its log record. Metric labels come from closed sets (see
// labels.go), never from the request; the log record carries argument values only when the log opts
// in (see redact.go).
func (s *Service) record(ctx context.Context, d *policy.Decision, req *policy.Request, caller *Caller, elapsed time.Duration, snap *policy.Snapshot) {
	code := ""
	if len(d.Reasons) > 0 {
		code = d.Reasons[0].Code
	}
	s.decisions.WithLabelValues(closedLabel(outcomeLabels, d.Decision), closedLabel(codeLabels, code),
		s.store.policyLabel(d.PolicyID)).Inc()
	s.latency.Observe(elapsed.Seconds())
	if d.Decision == policy.DecisionDeny {
		ns, passport := passportLabels(snap, req)
		s.passportDenials.WithLabelValues(ns, passport).Inc()
		tool := labelOther
		if snap != nil {
			tool = s.store.toolLabel(ns, req.ToolName)
		}
		s.toolDenials.WithLabelValues(ns, tool).Inc()
	}
	s.countEvalErrors(d, code)
	s.reporter.count(snap, d, req)
	l := s.log
	if l == nil {
		return
	}
	rec := l.newRecord()
	*rec = LogRecord{
		DecisionID: d.DecisionID, Time: d.CreatedAt, Passport: req.Passport, AgentID: req.AgentID,
		Hook: req.Hook, Tool: req.ToolName, ThreadID: req.ThreadID, CallID: req.CallID,
		Outcome: d.Decision, Reasons: d.Reasons, PolicyID: d.PolicyID, BundleRevision: d.BundleRevision,
		LatencyMS: float64(elapsed.Nanoseconds()) / 1e6,
		src: logSource{input: req.ToolInput, modified: d.ModifiedInput, snap: snap,
			span: trace.SpanContextFromContext(ctx)},
		recycle: rec.recycle,
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

// countEvalErrors counts the failed evaluations a decision reports: its own reason when the failure
// denied, and the dry-run results and warnings of policies that failed open or only ran dry.
func (s *Service) countEvalErrors(d *policy.Decision, code string) {
	if code == policy.CodeEvaluatorError {
		s.evalErrors.WithLabelValues(s.store.policyLabel(d.PolicyID)).Inc()
	}
	if d.Metadata == nil {
		return
	}
	for _, l := range [][]policy.PolicyResult{d.Metadata.DryRun, d.Metadata.Warnings} {
		for i := range l {
			if l[i].Reason.Code == policy.CodeEvaluatorError {
				s.evalErrors.WithLabelValues(s.store.policyLabel(l[i].PolicyID)).Inc()
			}
		}
	}
}

// Close flushes and stops the decision log. Call it once nothing decides any more.
func (s *Service) Close() {
	if s.log != nil {
		s.log.Close()
	}
}
