package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/decider"
)

// verifyCommand checks the signature of a stored decision against a JSON Web Key Set, offline (a
// file) or from a decision endpoint's /.well-known/jwks.json.
type verifyCommand struct {
	jwks string
}

func newVerifyCommand() command { return &verifyCommand{} }

// BindFlags registers --jwks.
func (c *verifyCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.jwks, "jwks", c.jwks, "the key set: a JWKS file, or an http(s) URL such as https://tollgate/.well-known/jwks.json (required)")
}

// Run verifies the decision in the file named by the one argument (- or none reads stdin).
func (c *verifyCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	if c.jwks == "" {
		return usageError("--jwks is required")
	}
	if len(args) > 1 {
		return usageError("one decision file at most, got %d", len(args))
	}
	keys, err := readJWKS(ctx, c.jwks)
	if err != nil {
		return err
	}
	name := "-"
	if len(args) == 1 {
		name = args[0]
	}
	var data []byte
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(cio.stdin, 16<<20))
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return fmt.Errorf("reading the decision: %w", err)
	}
	kid, err := decider.VerifyDecision(data, keys)
	if err != nil {
		return fmt.Errorf("decision %s: %w", name, err)
	}
	var d struct {
		ID       string `json:"decision_id"`
		Decision string `json:"decision"`
	}
	_ = json.Unmarshal(data, &d)
	fmt.Fprintf(cio.stdout, "valid: decision %s (%s) signed by key %s\n", d.ID, d.Decision, kid)
	return nil
}

// readJWKS reads a key set from a file or an http(s) URL.
func readJWKS(ctx context.Context, src string) (decider.JWKS, error) {
	var data []byte
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return decider.JWKS{}, fmt.Errorf("fetching the key set: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return decider.JWKS{}, fmt.Errorf("fetching the key set: %w", err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return decider.JWKS{}, fmt.Errorf("fetching the key set from %s: HTTP %d", src, resp.StatusCode)
		}
		if data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return decider.JWKS{}, fmt.Errorf("fetching the key set: %w", err)
		}
	} else {
		var err error
		if data, err = os.ReadFile(src); err != nil {
			return decider.JWKS{}, fmt.Errorf("reading the key set: %w", err)
		}
	}
	keys, err := decider.ParseJWKS(data)
	if err != nil {
		return decider.JWKS{}, fmt.Errorf("%s: %w", src, err)
	}
	return keys, nil
}

// keygenCommand prints a new Ed25519 signing key set (one private key) for the decider's
// --signing-keys.
type keygenCommand struct {
	kid string
}

func newKeygenCommand() command { return &keygenCommand{} }

// BindFlags registers --kid.
func (c *keygenCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.kid, "kid", c.kid, "key id (default: the key's RFC 7638 thumbprint)")
}

// Run prints the key set.
func (c *keygenCommand) Run(_ context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %v", args)
	}
	k, err := decider.GenerateKey(c.kid)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(decider.JWKS{Keys: []decider.JWK{k}}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the key: %w", err)
	}
	_, err = fmt.Fprintf(cio.stdout, "%s\n", out)
	return err
}
