package controller

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	descBundlePublished = prometheus.NewDesc("tollgate_bundle_published_info",
		"The bundle revision the manager last stored for a namespace (value 1); deciders should serve the same revision.",
		[]string{"namespace", "revision"}, nil)
	descBundleWriteFailing = prometheus.NewDesc("tollgate_bundle_write_failing",
		"1 when the manager's last attempt to build or store the namespace's bundle failed (the stored bundle stays).",
		[]string{"namespace"}, nil)
)

// bundleMetrics reports the bundle writer's state at scrape time. Only the leader writes bundles, so
// only the leader reports series. It is registered once with controller-runtime's registry; Setup
// points it at its bundle state (the latest Setup wins when one process runs several managers, as
// tests and the demo do).
type bundleMetrics struct {
	state atomic.Pointer[bundleState]
}

var bundleCollector = &bundleMetrics{}

func init() {
	metrics.Registry.MustRegister(bundleCollector)
}

// Describe implements prometheus.Collector.
func (m *bundleMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBundlePublished
	ch <- descBundleWriteFailing
}

// Collect implements prometheus.Collector.
func (m *bundleMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.state.Load()
	if s == nil {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for ns, rec := range s.namespaces {
		if rec.revision != "" {
			if pm, err := prometheus.NewConstMetric(descBundlePublished, prometheus.GaugeValue, 1, ns, rec.revision); err == nil {
				ch <- pm
			}
		}
		failing := 0.0
		if rec.writeErr != "" {
			failing = 1
		}
		if pm, err := prometheus.NewConstMetric(descBundleWriteFailing, prometheus.GaugeValue, failing, ns); err == nil {
			ch <- pm
		}
	}
}
