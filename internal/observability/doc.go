// Package observability holds the tests of Tollgate's monitoring assets: the Grafana dashboard and
// the Prometheus alert rules shipped in config/ and charts/tollgate/ are checked against the metrics
// Tollgate really exports.
package observability
