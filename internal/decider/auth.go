package decider

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// DefaultAudience is the token audience callers must present.
const DefaultAudience = "tollgate"

// Caller is an authenticated caller: a Kubernetes ServiceAccount. The engine checks it against the
// passport's spec.subjects.serviceAccounts (policy.Request.Caller).
type Caller = policy.Caller

// Authenticator checks a bearer token and names the ServiceAccount presenting it.
type Authenticator interface {
	// Authenticate returns the caller, or an error when the token is not valid for the audience.
	Authenticate(ctx context.Context, token string) (Caller, error)
}

// ErrUnauthenticated is returned (wrapped) for tokens that are not valid.
var ErrUnauthenticated = errors.New("unauthenticated")

// TokenReviewConfig configures a TokenReviewAuthenticator.
type TokenReviewConfig struct {
	// Audience is the audience tokens must carry (default DefaultAudience).
	Audience string
	// CacheSize bounds the number of cached results (default 4096).
	CacheSize int
	// TTL is how long a successful review is cached (default 2m).
	TTL time.Duration
	// NegativeTTL is how long a rejected token is cached (default 10s).
	NegativeTTL time.Duration
	// Timeout bounds one TokenReview call (default 5s).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// TokenReviewAuthenticator authenticates bearer tokens with the Kubernetes TokenReview API, caching
// results (bounded in size and time) by the token's SHA-256.
type TokenReviewAuthenticator struct {
	cs  kubernetes.Interface
	cfg TokenReviewConfig

	mu    sync.Mutex
	cache map[[32]byte]authEntry
}

type authEntry struct {
	caller  Caller
	err     error
	expires time.Time
}

// NewTokenReviewAuthenticator returns an authenticator calling TokenReviews through cs.
func NewTokenReviewAuthenticator(cs kubernetes.Interface, cfg TokenReviewConfig) *TokenReviewAuthenticator {
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 4096
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 2 * time.Minute
	}
	if cfg.NegativeTTL <= 0 {
		cfg.NegativeTTL = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &TokenReviewAuthenticator{cs: cs, cfg: cfg, cache: make(map[[32]byte]authEntry)}
}

// Authenticate implements Authenticator.
func (a *TokenReviewAuthenticator) Authenticate(ctx context.Context, token string) (Caller, error) {
	if token == "" {
		return Caller{}, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	key := sha256.Sum256([]byte(token))
	now := a.cfg.Now()
	a.mu.Lock()
	e, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.caller, e.err
	}
	caller, cacheable, err := a.review(ctx, token)
	if !cacheable {
		return caller, err
	}
	ttl := a.cfg.TTL
	if err != nil {
		ttl = a.cfg.NegativeTTL
	}
	a.put(key, authEntry{caller: caller, err: err, expires: now.Add(ttl)}, now)
	return caller, err
}

// put stores e, evicting expired entries first and then arbitrary ones to stay within CacheSize.
func (a *TokenReviewAuthenticator) put(key [32]byte, e authEntry, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.cfg.CacheSize {
		for k, v := range a.cache {
			if !now.Before(v.expires) {
				delete(a.cache, k)
			}
		}
		for k := range a.cache {
			if len(a.cache) < a.cfg.CacheSize {
				break
			}
			delete(a.cache, k)
		}
	}
	a.cache[key] = e
}

// CacheLen returns the number of cached results.
func (a *TokenReviewAuthenticator) CacheLen() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cache)
}

// review asks the API server; cacheable is false for transport errors (never cached).
func (a *TokenReviewAuthenticator) review(ctx context.Context, token string) (Caller, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	tr, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{a.cfg.Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return Caller{}, false, fmt.Errorf("token review: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		msg := st.Error
		if msg == "" {
			msg = "token not authenticated"
		}
		return Caller{}, true, fmt.Errorf("%w: %s", ErrUnauthenticated, msg)
	}
	if !slices.Contains(st.Audiences, a.cfg.Audience) {
		return Caller{}, true, fmt.Errorf("%w: token audience is not %q", ErrUnauthenticated, a.cfg.Audience)
	}
	caller, ok := serviceAccountOf(st.User.Username)
	if !ok {
		return Caller{}, true, fmt.Errorf("%w: %q is not a service account", ErrUnauthenticated, st.User.Username)
	}
	return caller, true, nil
}

// serviceAccountOf parses "system:serviceaccount:<namespace>:<name>".
func serviceAccountOf(user string) (Caller, bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return Caller{}, false
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" {
		return Caller{}, false
	}
	return Caller{Namespace: ns, ServiceAccount: name}, true
}

// AuthenticatorFunc adapts a function to Authenticator (tests, static tokens).
type AuthenticatorFunc func(ctx context.Context, token string) (Caller, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, token string) (Caller, error) {
	return f(ctx, token)
}
