package controller

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestBundleMetrics checks what the bundle writer's collector reports from its state: the stored
// revision of each namespace and whether its last write failed.
func TestBundleMetrics(t *testing.T) {
	m := &bundleMetrics{}
	if n := testutil.CollectAndCount(m); n != 0 {
		t.Fatalf("without a state: %d series", n)
	}
	s := newBundleState()
	s.put("team-a", namespaceRecord{revision: "rev-a"})
	s.put("team-b", namespaceRecord{revision: "rev-b"})
	s.setWriteErr("team-b", "configmaps is forbidden")
	s.setWriteErr("team-c", "the bundle does not compile")
	m.state.Store(s)
	want := `
# HELP tollgate_bundle_published_info The bundle revision the manager last stored for a namespace (value 1); deciders should serve the same revision.
# TYPE tollgate_bundle_published_info gauge
tollgate_bundle_published_info{namespace="team-a",revision="rev-a"} 1
tollgate_bundle_published_info{namespace="team-b",revision="rev-b"} 1
# HELP tollgate_bundle_write_failing 1 when the manager's last attempt to build or store the namespace's bundle failed (the stored bundle stays).
# TYPE tollgate_bundle_write_failing gauge
tollgate_bundle_write_failing{namespace="team-a"} 0
tollgate_bundle_write_failing{namespace="team-b"} 1
tollgate_bundle_write_failing{namespace="team-c"} 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	s.forget("team-b")
	if n := testutil.CollectAndCount(m, "tollgate_bundle_published_info"); n != 1 {
		t.Errorf("after forgetting team-b: %d published series, want 1", n)
	}
}
