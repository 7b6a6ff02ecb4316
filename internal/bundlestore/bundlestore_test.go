package bundlestore

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

const opNS = "tollgate-system"

func passports(n int) []policy.Passport {
	out := make([]policy.Passport, n)
	for i := range n {
		out[i] = policytest.Passport(fmt.Sprintf("agent-%05d", i), map[string]string{"team": "t" + strconv.Itoa(i%7)})
	}
	return out
}

func sampleBundle(n int) policy.Bundle {
	return policy.Bundle{
		Namespace: policytest.Namespace,
		Passports: passports(n),
		Policies: []policy.Policy{{
			Name: "shell", Namespace: policytest.Namespace, Generation: 3,
			Spec: policy.PolicySpec{PolicyID: "shell.v1", Rules: policytest.NameRules(5)},
		}},
	}
}

// incompressible returns a bundle whose compressed size is at least kib KiB.
func incompressible(t *testing.T, kib int) policy.Bundle {
	t.Helper()
	b := sampleBundle(1)
	noise := make([]byte, kib*1024)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	b.Passports[0].Spec.Limits["noise"] = hex.EncodeToString(noise)
	return b
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		bundle     func(t *testing.T) policy.Bundle
		shardBytes int
		wantShards int
	}{
		{"empty namespace", func(*testing.T) policy.Bundle { return policy.Bundle{Namespace: "empty"} }, MaxShardBytes, 1},
		{"small", func(*testing.T) policy.Bundle { return sampleBundle(3) }, MaxShardBytes, 1},
		{"10000 passports fit one shard compressed", func(*testing.T) policy.Bundle { return sampleBundle(10000) }, MaxShardBytes, 1},
		{"10000 passports forced into small shards", func(*testing.T) policy.Bundle { return sampleBundle(10000) }, 16 * 1024, -1},
		{"incompressible 2+ MiB shards at 900 KiB", func(t *testing.T) policy.Bundle { return incompressible(t, 2048) }, MaxShardBytes, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.bundle(t)
			cms, err := encode(opNS, b, tt.shardBytes)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantShards > 0 && len(cms) != tt.wantShards {
				t.Fatalf("got %d ConfigMaps, want %d", len(cms), tt.wantShards)
			}
			if tt.wantShards < 0 && len(cms) < 2 {
				t.Fatalf("got %d ConfigMaps, want several shards", len(cms))
			}
			wantRev := b.Revision()
			for i, cm := range cms {
				checkMeta(t, &cm, b.Namespace, i, len(cms), wantRev)
				if got := len(cm.BinaryData[DataKey]); got > tt.shardBytes || got == 0 {
					t.Errorf("shard %d holds %d bytes, want 1..%d", i, got, tt.shardBytes)
				}
			}
			// Readers see ConfigMaps in any order.
			reversed := make([]corev1.ConfigMap, len(cms))
			for i := range cms {
				reversed[len(cms)-1-i] = cms[i]
			}
			got, err := Decode(reversed)
			if err != nil {
				t.Fatal(err)
			}
			if got.Revision() != wantRev {
				t.Errorf("decoded revision %s, want %s", got.Revision(), wantRev)
			}
			if len(got.Passports) != len(b.Passports) || len(got.Policies) != len(b.Policies) {
				t.Errorf("decoded %d passports and %d policies, want %d and %d",
					len(got.Passports), len(got.Policies), len(b.Passports), len(b.Policies))
			}
			if got.Version != policy.BundleVersion {
				t.Errorf("version %q, want %q", got.Version, policy.BundleVersion)
			}
		})
	}
}

func checkMeta(t *testing.T, cm *corev1.ConfigMap, ns string, i, n int, rev string) {
	t.Helper()
	wantName := Name(ns)
	if n > 1 {
		wantName = ShardName(ns, i)
	}
	if cm.Name != wantName || cm.Namespace != opNS {
		t.Errorf("shard %d is %s/%s, want %s/%s", i, cm.Namespace, cm.Name, opNS, wantName)
	}
	wantLabels := map[string]string{LabelBundle: "true", LabelBundleNamespace: ns, LabelShard: strconv.Itoa(i)}
	for k, v := range wantLabels {
		if cm.Labels[k] != v {
			t.Errorf("shard %d label %s=%q, want %q", i, k, cm.Labels[k], v)
		}
	}
	if cm.Annotations[AnnotationRevision] != rev || cm.Annotations[AnnotationShards] != strconv.Itoa(n) {
		t.Errorf("shard %d annotations %v, want revision %s and %d shards", i, cm.Annotations, rev, n)
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	a := sampleBundle(50)
	b := sampleBundle(50)
	for i, j := 0, len(b.Passports)-1; i < j; i, j = i+1, j-1 {
		b.Passports[i], b.Passports[j] = b.Passports[j], b.Passports[i]
	}
	ca, err := Encode(opNS, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Encode(opNS, b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ca[0].BinaryData[DataKey]) != string(cb[0].BinaryData[DataKey]) {
		t.Error("reordered passports encode to different bytes")
	}
	if Revision(&ca[0]) != Revision(&cb[0]) {
		t.Error("reordered passports give different revisions")
	}
	if a.Passports[0].Name != "agent-00000" || b.Passports[0].Name != "agent-00049" {
		t.Error("Encode modified its argument")
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := Encode(opNS, policy.Bundle{}); err == nil {
		t.Error("bundle without namespace: want an error")
	}
	if _, err := Encode("", sampleBundle(1)); err == nil {
		t.Error("empty operator namespace: want an error")
	}
}

func TestDecodeErrors(t *testing.T) {
	sharded, err := encode(opNS, sampleBundle(2000), 8*1024)
	if err != nil {
		t.Fatal(err)
	}
	if len(sharded) < 3 {
		t.Fatalf("want at least 3 shards, got %d", len(sharded))
	}
	other, err := encode(opNS, sampleBundle(2001), 8*1024)
	if err != nil {
		t.Fatal(err)
	}
	clone := func(cms []corev1.ConfigMap) []corev1.ConfigMap {
		out := make([]corev1.ConfigMap, len(cms))
		for i := range cms {
			cms[i].DeepCopyInto(&out[i])
		}
		return out
	}
	tests := []struct {
		name   string
		cms    func() []corev1.ConfigMap
		wantIn string
	}{
		{"no ConfigMaps", func() []corev1.ConfigMap { return nil }, "no ConfigMaps"},
		{"missing shard", func() []corev1.ConfigMap {
			c := clone(sharded)
			return append(c[:1], c[2:]...)
		}, "missing"},
		{"mixed revisions", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1] = *other[1].DeepCopy()
			return c
		}, "mixed revisions"},
		{"duplicate shard", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1] = *c[0].DeepCopy()
			return c
		}, "twice"},
		{"shard index out of range", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1].Labels[LabelShard] = "99"
			return c
		}, "bad shard index"},
		{"shard count disagrees", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1].Annotations[AnnotationShards] = "7"
			return c
		}, "shard count"},
		{"two namespaces", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1].Labels[LabelBundleNamespace] = "elsewhere"
			return c
		}, "holds namespace"},
		{"not a bundle", func() []corev1.ConfigMap {
			return []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}
		}, "not a bundle"},
		{"no data", func() []corev1.ConfigMap {
			c := clone(sharded)
			delete(c[0].BinaryData, DataKey)
			return c
		}, "no binaryData"},
		{"corrupt payload", func() []corev1.ConfigMap {
			c := clone(sharded)
			c[1].BinaryData[DataKey] = []byte("garbage")
			return c
		}, "decode bundle"},
		{"truncated last shard", func() []corev1.ConfigMap {
			c := clone(sharded)
			last := c[len(c)-1].BinaryData[DataKey]
			c[len(c)-1].BinaryData[DataKey] = last[:len(last)-10]
			return c
		}, "decode bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.cms())
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q does not mention %q", err, tt.wantIn)
			}
		})
	}
}

// groupByNamespace groups the bundle ConfigMaps of cms by the namespace whose bundle they hold, as a
// reader watching every bundle does; other ConfigMaps are ignored.
func groupByNamespace(cms []corev1.ConfigMap) map[string][]corev1.ConfigMap {
	out := map[string][]corev1.ConfigMap{}
	for i := range cms {
		if ns := BundleNamespace(&cms[i]); ns != "" {
			out[ns] = append(out[ns], cms[i])
		}
	}
	for _, group := range out {
		slices.SortStableFunc(group, func(a, b corev1.ConfigMap) int {
			ia, _ := strconv.Atoi(a.Labels[LabelShard])
			ib, _ := strconv.Atoi(b.Labels[LabelShard])
			return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a.Name, b.Name))
		})
	}
	return out
}

func TestGroupByNamespace(t *testing.T) {
	a, err := encode(opNS, policy.Bundle{Namespace: "a", Passports: passports(500)}, 4*1024)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(opNS, policy.Bundle{Namespace: "b", Passports: passports(2)})
	if err != nil {
		t.Fatal(err)
	}
	unrelated := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: opNS}}
	var all []corev1.ConfigMap
	for i := len(a) - 1; i >= 0; i-- { // reverse shard order
		all = append(all, a[i])
		if i == 1 {
			all = append(all, b...)
			all = append(all, unrelated)
		}
	}
	groups := groupByNamespace(all)
	if len(groups) != 2 {
		t.Fatalf("got %d groups, want 2", len(groups))
	}
	if len(groups["a"]) != len(a) || len(groups["b"]) != 1 {
		t.Fatalf("group sizes %d and %d, want %d and 1", len(groups["a"]), len(groups["b"]), len(a))
	}
	for i, cm := range groups["a"] {
		if cm.Labels[LabelShard] != strconv.Itoa(i) {
			t.Errorf("group a position %d holds shard %s", i, cm.Labels[LabelShard])
		}
	}
	for ns, group := range groups {
		got, err := Decode(group)
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		if got.Namespace != ns || Revisions(group) != got.Revision() {
			t.Errorf("namespace %s: decoded %s at %s, group revision %s", ns, got.Namespace, got.Revision(), Revisions(group))
		}
	}
	if !IsBundle(&b[0]) || IsBundle(&unrelated) || BundleNamespace(&unrelated) != "" {
		t.Error("IsBundle/BundleNamespace misclassify")
	}
	if Revisions(nil) != "" {
		t.Error("Revisions(nil) should be empty")
	}
}

func TestTenThousandPassportsCompile(t *testing.T) {
	b := sampleBundle(10000)
	cms, err := Encode(opNS, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(cms)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := policy.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision() != Revision(&cms[0]) {
		t.Errorf("snapshot revision %s, stored %s", snap.Revision(), Revision(&cms[0]))
	}
	if _, ok := snap.Passport("agent-09999"); !ok {
		t.Error("passport agent-09999 missing after round trip")
	}
}

func BenchmarkEncodeDecode10000(b *testing.B) {
	bundle := sampleBundle(10000)
	b.ReportAllocs()
	for b.Loop() {
		cms, err := Encode(opNS, bundle)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(cms); err != nil {
			b.Fatal(err)
		}
	}
}
