package decider

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// metrics are the transport's Prometheus metrics, registered with the Service's on a registry the
// Server owns.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	authFails prometheus.Counter
}

// newMetrics builds the transport's metrics and registers them with svc's; registration errors
// (impossible for these distinct, well-formed collectors) are returned for logging rather than
// panicking.
func newMetrics(svc *Service) (*metrics, error) {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_http_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		authFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_authentication_failures_total",
			Help: "Requests rejected because the caller's token could not be authenticated.",
		}),
	}
	cs := append(svc.collectors(), m.requests, m.authFails,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	var errs []error
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			errs = append(errs, fmt.Errorf("registering metrics: %w", err))
		}
	}
	return m, errors.Join(errs...)
}

// emit sends a const metric, skipping it if it cannot be built.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
	if m, err := prometheus.NewConstMetric(d, t, v, lv...); err == nil {
		ch <- m
	}
}

// storeCollector reports the Store's state at scrape time.
type storeCollector struct{ store *Store }

var (
	descBundle = prometheus.NewDesc("tollgate_bundle_info",
		"The bundle revision served for a namespace (value 1).", []string{labelNamespace, "revision"}, nil)
	descBundleLoadErrors = prometheus.NewDesc("tollgate_bundle_load_errors_total",
		"Bundles that failed to decode or compile (the last good snapshot kept serving), by namespace.",
		[]string{labelNamespace}, nil)
	descBundleError = prometheus.NewDesc("tollgate_bundle_load_failing",
		"1 when the namespace's latest bundle failed to load and an older snapshot is served.",
		[]string{labelNamespace}, nil)
	descBundleLoadedAt = prometheus.NewDesc("tollgate_bundle_loaded_timestamp_seconds",
		"When the served snapshot of a namespace was loaded (Unix time).", []string{labelNamespace}, nil)
	descSnapshots = prometheus.NewDesc("tollgate_bundles_loaded",
		"Namespaces with a loaded snapshot.", nil, nil)
	descPassports = prometheus.NewDesc("tollgate_passports",
		"Passports of the served snapshots by bundle namespace and effective status (active, suspended, revoked, expired, auto_suspended).",
		[]string{labelNamespace, labelStatus}, nil)
	descPassportSuspended = prometheus.NewDesc("tollgate_passport_suspended",
		"1 for each passport of a served snapshot that is denied every call: status suspended, revoked, expired or auto_suspended (active passports have no series).",
		[]string{labelNamespace, labelPassport, labelStatus}, nil)
	descCounterUp = prometheus.NewDesc("tollgate_counter_store_up",
		"1 while the rate-limit and budget counter store answers (always 1 for the in-memory store).",
		[]string{"backend"}, nil)
	descCounterCalls = prometheus.NewDesc("tollgate_counter_store_calls_total",
		"Counter-store calls: decisions that needed rate-limit or budget counters.", []string{"backend"}, nil)
	descCounterErrors = prometheus.NewDesc("tollgate_counter_store_errors_total",
		"Counter-store calls that failed (each policy's failurePolicy decided the call).", []string{"backend"}, nil)
)

// Status label values besides spec.status: an active passport past its expiresAt, and one
// suspended automatically (spec.autoSuspend) for now.
const (
	statusExpired       = "expired"
	statusAutoSuspended = "auto_suspended"
)

// passportStatuses are the status label values of tollgate_passports, each reported (0 included).
var passportStatuses = []string{policy.StatusActive, policy.StatusSuspended, policy.StatusRevoked, statusExpired, statusAutoSuspended}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBundle
	ch <- descBundleLoadErrors
	ch <- descBundleError
	ch <- descBundleLoadedAt
	ch <- descSnapshots
	ch <- descPassports
	ch <- descPassportSuspended
	ch <- descCounterUp
	ch <- descCounterCalls
	ch <- descCounterErrors
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	emit(ch, descSnapshots, prometheus.GaugeValue, float64(c.store.Len()))
	cs := c.store.CounterStatus()
	up := 0.0
	if cs.Up {
		up = 1
	}
	emit(ch, descCounterUp, prometheus.GaugeValue, up, cs.Backend)
	emit(ch, descCounterErrors, prometheus.CounterValue, float64(cs.Errors), cs.Backend)
	if cs.Shared {
		emit(ch, descCounterCalls, prometheus.CounterValue, float64(cs.Calls), cs.Backend)
	}
	for _, st := range c.store.Status() {
		emit(ch, descBundleLoadErrors, prometheus.CounterValue, float64(st.ErrorCount), st.Namespace)
		failing := 0.0
		if st.LastError != "" {
			failing = 1
		}
		emit(ch, descBundleError, prometheus.GaugeValue, failing, st.Namespace)
		if st.Revision != "" {
			emit(ch, descBundle, prometheus.GaugeValue, 1, st.Namespace, st.Revision)
		}
		if st.LoadedAt != nil {
			emit(ch, descBundleLoadedAt, prometheus.GaugeValue,
				float64(st.LoadedAt.UnixNano())/1e9, st.Namespace)
		}
	}
	now := time.Now()
	for _, ns := range c.store.Namespaces() {
		snap, ok := c.store.Snapshot(ns)
		if !ok {
			continue
		}
		counts := make(map[string]int, len(passportStatuses))
		snap.EachPassport(func(name, status string, expires, autoUntil time.Time) {
			switch {
			case status != policy.StatusActive:
			case !expires.IsZero() && !now.Before(expires):
				status = statusExpired
			case now.Before(autoUntil):
				status = statusAutoSuspended
			}
			status = closedLabel(passportStatusLabels, status)
			counts[status]++
			if status != policy.StatusActive {
				emit(ch, descPassportSuspended, prometheus.GaugeValue, 1, ns, name, status)
			}
		})
		for _, st := range passportStatuses {
			emit(ch, descPassports, prometheus.GaugeValue, float64(counts[st]), ns, st)
		}
	}
}

// passportStatusLabels are the status label's values.
var passportStatusLabels = func() map[string]string {
	m := make(map[string]string, len(passportStatuses))
	for _, s := range passportStatuses {
		m[s] = s
	}
	return m
}()

// prunedCounterVec is a CounterVec whose series for label values that no longer exist (a passport
// or tool that left its bundle) are deleted at scrape time, so that its cardinality follows the
// served bundles instead of growing with their history.
type prunedCounterVec struct {
	vec  *prometheus.CounterVec
	keep func(labels map[string]string) bool
}

// Describe implements prometheus.Collector.
func (p *prunedCounterVec) Describe(ch chan<- *prometheus.Desc) { p.vec.Describe(ch) }

// Collect implements prometheus.Collector: it forwards the series keep accepts and deletes the
// others once the vector's collection is over (deleting during it would deadlock).
func (p *prunedCounterVec) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric, 64)
	go func() {
		p.vec.Collect(all)
		close(all)
	}()
	var stale []map[string]string
	for m := range all {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		labels := make(map[string]string, len(pb.GetLabel()))
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !p.keep(labels) {
			stale = append(stale, labels)
			continue
		}
		ch <- m
	}
	for _, l := range stale {
		p.vec.Delete(l)
	}
}

// MetricsRegistry returns the registry the Server's /metrics serves: the service's and the
// transport's metrics and the Go and process collectors.
func (s *Server) MetricsRegistry() *prometheus.Registry { return s.metrics.reg }

// logCollector reports the decision log's counters per sink at scrape time.
type logCollector struct{ log *DecisionLog }

var (
	descLogDropped = prometheus.NewDesc("tollgate_decision_log_dropped_total",
		"Decision-log records dropped, by sink: queue (the log's buffer was full, no sink got the record), "+
			"stdout, stderr, file (a failed write), http (its buffer was full during an outage, or the receiver rejected a batch).",
		[]string{"sink"}, nil)
	descLogWritten = prometheus.NewDesc("tollgate_decision_log_written_total",
		"Decision-log records written, by sink (http: delivered and acknowledged by the receiver).",
		[]string{"sink"}, nil)
)

// Describe implements prometheus.Collector.
func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLogDropped
	ch <- descLogWritten
}

// Collect implements prometheus.Collector.
func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.log.SinkStats() {
		emit(ch, descLogDropped, prometheus.CounterValue, float64(st.Dropped), st.Name)
		if st.Name != QueueSink {
			emit(ch, descLogWritten, prometheus.CounterValue, float64(st.Written), st.Name)
		}
	}
}
