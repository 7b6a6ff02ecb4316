package decider

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// Bounds of the work in flight: the request bodies decoded and decided at once, and how long a
// request waits for room before it is turned away.
const (
	// DefaultMaxInFlightBytes bounds the bodies being decoded and decided at once (16 MiB). A
	// decoded body takes several times its size (the largest amplification, an array of small
	// numbers, about 12 times), so this keeps the requests' memory far below the decider's 512Mi
	// limit whatever the number of connections.
	DefaultMaxInFlightBytes = 16 << 20
	// DefaultInFlightWait is how long a request waits for room before a 429.
	DefaultInFlightWait = time.Second
	// minRequestWeight is what a request counts at least, however small its body.
	minRequestWeight = 1 << 10

	// ErrCodeOverloaded answers a request that found no room within the wait (429, Retry-After).
	ErrCodeOverloaded = "overloaded"
)

// inFlight is a weighted semaphore over request body bytes.
type inFlight struct {
	sem  *semaphore.Weighted
	max  int64
	wait time.Duration
}

func newInFlight(maxBytes int64, wait time.Duration) *inFlight {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxInFlightBytes
	}
	if wait <= 0 {
		wait = DefaultInFlightWait
	}
	return &inFlight{sem: semaphore.NewWeighted(maxBytes), max: maxBytes, wait: wait}
}

// weight is what r counts: its declared length, or the body limit when it declares none (chunked)
// or more (it is refused with a 413 when read), and at least minRequestWeight.
func requestWeight(r *http.Request, maxBody int64) int64 {
	w := r.ContentLength
	if w < 0 || w > maxBody {
		w = maxBody
	}
	return max(w, minRequestWeight)
}

// acquire waits up to f.wait for room for r and returns the weight it took, which f.release gives
// back.
func (f *inFlight) acquire(r *http.Request, maxBody int64) (weight int64, ok bool) {
	w := min(requestWeight(r, maxBody), f.max)
	if f.sem.TryAcquire(w) {
		return w, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), f.wait)
	defer cancel()
	if err := f.sem.Acquire(ctx, w); err != nil {
		return 0, false
	}
	return w, true
}

// release gives back the weight acquire took.
func (f *inFlight) release(weight int64) { f.sem.Release(weight) }

// throttle is the in-flight bound: it runs next when there is room for r's body, else answers 429
// with Retry-After.
func (s *Server) throttle(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		weight, ok := s.inflight.acquire(r, s.opts.MaxBodyBytes)
		if !ok {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, &RequestError{Code: ErrCodeOverloaded,
				Message: "too many requests in flight: retry after a second"})
			return
		}
		defer s.inflight.release(weight)
		next.ServeHTTP(w, r)
	})
}
