package decider

import (
	"net/http"
	"path"
	"strings"
)

// Route names used as metric labels.
const (
	routeDecide  = "decide"
	routeBatch   = "decide_batch"
	routeVerify  = "verify"
	routeHealth  = "healthz"
	routeReady   = "readyz"
	routeMetrics = "metrics"
	routeStatus  = "status"
	routeJWKS    = "jwks"
	routeOther   = "other"
)

// verifyPrefix is the path of the verify route up to its {policy_id} segment.
const verifyPrefix = "/api/verify/policy/"

// Answers of paths no route serves.
const (
	noRouteHint        = ": want POST /v1/decide, POST /v1/decide:batch, POST " + verifyPrefix + "{policy_id}, GET /healthz, /readyz, /metrics, /v1/status or /.well-known/jwks.json"
	metricsNoRouteHint = ": this listener serves GET /metrics only"
)

// routes builds the route table. Each route is a "METHOD /path" pattern whose handler is wrapped by
// instrument (tollgate_http_requests_total under the route's label); its path without a method
// answers every other method with a 405 (Allow and a JSON error body); "/" answers the rest
// (fallback): a 404, or the verify route's own answers under its prefix.
//
// The POST routes run, in order: instrument, throttle (the in-flight body bound, inflight.go),
// authenticated (401/503), withBody (415/413) and the handler; the verify route checks its policy
// id (404) before authenticating.
func (s *Server) routes() {
	decision := func(h callHandler) http.Handler {
		return s.throttle(s.authenticated(s.withBody(h)))
	}
	verify := s.throttle(checkPolicyID(s.authenticated(s.withBody(s.handleVerify))))

	s.mux = http.NewServeMux()
	s.decide = s.handle(s.mux, decidePattern, routeDecide, decision(s.handleDecide))
	s.handle(s.mux, "POST /v1/decide:batch", routeBatch, decision(s.handleBatch))
	s.handle(s.mux, "POST "+verifyPrefix+"{policy_id}", routeVerify, verify)
	s.handle(s.mux, "GET /healthz", routeHealth, http.HandlerFunc(s.handleHealth))
	s.handle(s.mux, "GET /readyz", routeReady, http.HandlerFunc(s.handleReady))
	if !s.opts.SeparateMetrics {
		s.handle(s.mux, "GET /metrics", routeMetrics, s.metricsH)
	}
	s.handle(s.mux, "GET /v1/status", routeStatus, http.HandlerFunc(s.handleStatus))
	s.handle(s.mux, "GET /.well-known/jwks.json", routeJWKS, http.HandlerFunc(s.handleJWKS))
	// A path under the verify prefix that is not one {policy_id} segment (empty, or holding a
	// slash) is the verify route's: its method check, then a 404 naming policy_id.
	verifyAny := s.instrument(routeVerify, verify)
	verifyOther := s.instrument(routeVerify, methodNotAllowed(http.MethodPost))
	noRoute := s.instrument(routeOther, notFound(noRouteHint))
	s.fallback = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, verifyPrefix)
		switch {
		case !ok:
			noRoute.ServeHTTP(w, r)
		case r.Method != http.MethodPost:
			verifyOther.ServeHTTP(w, r)
		default:
			r.SetPathValue("policy_id", id)
			verifyAny.ServeHTTP(w, r)
		}
	})
	s.mux.Handle("/", s.fallback)

	s.metricsMux = http.NewServeMux()
	s.handle(s.metricsMux, "GET /metrics", routeMetrics, s.metricsH)
	s.metricsFallback = s.instrument(routeOther, notFound(metricsNoRouteHint))
	s.metricsMux.Handle("/", s.metricsFallback)
}

// handle registers pattern ("METHOD /path") on mux for h, counted under route, and the bare path
// for the other methods (405), and returns the handler registered for pattern. Patterns of s.mux
// are recorded in s.patterns.
func (s *Server) handle(mux *http.ServeMux, pattern, route string, h http.Handler) http.Handler {
	method, p, _ := strings.Cut(pattern, " ")
	ih := s.instrument(route, h)
	mux.Handle(pattern, ih)
	mux.Handle(p, s.instrument(route, methodNotAllowed(method)))
	if mux == s.mux {
		s.patterns = append(s.patterns, pattern)
	}
	return ih
}

// decidePattern is the route of POST /v1/decide.
const decidePattern = "POST /v1/decide"

// ServeHTTP answers r through the route table. POST /v1/decide, by far the busiest route, goes
// straight to its handler, the one the route table gives that method and path
// (TestDecideRouteShortcut).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isDecideRoute(r) {
		r.Pattern = decidePattern
		s.decide.ServeHTTP(w, r)
		return
	}
	dispatch(s.mux, s.fallback, w, r)
}

// isDecideRoute reports whether r is POST /v1/decide, its path written without escapes.
func isDecideRoute(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/v1/decide" && r.URL.RawPath == ""
}

// MetricsHandler serves GET /metrics alone (404 elsewhere), for a metrics listener of its own (see
// Options.SeparateMetrics).
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dispatch(s.metricsMux, s.metricsFallback, w, r)
	})
}

// dispatch hands r to mux, routed by its decoded path as the decision API always has been: a path
// with escapes is routed as the path they spell, and a path mux would redirect (a "." or ".."
// segment, a doubled slash: not canonical) goes to fallback, since no route of the API redirects.
func dispatch(mux *http.ServeMux, fallback http.Handler, w http.ResponseWriter, r *http.Request) {
	if r.URL.RawPath != "" {
		r2 := r.WithContext(r.Context())
		u := *r.URL
		u.RawPath = ""
		r2.URL = &u
		r = r2
	}
	if !canonicalPath(r.URL.Path) {
		fallback.ServeHTTP(w, r)
		return
	}
	mux.ServeHTTP(w, r)
}

// canonicalPath reports whether http.ServeMux serves p without redirecting it: p is rooted and
// cleaning it (keeping a final slash) changes nothing.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		return len(c) == len(p)-1 && p[:len(c)] == c
	}
	return c == p
}
