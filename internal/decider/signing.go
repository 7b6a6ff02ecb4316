package decider

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/gowebpki/jcs"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Signed decisions. When the decider has signing keys, every decision it answers carries
//
//	"signature": {"alg": "EdDSA", "kid": "<key id>", "value": "<base64url Ed25519 signature>"}
//
// over the RFC 8785 (JCS) canonical JSON of the decision without its signature member. The public
// keys are served as a JSON Web Key Set (RFC 7517; OKP/Ed25519 keys as RFC 8037 defines them) at
// /.well-known/jwks.json, and `tollgate verify` checks a stored decision offline against it.

// SignatureMember is the decision member holding the signature.
const SignatureMember = "signature"

// SignatureAlg is the JOSE algorithm name of Ed25519 signatures (RFC 8037).
const SignatureAlg = "EdDSA"

// JWK is one key of a JSON Web Key Set: an Ed25519 key as RFC 8037 defines it. D, the private
// key's seed, is set only in a signing key file, never in the published set.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	X   string `json:"x"`
	D   string `json:"d,omitempty"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// Signature is the signature member of a signed decision.
type Signature struct {
	Alg   string `json:"alg"`
	Kid   string `json:"kid"`
	Value string `json:"value"`
}

// Signer signs decisions with the first private key of a key set and publishes every key's public
// part (older keys stay published during a rotation's grace period).
type Signer struct {
	kid  string
	priv ed25519.PrivateKey
	jwks []byte
	pubs map[string]ed25519.PublicKey
}

var b64 = base64.RawURLEncoding

// ParseJWKS reads a JSON Web Key Set of Ed25519 keys, checking each key's fields.
func ParseJWKS(data []byte) (JWKS, error) {
	var set JWKS
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&set); err != nil {
		return JWKS{}, fmt.Errorf("reading JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return JWKS{}, errors.New("reading JWKS: no keys")
	}
	seen := map[string]bool{}
	for i := range set.Keys {
		k := &set.Keys[i]
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			return JWKS{}, fmt.Errorf("reading JWKS: keys[%d]: want kty OKP and crv Ed25519, got %q %q", i, k.Kty, k.Crv)
		}
		pub, err := b64.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return JWKS{}, fmt.Errorf("reading JWKS: keys[%d]: x is not a base64url Ed25519 public key", i)
		}
		if k.Kid == "" {
			k.Kid = Thumbprint(pub)
		}
		if seen[k.Kid] {
			return JWKS{}, fmt.Errorf("reading JWKS: keys[%d]: kid %q appears twice", i, k.Kid)
		}
		seen[k.Kid] = true
		if k.D != "" {
			seed, err := b64.DecodeString(k.D)
			if err != nil || len(seed) != ed25519.SeedSize {
				return JWKS{}, fmt.Errorf("reading JWKS: keys[%d] (%s): d is not a base64url Ed25519 seed", i, k.Kid)
			}
			if !bytes.Equal(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), pub) {
				return JWKS{}, fmt.Errorf("reading JWKS: keys[%d] (%s): x is not the public key of d", i, k.Kid)
			}
		}
	}
	return set, nil
}

// Thumbprint is the RFC 7638 thumbprint of an Ed25519 public key (base64url SHA-256), the key id
// of a key that names none.
func Thumbprint(pub []byte) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// NewSigner returns a signer of set's first key holding a private part; every key's public part is
// published.
func NewSigner(set JWKS) (*Signer, error) {
	s := &Signer{pubs: map[string]ed25519.PublicKey{}}
	pub := JWKS{Keys: make([]JWK, 0, len(set.Keys))}
	for _, k := range set.Keys {
		x, err := b64.DecodeString(k.X)
		if err != nil {
			return nil, fmt.Errorf("signing key %s: %w", k.Kid, err)
		}
		s.pubs[k.Kid] = x
		if k.D != "" && s.priv == nil {
			seed, err := b64.DecodeString(k.D)
			if err != nil {
				return nil, fmt.Errorf("signing key %s: %w", k.Kid, err)
			}
			s.kid, s.priv = k.Kid, ed25519.NewKeyFromSeed(seed)
		}
		pub.Keys = append(pub.Keys, JWK{Kty: "OKP", Crv: "Ed25519", Kid: k.Kid, Use: "sig", Alg: SignatureAlg, X: k.X})
	}
	if s.priv == nil {
		return nil, errors.New("signing keys: no key has a private part (d)")
	}
	data, err := json.Marshal(pub)
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	s.jwks = append(data, '\n')
	return s, nil
}

// LoadSigner reads a signing key set (a JWKS file whose first key with "d" signs) from path.
func LoadSigner(path string) (*Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading signing keys: %w", err)
	}
	set, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("signing keys %s: %w", path, err)
	}
	return NewSigner(set)
}

// GenerateKey returns a new Ed25519 signing key as a JWK with its private part, named kid (its
// thumbprint when empty).
func GenerateKey(kid string) (JWK, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return JWK{}, fmt.Errorf("generating an Ed25519 key: %w", err)
	}
	if kid == "" {
		kid = Thumbprint(pub)
	}
	return JWK{Kty: "OKP", Crv: "Ed25519", Kid: kid, Use: "sig", Alg: SignatureAlg,
		X: b64.EncodeToString(pub), D: b64.EncodeToString(priv.Seed())}, nil
}

// KeyID returns the id of the signing key.
func (s *Signer) KeyID() string { return s.kid }

// JWKSJSON returns the published key set (public parts only).
func (s *Signer) JWKSJSON() []byte { return s.jwks }

// Sign appends the signature member to obj, the JSON of one decision (an object without a
// signature member), and returns the signed object.
func (s *Signer) Sign(obj []byte) ([]byte, error) {
	canon, err := jcs.Transform(obj)
	if err != nil {
		return nil, fmt.Errorf("signing a decision: canonical JSON: %w", err)
	}
	sig := ed25519.Sign(s.priv, canon)
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		return nil, errors.New("signing a decision: not a JSON object")
	}
	out := make([]byte, 0, end+160)
	out = append(out, obj[:end]...)
	if bytes.IndexByte(canon, ':') >= 0 { // a non-empty object
		out = append(out, ',')
	}
	out = append(out, `"signature":{"alg":"EdDSA","kid":`...)
	out = appendString(out, s.kid)
	out = append(out, `,"value":"`...)
	out = b64.AppendEncode(out, sig)
	out = append(out, `"}}`...)
	return out, nil
}

// VerifyDecision checks the signature of a signed decision (its JSON object, or an answer of the
// OAP verify route wrapping it in "decision") against the keys of set and returns the key id that
// signed it.
func VerifyDecision(data []byte, set JWKS) (string, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return "", fmt.Errorf("reading the decision: %w", err)
	}
	if inner, ok := members["decision"]; ok && len(inner) > 0 && inner[0] == '{' {
		members = nil
		if err := json.Unmarshal(inner, &members); err != nil {
			return "", fmt.Errorf("reading the decision: %w", err)
		}
	}
	raw, ok := members[SignatureMember]
	if !ok {
		return "", errors.New("the decision is not signed (no signature member)")
	}
	var sig Signature
	if err := json.Unmarshal(raw, &sig); err != nil {
		return "", fmt.Errorf("reading the signature: %w", err)
	}
	if sig.Alg != SignatureAlg {
		return "", fmt.Errorf("signature algorithm %q, want %s", sig.Alg, SignatureAlg)
	}
	var pub ed25519.PublicKey
	for _, k := range set.Keys {
		if k.Kid == sig.Kid {
			x, err := b64.DecodeString(k.X)
			if err != nil || len(x) != ed25519.PublicKeySize {
				return "", fmt.Errorf("key %s of the key set is not an Ed25519 public key", k.Kid)
			}
			pub = x
		}
	}
	if pub == nil {
		return "", fmt.Errorf("key %q is not in the key set", sig.Kid)
	}
	value, err := b64.DecodeString(sig.Value)
	if err != nil {
		return "", fmt.Errorf("reading the signature value: %w", err)
	}
	delete(members, SignatureMember)
	body, err := json.Marshal(members)
	if err != nil {
		return "", fmt.Errorf("re-encoding the decision: %w", err)
	}
	canon, err := jcs.Transform(body)
	if err != nil {
		return "", fmt.Errorf("canonical JSON of the decision: %w", err)
	}
	if !ed25519.Verify(pub, canon, value) {
		return "", fmt.Errorf("the signature of key %s does not match the decision", sig.Kid)
	}
	return sig.Kid, nil
}

// appendSigned appends d's JSON to b, signed when the server has a signer.
func (s *Server) appendSigned(b []byte, d *policy.Decision) ([]byte, error) {
	if s.opts.Signer == nil {
		return appendDecision(b, d)
	}
	start := len(b)
	b, err := appendDecision(b, d)
	if err != nil {
		return b, err
	}
	signed, err := s.opts.Signer.Sign(b[start:])
	if err != nil {
		return b, err
	}
	return append(b[:start], signed...), nil
}

// handleJWKS answers GET /.well-known/jwks.json: the signing keys' public parts.
func (s *Server) handleJWKS(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Signer == nil {
		writeError(w, http.StatusNotFound, &RequestError{Code: ErrCodeNotFound, Message: "decisions are not signed: this endpoint has no signing keys"})
		return
	}
	w.Header().Set("Cache-Control", "max-age=300")
	writeRaw(w, http.StatusOK, s.opts.Signer.JWKSJSON())
}
