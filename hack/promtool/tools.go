//go:build tools

// Package tools pins promtool, which hack/promtool.sh builds into bin/ for the alert-rule tests
// (internal/observability). It is a module of its own so that Prometheus's dependencies (cloud
// service discovery, TSDB, …) stay out of Tollgate's go.mod.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
