// Package bundlestore is the storage format of compiled policy bundles: one namespace's policy.Bundle
// as gzip-compressed JSON in ConfigMaps of the operator's namespace, sharded past the object size
// limit. The controllers write it (Encode) and the decision endpoints read it (Decode).
//
// Format (version 1):
//
//   - name: tollgate-bundle-<namespace>; when the compressed bundle exceeds MaxShardBytes it is split
//     into shards named tollgate-bundle-<namespace>-<i> (i = 0…n-1).
//   - labels: tollgate.dev/bundle: "true", tollgate.dev/bundle-namespace: <namespace>,
//     tollgate.dev/bundle-shard: <i>.
//   - annotations: tollgate.dev/bundle-revision: <Bundle.Revision()>, tollgate.dev/bundle-shards: <n>.
//   - binaryData["bundle.json.gz"]: shard i's slice of the gzip stream of the Bundle JSON; the
//     concatenation of all shards in index order is the whole stream.
//
// Readers watch the ConfigMaps carrying Selector's labels, read the namespace each holds
// (BundleNamespace), list that namespace's ConfigMaps (NamespaceSelector) and Decode them; a group
// with a missing shard or shards of different revisions is an error (the writer is between two
// updates), and the reader should keep its last good bundle.
package bundlestore

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

const (
	// NamePrefix starts the name of every bundle ConfigMap.
	NamePrefix = "tollgate-bundle-"
	// DataKey is the binaryData key holding (a shard of) the gzip-compressed bundle JSON.
	DataKey = "bundle.json.gz"
	// LabelBundle marks ConfigMaps that hold bundles (value "true").
	LabelBundle = guardrailsv1alpha1.LabelBundle
	// LabelBundleNamespace names the namespace whose objects the bundle holds.
	LabelBundleNamespace = guardrailsv1alpha1.LabelBundleNamespace
	// LabelShard is the shard index (0-based, decimal) of a ConfigMap within its bundle.
	LabelShard = "tollgate.dev/bundle-shard"
	// AnnotationRevision is the bundle's policy.Bundle.Revision(), identical on every shard.
	AnnotationRevision = "tollgate.dev/bundle-revision"
	// AnnotationShards is the number of shards of the bundle (decimal), identical on every shard.
	AnnotationShards = "tollgate.dev/bundle-shards"
	// MaxShardBytes bounds the compressed payload of one ConfigMap, well under the 1 MiB object limit.
	MaxShardBytes = 900 * 1024
	// MaxDecodedBytes bounds the decompressed bundle JSON a reader accepts (guards against gzip bombs).
	MaxDecodedBytes = 1 << 30
)

// Name returns the name of an unsharded bundle ConfigMap for namespace.
func Name(namespace string) string { return NamePrefix + namespace }

// ShardName returns the name of shard i of a sharded bundle for namespace.
func ShardName(namespace string, i int) string { return NamePrefix + namespace + "-" + strconv.Itoa(i) }

// Selector returns the labels every bundle ConfigMap carries, for list and watch selectors.
func Selector() map[string]string { return map[string]string{LabelBundle: "true"} }

// NamespaceSelector returns the labels of the ConfigMaps holding namespace's bundle.
func NamespaceSelector(namespace string) map[string]string {
	return map[string]string{LabelBundle: "true", LabelBundleNamespace: namespace}
}

// IsBundle reports whether cm is a bundle ConfigMap (carries LabelBundle "true" and a namespace).
func IsBundle(cm *corev1.ConfigMap) bool {
	return cm.Labels[LabelBundle] == "true" && cm.Labels[LabelBundleNamespace] != ""
}

// BundleNamespace returns the namespace whose bundle cm holds ("" when cm is not a bundle ConfigMap).
func BundleNamespace(cm *corev1.ConfigMap) string {
	if !IsBundle(cm) {
		return ""
	}
	return cm.Labels[LabelBundleNamespace]
}

// Revision returns the bundle revision cm carries.
func Revision(cm *corev1.ConfigMap) string { return cm.Annotations[AnnotationRevision] }

// Revisions returns the revision of a complete group of bundle ConfigMaps, or "" when the group is
// empty or its shards disagree.
func Revisions(cms []corev1.ConfigMap) string {
	if len(cms) == 0 {
		return ""
	}
	rev := Revision(&cms[0])
	for i := range cms[1:] {
		if Revision(&cms[i+1]) != rev {
			return ""
		}
	}
	return rev
}

// Encode returns the ConfigMaps (in operatorNamespace) storing b: one when the compressed bundle fits
// in MaxShardBytes, else shards. b.Namespace must be set. Passports and policies are written in name
// order so equal bundles encode to equal bytes.
func Encode(operatorNamespace string, b policy.Bundle) ([]corev1.ConfigMap, error) {
	return encode(operatorNamespace, b, MaxShardBytes)
}

func encode(operatorNamespace string, b policy.Bundle, shardBytes int) ([]corev1.ConfigMap, error) {
	if b.Namespace == "" {
		return nil, errors.New("encode bundle: namespace is empty")
	}
	if operatorNamespace == "" {
		return nil, errors.New("encode bundle: operator namespace is empty")
	}
	if b.Version == "" {
		b.Version = policy.BundleVersion
	}
	b.Passports = slices.Clone(b.Passports)
	b.Policies = slices.Clone(b.Policies)
	slices.SortStableFunc(b.Passports, func(x, y policy.Passport) int { return cmp.Compare(x.Name, y.Name) })
	slices.SortStableFunc(b.Policies, func(x, y policy.Policy) int { return cmp.Compare(x.Name, y.Name) })
	rev := b.Revision()
	if rev == "" {
		return nil, fmt.Errorf("encode bundle %s: bundle cannot be encoded as JSON", b.Namespace)
	}

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("encode bundle %s: %w", b.Namespace, err)
	}
	if err := json.NewEncoder(zw).Encode(b); err != nil {
		return nil, fmt.Errorf("encode bundle %s: %w", b.Namespace, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode bundle %s: compress: %w", b.Namespace, err)
	}
	data := buf.Bytes()

	n := max(1, (len(data)+shardBytes-1)/shardBytes)
	cms := make([]corev1.ConfigMap, 0, n)
	for i := range n {
		name := Name(b.Namespace)
		if n > 1 {
			name = ShardName(b.Namespace, i)
		}
		chunk := data[i*shardBytes : min(len(data), (i+1)*shardBytes)]
		cms = append(cms, corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: operatorNamespace,
				Labels: map[string]string{
					LabelBundle:          "true",
					LabelBundleNamespace: b.Namespace,
					LabelShard:           strconv.Itoa(i),
				},
				Annotations: map[string]string{
					AnnotationRevision: rev,
					AnnotationShards:   strconv.Itoa(n),
				},
			},
			BinaryData: map[string][]byte{DataKey: bytes.Clone(chunk)},
		})
	}
	return cms, nil
}

// Decode reassembles the bundle stored in cms, the ConfigMaps of one bundle namespace in any order.
// It fails when cms is empty, a shard is missing or duplicated, the shards disagree on revision,
// shard count or namespace, or the payload does not decompress into a Bundle.
func Decode(cms []corev1.ConfigMap) (policy.Bundle, error) {
	if len(cms) == 0 {
		return policy.Bundle{}, errors.New("decode bundle: no ConfigMaps")
	}
	ns := BundleNamespace(&cms[0])
	if ns == "" {
		return policy.Bundle{}, fmt.Errorf("decode bundle: ConfigMap %s is not a bundle (missing %s/%s labels)", cms[0].Name, LabelBundle, LabelBundleNamespace)
	}
	rev := Revision(&cms[0])
	count, err := strconv.Atoi(cms[0].Annotations[AnnotationShards])
	if err != nil || count < 1 {
		return policy.Bundle{}, fmt.Errorf("decode bundle %s: ConfigMap %s: bad %s annotation %q", ns, cms[0].Name, AnnotationShards, cms[0].Annotations[AnnotationShards])
	}
	shards := make([][]byte, count)
	for i := range cms {
		cm := &cms[i]
		if got := BundleNamespace(cm); got != ns {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: ConfigMap %s holds namespace %q", ns, cm.Name, got)
		}
		if got := Revision(cm); got != rev {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: mixed revisions %q and %q (update in progress)", ns, rev, got)
		}
		if got := cm.Annotations[AnnotationShards]; got != strconv.Itoa(count) {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: ConfigMap %s: shard count %q, want %d", ns, cm.Name, got, count)
		}
		idx, err := strconv.Atoi(cm.Labels[LabelShard])
		if err != nil || idx < 0 || idx >= count {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: ConfigMap %s: bad shard index %q of %d", ns, cm.Name, cm.Labels[LabelShard], count)
		}
		if shards[idx] != nil {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: shard %d appears twice", ns, idx)
		}
		data, ok := cm.BinaryData[DataKey]
		if !ok {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: ConfigMap %s has no binaryData[%q]", ns, cm.Name, DataKey)
		}
		shards[idx] = data
	}
	for i, s := range shards {
		if s == nil {
			return policy.Bundle{}, fmt.Errorf("decode bundle %s: shard %d of %d is missing", ns, i, count)
		}
	}
	readers := make([]io.Reader, len(shards))
	for i, s := range shards {
		readers[i] = bytes.NewReader(s)
	}
	zr, err := gzip.NewReader(io.MultiReader(readers...))
	if err != nil {
		return policy.Bundle{}, fmt.Errorf("decode bundle %s: decompress: %w", ns, err)
	}
	defer func() { _ = zr.Close() }()
	var b policy.Bundle
	dec := json.NewDecoder(io.LimitReader(zr, MaxDecodedBytes))
	if err := dec.Decode(&b); err != nil {
		return policy.Bundle{}, fmt.Errorf("decode bundle %s: %w", ns, err)
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(zr, MaxDecodedBytes)); err != nil {
		return policy.Bundle{}, fmt.Errorf("decode bundle %s: decompress: %w", ns, err)
	}
	if b.Namespace != ns {
		return policy.Bundle{}, fmt.Errorf("decode bundle %s: payload is for namespace %q", ns, b.Namespace)
	}
	return b, nil
}
