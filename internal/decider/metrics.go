package decider

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the Server's Prometheus metrics, registered on a registry the Server owns.
type metrics struct {
	reg       *prometheus.Registry
	decisions *prometheus.CounterVec
	latency   prometheus.Histogram
	requests  *prometheus.CounterVec
	authFails prometheus.Counter
}

// newMetrics builds and registers the metrics; registration errors (impossible for these distinct,
// well-formed collectors) are returned for logging rather than panicking.
func newMetrics(store *Store, log *DecisionLog) (*metrics, error) {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_decisions_total",
			Help: "Decisions made, by outcome (allow, deny, modify), first reason code (an OAP code, else other) and deciding policy (a policy id of a served snapshot, else other).",
		}, []string{"outcome", "code", "policy"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tollgate_decision_duration_seconds",
			Help:    "Time to decide one request, from decoded request to decision (authentication included).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_http_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		authFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_authentication_failures_total",
			Help: "Requests rejected because the caller's token could not be authenticated.",
		}),
	}
	cs := []prometheus.Collector{m.decisions, m.latency, m.requests, m.authFails,
		&storeCollector{store: store},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if log != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_decision_log_dropped_total",
			Help: "Decision-log records dropped because the log buffer was full.",
		}, func() float64 { return float64(log.Dropped()) }), prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tollgate_decision_log_written_total",
			Help: "Decision-log records written.",
		}, func() float64 { return float64(log.Written()) }))
	}
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
		"The bundle revision served for a namespace (value 1).", []string{"namespace", "revision"}, nil)
	descBundleLoadErrors = prometheus.NewDesc("tollgate_bundle_load_errors_total",
		"Bundles that failed to decode or compile (the last good snapshot kept serving), by namespace.",
		[]string{"namespace"}, nil)
	descBundleError = prometheus.NewDesc("tollgate_bundle_load_failing",
		"1 when the namespace's latest bundle failed to load and an older snapshot is served.",
		[]string{"namespace"}, nil)
	descBundleLoadedAt = prometheus.NewDesc("tollgate_bundle_loaded_timestamp_seconds",
		"When the served snapshot of a namespace was loaded (Unix time).", []string{"namespace"}, nil)
	descSnapshots = prometheus.NewDesc("tollgate_bundles_loaded",
		"Namespaces with a loaded snapshot.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBundle
	ch <- descBundleLoadErrors
	ch <- descBundleError
	ch <- descBundleLoadedAt
	ch <- descSnapshots
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	emit(ch, descSnapshots, prometheus.GaugeValue, float64(c.store.Len()))
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
}
