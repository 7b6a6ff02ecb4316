package decider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Static token files (tollgate serve --token-file) hold one token per line:
//
//	# comment
//	<token> <subject>
//
// where subject is "system:serviceaccount:<namespace>:<name>" (the caller is that ServiceAccount)
// or a plain ServiceAccount name (the caller matches that name in every namespace's passports).
// Passports name the caller in spec.subjects.serviceAccounts exactly as for TokenReview callers.
// Tokens are at least MinStaticTokenLen printable characters without spaces; a file holds at most
// MaxStaticTokens tokens and MaxStaticTokenFileBytes bytes. Error messages name lines, never tokens.

// Bounds of a static token file.
const (
	MinStaticTokenLen       = 16
	MaxStaticTokenLen       = 4096
	MaxStaticTokens         = 10000
	MaxStaticTokenFileBytes = 4 << 20
)

// StaticTokenAuthenticator authenticates bearer tokens listed in a file. Tokens are compared in
// constant time (every listed token's SHA-256 is compared with the presented one's, without early
// exit). Reload re-reads the file; a file that cannot be read or parsed authenticates no one until it
// is fixed (fail closed: a revocation is never undone by a typo).
type StaticTokenAuthenticator struct {
	path string

	mu     sync.Mutex // serialises Reload
	digest [32]byte   // of the file's last content
	loaded bool
	tokens atomic.Pointer[[]staticToken]
}

type staticToken struct {
	hash   [32]byte
	caller Caller
}

// NewStaticTokenAuthenticator reads path; an unreadable or invalid file is an error.
func NewStaticTokenAuthenticator(path string) (*StaticTokenAuthenticator, error) {
	a := &StaticTokenAuthenticator{path: path}
	a.tokens.Store(&[]staticToken{})
	if _, err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Path is the token file.
func (a *StaticTokenAuthenticator) Path() string { return a.path }

// Len is the number of tokens in use.
func (a *StaticTokenAuthenticator) Len() int { return len(*a.tokens.Load()) }

// Reload re-reads the file. changed reports whether its content differs from the last read. On
// error no token authenticates until a later Reload succeeds.
func (a *StaticTokenAuthenticator) Reload() (changed bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := readBounded(a.path, MaxStaticTokenFileBytes)
	if err != nil {
		a.tokens.Store(&[]staticToken{})
		a.loaded = false
		return true, fmt.Errorf("token file %s: %w", a.path, err)
	}
	sum := sha256.Sum256(data)
	if a.loaded && sum == a.digest {
		return false, nil
	}
	tokens, err := parseStaticTokens(data)
	a.digest, a.loaded = sum, err == nil
	if err != nil {
		a.tokens.Store(&[]staticToken{})
		return true, fmt.Errorf("token file %s: %w", a.path, err)
	}
	a.tokens.Store(&tokens)
	return true, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// parseStaticTokens parses the file format described above.
func parseStaticTokens(data []byte) ([]staticToken, error) {
	var out []staticToken
	seen := map[[32]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxStaticTokenFileBytes)
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			errs = append(errs, fmt.Errorf("line %d: want \"<token> <subject>\"", n))
			continue
		}
		tok, subject := fields[0], fields[1]
		if len(tok) < MinStaticTokenLen || len(tok) > MaxStaticTokenLen || !printable(tok) {
			errs = append(errs, fmt.Errorf("line %d: a token is %d to %d printable characters", n, MinStaticTokenLen, MaxStaticTokenLen))
			continue
		}
		caller, ok := staticSubject(subject)
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: subject must be system:serviceaccount:<namespace>:<name> or a ServiceAccount name", n))
			continue
		}
		h := sha256.Sum256([]byte(tok))
		if prev, dup := seen[h]; dup {
			errs = append(errs, fmt.Errorf("line %d: the token of line %d is repeated", n, prev))
			continue
		}
		seen[h] = n
		if len(out) == MaxStaticTokens {
			return nil, fmt.Errorf("more than %d tokens", MaxStaticTokens)
		}
		out = append(out, staticToken{hash: h, caller: caller})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no tokens")
	}
	return out, nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// staticSubject parses a subject: a ServiceAccount username or a plain ServiceAccount name.
func staticSubject(s string) (Caller, bool) {
	if strings.HasPrefix(s, "system:serviceaccount:") {
		c, ok := serviceAccountOf(s)
		return c, ok && dnsName(c.Namespace, 63) && dnsName(c.ServiceAccount, 253)
	}
	if !dnsName(s, 253) {
		return Caller{}, false
	}
	return Caller{ServiceAccount: s, AnyNamespace: true}, true
}

// dnsName reports whether s is a lowercase DNS name (RFC 1123 subdomain) of at most max bytes.
func dnsName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

// Authenticate implements Authenticator.
func (a *StaticTokenAuthenticator) Authenticate(_ context.Context, token string) (Caller, error) {
	if token == "" {
		return Caller{}, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	h := sha256.Sum256([]byte(token))
	tokens := *a.tokens.Load()
	idx, match := 0, 0
	for i := range tokens {
		eq := subtle.ConstantTimeCompare(h[:], tokens[i].hash[:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		match |= eq
	}
	if match == 0 {
		return Caller{}, fmt.Errorf("%w: token not known", ErrUnauthenticated)
	}
	return tokens[idx].caller, nil
}
