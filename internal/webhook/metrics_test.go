package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestAdmissionMetrics registers admission webhooks on an instrumented controller-runtime webhook
// server and sends AdmissionReviews through its real mux: allowed, denied, errored and panicking
// handlers are counted under their own result, and plain HTTP handlers are left alone.
func TestAdmissionMetrics(t *testing.T) {
	srv := InstrumentServer(webhook.NewServer(webhook.Options{}))
	hooks := map[string]admission.HandlerFunc{
		"/test-allowed": func(context.Context, admission.Request) admission.Response { return admission.Allowed("") },
		"/test-denied":  func(context.Context, admission.Request) admission.Response { return admission.Denied("no") },
		"/test-invalid": func(context.Context, admission.Request) admission.Response {
			return admission.Errored(http.StatusUnprocessableEntity, errors.New("invalid"))
		},
		"/test-error": func(context.Context, admission.Request) admission.Response {
			return admission.Errored(http.StatusInternalServerError, errors.New("cache not synced"))
		},
		"/test-panic": func(context.Context, admission.Request) admission.Response { panic("boom") },
	}
	for path, h := range hooks {
		srv.Register(path, &webhook.Admission{Handler: h})
	}
	srv.Register("/plain", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))

	review := func(path string) int {
		t.Helper()
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Request:  &admissionv1.AdmissionRequest{UID: types.UID("uid-1"), Operation: admissionv1.Create},
		})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		srv.WebhookMux().ServeHTTP(rec, req)
		return rec.Code
	}
	for path := range hooks {
		review(path)
	}
	review("/test-error")
	if code := review("/plain"); code != http.StatusTeapot {
		t.Errorf("plain handler answered %d", code)
	}

	for _, c := range []struct {
		path, result string
		want         float64
	}{
		{"/test-allowed", ResultAllowed, 1}, {"/test-allowed", ResultError, 0},
		{"/test-denied", ResultDenied, 1}, {"/test-invalid", ResultDenied, 1},
		{"/test-error", ResultError, 2}, {"/test-error", ResultAllowed, 0},
		{"/test-panic", ResultError, 1},
	} {
		if got := testutil.ToFloat64(admissions.WithLabelValues(c.path, c.result)); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.path, c.result, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(admissions); n != 3*len(hooks) {
		t.Errorf("tollgate_webhook_admissions_total has %d series, want %d (3 results × registered admission paths, nothing for /plain)", n, 3*len(hooks))
	}
}
