package decider

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// LogRecord is one line of the decision log.
type LogRecord struct {
	// DecisionID identifies the decision.
	DecisionID string `json:"decision_id"`
	// Time is when the decision was made.
	Time time.Time `json:"time"`
	// Passport is the passport presented ("namespace/name" or name) or "" when only agent_id was.
	Passport string `json:"passport,omitempty"`
	// AgentID is the agent id presented.
	AgentID string `json:"agent_id,omitempty"`
	// Caller is the authenticated ServiceAccount ("namespace/name"), when authentication is on.
	Caller string `json:"caller,omitempty"`
	// Hook is the request's hook.
	Hook string `json:"hook"`
	// Tool is the tool name.
	Tool string `json:"tool,omitempty"`
	// ThreadID and CallID identify the call.
	ThreadID string `json:"thread_id,omitempty"`
	CallID   string `json:"call_id,omitempty"`
	// TraceID and SpanID place the decision in the caller's trace (W3C trace context, lower-case
	// hex): the decision's own span when tracing is on, else the caller's span from its traceparent.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
	// Outcome is allow, deny or modify.
	Outcome string `json:"outcome"`
	// Reasons are the decision's reasons; unless the log opts in to input, a quoted fragment of a
	// message that comes from the arguments is replaced by "[redacted]".
	Reasons []policy.Reason `json:"reasons"`
	// PolicyID is the deciding policy.
	PolicyID string `json:"policy_id"`
	// BundleRevision is the revision of the snapshot that decided.
	BundleRevision string `json:"bundle_revision"`
	// LatencyMS is the time spent deciding, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	// ChangedFields and RemovedFields name the tool-input fields a modify decision set (changed or
	// added) and removed, as dotted paths: names only, never values.
	ChangedFields []string `json:"changed_fields,omitempty"`
	RemovedFields []string `json:"removed_fields,omitempty"`
	// DryRun and Warnings carry DryRun and Warn policies' results (their rewritten input only when
	// the log opts in to input).
	DryRun   []LogPolicyResult `json:"dry_run,omitempty"`
	Warnings []LogPolicyResult `json:"warnings,omitempty"`
	// Risk is the guards' risk assessment of the screened text: levels, risk type and the names of
	// the matched patterns, never the text.
	Risk *policy.RiskAssessment `json:"risk_assessment,omitempty"`
	// Suppressed describes the tool calls a safety termination suppressed (post_llm_call): the
	// detector, the reason field and value, the tool names and their count, never their arguments.
	Suppressed *policy.Suppression `json:"suppressed_tool_calls,omitempty"`
	// ToolInput is the tool's arguments, only when the log opts in.
	ToolInput map[string]any `json:"tool_input,omitempty"`
	// ModifiedInput is a modify decision's rewritten arguments, only when the log opts in.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`

	// src is what the Server decided from; the log's goroutine derives the fields above from it
	// (finish), so that the hot path only copies references.
	src logSource
	// recycle marks a record of the log's pool (DecisionLog.newRecord), which the log reuses once
	// written or dropped.
	recycle bool
}

// LogPolicyResult is what one DryRun or Warn policy decided or would have decided, as logged.
type LogPolicyResult struct {
	// PolicyID is the policy id plus "#rule".
	PolicyID string `json:"policy_id"`
	// Decision is allow, deny or modify.
	Decision string `json:"decision"`
	// Reason is the policy's reason.
	Reason policy.Reason `json:"reason"`
	// ChangedFields and RemovedFields name the fields a modify would have set and removed.
	ChangedFields []string `json:"changed_fields,omitempty"`
	RemovedFields []string `json:"removed_fields,omitempty"`
	// ModifiedInput is the would-be rewritten input, only when the log opts in to input.
	ModifiedInput map[string]any `json:"modified_input,omitempty"`
}

// logSource holds references to a decision's request and results until the log writes them.
type logSource struct {
	input    map[string]any
	modified map[string]any
	dryRun   []policy.PolicyResult
	warnings []policy.PolicyResult
	// snap is the snapshot that decided (nil when none did): its passport's limits tell quoted
	// limit values (e.g. a blocked pattern) from quoted argument values.
	snap *policy.Snapshot
	// span is the trace position of the decision (invalid when the request carried none).
	span trace.SpanContext
}

// DecisionLog writes LogRecords as JSON lines to its sinks from a background goroutine. Log never
// blocks: when the bounded buffer is full the record is dropped and counted. Each record is derived
// (redact.go), masked (mask.go) and encoded once, then handed to every sink (sinks.go): a stream such
// as stdout, a rotating file, an HTTP collector. A sink counts what it wrote and what it dropped.
type DecisionLog struct {
	ch        chan *LogRecord
	sinks     []Sink
	masks     []Mask
	withInput bool
	dropped   atomic.Uint64
	written   atomic.Uint64
	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
	// records recycles the records the Service fills (newRecord).
	records sync.Pool
}

// newRecord returns a zero record from the log's pool; the log reuses it once written or dropped,
// so the caller must not keep it after Log.
func (l *DecisionLog) newRecord() *LogRecord {
	if rec, ok := l.records.Get().(*LogRecord); ok {
		return rec
	}
	return &LogRecord{recycle: true}
}

// release returns a pooled record to the pool, zeroed (its references let go).
func (l *DecisionLog) release(rec *LogRecord) {
	if rec.recycle {
		*rec = LogRecord{recycle: true}
		l.records.Put(rec)
	}
}

// DefaultLogBuffer is the decision log's default buffer size in records.
const DefaultLogBuffer = 8192

// LogConfig configures a DecisionLog.
type LogConfig struct {
	// Sinks receive every record (at least one).
	Sinks []Sink
	// Buffer is the number of records queued for the log's goroutine (DefaultLogBuffer when ≤ 0);
	// records beyond it are dropped and counted (sink "queue").
	Buffer int
	// IncludeInput keeps tool arguments (and modify decisions' rewritten arguments) in the records;
	// without it no argument value is written: modify results name the fields they change, and a
	// reason message that quotes an argument has the quote redacted.
	IncludeInput bool
	// Masks remove or replace fields of every record before any sink sees it (mask.go).
	Masks []Mask
}

// NewDecisionLog starts a log writing to w (one sink named "stream") with a buffer of size records
// (DefaultLogBuffer when ≤ 0); withInput is LogConfig.IncludeInput. Close flushes and stops it.
func NewDecisionLog(w io.Writer, size int, withInput bool) *DecisionLog {
	l, _ := NewDecisionLogWith(LogConfig{Sinks: []Sink{NewWriterSink("stream", w)}, Buffer: size, IncludeInput: withInput})
	return l
}

// NewDecisionLogWith starts a log as cfg says. It fails without a sink.
func NewDecisionLogWith(cfg LogConfig) (*DecisionLog, error) {
	if len(cfg.Sinks) == 0 {
		return nil, errors.New("decision log: no sink")
	}
	size := cfg.Buffer
	if size <= 0 {
		size = DefaultLogBuffer
	}
	l := &DecisionLog{
		ch: make(chan *LogRecord, size), sinks: cfg.Sinks, masks: cfg.Masks,
		withInput: cfg.IncludeInput, stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l, nil
}

// IncludesInput reports whether records keep tool arguments.
func (l *DecisionLog) IncludesInput() bool { return l.withInput }

// Log queues rec, or drops and counts it when the buffer is full or the log is closed.
func (l *DecisionLog) Log(rec *LogRecord) {
	if l.closed.Load() {
		l.dropped.Add(1)
		l.release(rec)
		return
	}
	select {
	case l.ch <- rec:
	default:
		l.dropped.Add(1)
		l.release(rec)
	}
}

// Dropped returns how many records were dropped: in the queue, or by any sink.
func (l *DecisionLog) Dropped() uint64 {
	n := l.dropped.Load()
	for _, s := range l.sinks {
		n += s.Stats().Dropped
	}
	return n
}

// Written returns how many records were encoded and handed to the sinks.
func (l *DecisionLog) Written() uint64 { return l.written.Load() }

// QueueSink is the sink label of the records dropped before any sink saw them (the log's buffer
// was full).
const QueueSink = "queue"

// SinkStats returns each sink's counters, after the queue's (name QueueSink, drops only).
func (l *DecisionLog) SinkStats() []SinkStats {
	out := make([]SinkStats, 0, len(l.sinks)+1)
	out = append(out, SinkStats{Name: QueueSink, Dropped: l.dropped.Load()})
	for _, s := range l.sinks {
		out = append(out, s.Stats())
	}
	return out
}

func (l *DecisionLog) run() {
	defer close(l.done)
	// Sinks buffer lines and are flushed every flushInterval, so a busy endpoint does not pay a
	// write system call per decision.
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	var line []byte
	dirty := false
	write := func(rec *LogRecord) {
		defer l.release(rec)
		finish(rec, l.withInput)
		var err error
		line, err = appendLogRecord(line[:0], rec)
		if err == nil && len(l.masks) > 0 {
			line, err = applyMasks(line, l.masks)
		}
		if err != nil {
			l.dropped.Add(1)
			return
		}
		for _, s := range l.sinks {
			s.Write(line)
		}
		l.written.Add(1)
		dirty = true
	}
	flush := func() {
		for _, s := range l.sinks {
			s.Flush()
		}
		dirty = false
	}
	for {
		select {
		case rec := <-l.ch:
			write(rec)
		case <-tick.C:
			if dirty {
				flush()
			}
		case <-l.stop:
			for {
				select {
				case rec := <-l.ch:
					write(rec)
				default:
					for _, s := range l.sinks {
						s.Close()
					}
					return
				}
			}
		}
	}
}

// flushInterval bounds how long a written record may sit in a sink's buffer.
const flushInterval = 100 * time.Millisecond

// Close stops accepting records, writes the queued ones and closes the sinks (each flushes what it
// holds, within its own bound). It is idempotent.
func (l *DecisionLog) Close() {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.stop)
	})
	<-l.done
}
