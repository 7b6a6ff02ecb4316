package decider

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// statusWriter remembers the status a handler answered with, for instrument.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status written.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when the handler writes without a status.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer (http.ResponseController, http.MaxBytesReader).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// unwrapWriter returns the writer net/http gave the handler, under any statusWriter.
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		sw, ok := w.(*statusWriter)
		if !ok {
			return w
		}
		w = sw.ResponseWriter
	}
}

// instrument counts every answer of h in tollgate_http_requests_total, by route and the status h
// wrote (200 when it wrote none).
func (s *Server) instrument(route string, h http.Handler) http.Handler {
	// The route's 200 series, looked up once (on its first answer, so that /metrics shows no series
	// for answers never given); the vector's series are never deleted.
	ok := sync.OnceValue(func() prometheus.Counter { return s.metrics.requests.WithLabelValues(route, "200") })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		code := sw.status
		if code == 0 || code == http.StatusOK {
			ok().Inc()
			return
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	})
}

// methodNotAllowed answers 405 with Allow and a JSON error body; method is the route's (POST, or
// GET which also allows HEAD).
func methodNotAllowed(method string) http.Handler {
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, &RequestError{Code: ErrCodeMethodNotAllowed,
			Message: "method " + r.Method + " not allowed: use " + method})
	})
}

// notFound answers 404 "no route <path><hint>".
func notFound(hint string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &RequestError{Code: ErrCodeNotFound, Message: "no route " + clip(r.URL.Path) + hint})
	})
}

// checkPolicyID answers 404 naming policy_id when the verify route's {policy_id} is empty, holds a
// slash or is too long, before anything else is read.
func checkPolicyID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("policy_id")
		if id == "" || strings.Contains(id, "/") || len(id) > maxNameLen {
			writeError(w, http.StatusNotFound, fieldErr(ErrCodeNotFound, "policy_id", "want %s{policy_id}", verifyPrefix))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// callerHandler handles a request whose caller is authenticated (nil when authentication is off).
type callerHandler func(w http.ResponseWriter, r *http.Request, caller *Caller)

// callHandler handles an admitted POST: its authenticated caller and its body.
type callHandler func(w http.ResponseWriter, r *http.Request, caller *Caller, body []byte)

// authenticated authenticates the bearer token (Options.Authenticator) and hands the caller to
// next; it answers 401 for a missing or invalid token and 503 (Retry-After) when the token cannot be
// checked right now. Without an Authenticator every caller is nil.
func (s *Server) authenticated(next callerHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Authenticator == nil {
			next(w, r, nil)
			return
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
			writeError(w, http.StatusUnauthorized, &RequestError{Code: ErrCodeUnauthenticated,
				Field: "Authorization", Message: "a bearer ServiceAccount token with audience " + DefaultAudience + " is required"})
			return
		}
		c, err := s.opts.Authenticator.Authenticate(r.Context(), token)
		if err != nil {
			if errors.Is(err, ErrUnauthenticated) {
				s.metrics.authFails.Inc()
				w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate", error="invalid_token"`)
				writeError(w, http.StatusUnauthorized, &RequestError{Code: ErrCodeUnauthenticated,
					Field: "Authorization", Message: err.Error()})
				return
			}
			s.log.Warn("authentication unavailable", "err", err)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, &RequestError{Code: ErrCodeUnavailable,
				Message: "cannot authenticate the caller right now: " + err.Error()})
			return
		}
		next(w, r, &c)
	})
}

// withBody reads the request body within Options.MaxBodyBytes and checks its media type, answering
// 415, 413 or 400 itself, and hands it to next.
func (s *Server) withBody(next callHandler) callerHandler {
	return func(w http.ResponseWriter, r *http.Request, caller *Caller) {
		body, status, rerr := s.readBody(w, r)
		if rerr != nil {
			writeError(w, status, rerr)
			return
		}
		next(w, r, caller, body)
	}
}

// readBody reads the request body within the size limit and checks its media type.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *RequestError) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" { // (what every client sends needs no parsing)
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, http.StatusUnsupportedMediaType, &RequestError{Code: ErrCodeUnsupportedMedia, Message: "Content-Type " + clip(ct) + " not supported: send application/json"}
		}
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge, tooLarge(s.opts.MaxBodyBytes)
	}
	// The writer net/http gave the handler: MaxBytesReader tells it to close the connection
	// after answering a body that is too large.
	body, err := io.ReadAll(http.MaxBytesReader(unwrapWriter(w), r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, tooLarge(s.opts.MaxBodyBytes)
		}
		return nil, http.StatusBadRequest, &RequestError{Code: ErrCodeInvalidJSON, Message: "reading the request body: " + err.Error()}
	}
	return body, 0, nil
}

func tooLarge(n int64) *RequestError {
	return &RequestError{Code: ErrCodeBodyTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", n)}
}
