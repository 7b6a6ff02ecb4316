package policy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/gowebpki/jcs"
)

// Revision returns a stable content hash of the bundle ("sha256:<hex>"): the same passports and
// policies give the same revision whatever their order. It returns "" only if the bundle cannot be
// encoded as JSON (e.g. a Go caller put a non-JSON value in a free-form field).
func (b *Bundle) Revision() string {
	c := *b
	if c.Version == "" {
		c.Version = BundleVersion
	}
	c.Passports = slices.Clone(b.Passports)
	c.Policies = slices.Clone(b.Policies)
	slices.SortStableFunc(c.Passports, func(x, y Passport) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	slices.SortStableFunc(c.Policies, func(x, y Policy) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	// encoding/json sorts map keys, so the encoding is deterministic.
	data, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PassportDigest is the sha256 ("sha256:<hex>") of the RFC 8785 (JCS) canonical JSON of p. It
// returns "" only if p cannot be encoded as JSON.
func PassportDigest(p Passport) string {
	d, err := passportDigest(p)
	if err != nil {
		return ""
	}
	return d
}

func passportDigest(p Passport) (string, error) {
	p.AutoSuspension = nil // status, not the passport
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	canon, err := jcs.Transform(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
