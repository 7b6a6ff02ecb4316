package decider

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestTransportRouting checks the route table over loopback HTTP where http.ServeMux alone would
// answer differently from the decision API: every answer is JSON with the API's codes (never the
// mux's plain-text 404 or 405, never a redirect), escaped paths are routed as the paths they spell,
// the verify route answers for everything under its prefix, and each answer is counted once under
// its route.
func TestTransportRouting(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	srv, ts := startServer(t, store, Options{SeparateMetrics: true})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	const decideBody = `{"passport":"team-a/coding-agent","tool_name":"ls"}`
	const verifyBody = `{"passport":"team-a/coding-agent","context":{"command":"ls"}}`
	cases := []struct {
		method, path, body string
		status             int
		code, field, allow string
		route              string
	}{
		{"POST", "/v1/decide", decideBody, 200, "", "", "", routeDecide},
		{"GET", "/v1/decide", "", 405, ErrCodeMethodNotAllowed, "", "POST", routeDecide},
		{"HEAD", "/v1/decide", "", 405, "", "", "POST", routeDecide},
		{"PUT", "/v1/decide:batch", decideBody, 405, ErrCodeMethodNotAllowed, "", "POST", routeBatch},
		{"POST", "/healthz", "{}", 405, ErrCodeMethodNotAllowed, "", "GET, HEAD", routeHealth},
		{"HEAD", "/healthz", "", 200, "", "", "", routeHealth},
		{"GET", "/v1/status", "", 200, "", "", "", routeStatus},
		{"GET", "/metrics", "", 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/nope", decideBody, 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/v1/decide/", decideBody, 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/v1//decide", decideBody, 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/v1/./decide", decideBody, 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/x/../v1/decide", decideBody, 404, ErrCodeNotFound, "", "", routeOther},
		{"POST", "/v1/d%65cide", decideBody, 200, "", "", "", routeDecide},
		{"POST", "/v1%2Fdecide", decideBody, 200, "", "", "", routeDecide},
		{"POST", "/api/verify/policy/system.command.execute.v1", verifyBody, 200, "", "", "", routeVerify},
		{"POST", "/api/verify/policy/", verifyBody, 404, ErrCodeNotFound, "policy_id", "", routeVerify},
		{"POST", "/api/verify/policy/a/b", verifyBody, 404, ErrCodeNotFound, "policy_id", "", routeVerify},
		{"POST", "/api/verify/policy/a%2Fb", verifyBody, 404, ErrCodeNotFound, "policy_id", "", routeVerify},
		{"POST", "/api/verify/policy/" + strings.Repeat("p", maxNameLen+1), verifyBody, 404, ErrCodeNotFound, "policy_id", "", routeVerify},
		{"POST", "/api/verify/policy//x", verifyBody, 404, ErrCodeNotFound, "policy_id", "", routeVerify},
		{"POST", "/api/verify/policy/..", `{"context":{}}`, 400, ErrCodeMissingField, "context.agent_id", "", routeVerify},
		{"GET", "/api/verify/policy/x", "", 405, ErrCodeMethodNotAllowed, "", "POST", routeVerify},
		{"GET", "/api/verify/policy/", "", 405, ErrCodeMethodNotAllowed, "", "POST", routeVerify},
		{"POST", "/api/verify/policy", verifyBody, 404, ErrCodeNotFound, "", "", routeOther},
	}
	want := map[string]int{}
	for _, tc := range cases {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req, err := http.NewRequest(tc.method, ts.URL+tc.path, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := tc.method + " " + tc.path
		if resp.StatusCode != tc.status {
			t.Errorf("%.80s: status %d %s, want %d", name, resp.StatusCode, data, tc.status)
			continue
		}
		want[`tollgate_http_requests_total{code="`+strconv.Itoa(tc.status)+`",route="`+tc.route+`"}`]++
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%.80s: Content-Type %q", name, ct)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%.80s: Allow %q, want %q", name, got, tc.allow)
		}
		if tc.code == "" {
			continue
		}
		var e struct{ Error errorBody }
		if err := json.Unmarshal(data, &e); err != nil || e.Error.Code != tc.code || e.Error.Field != tc.field {
			t.Errorf("%.80s: body %s, want code %s field %q", name, data, tc.code, tc.field)
		}
		if tc.code == ErrCodeNotFound && tc.field == "" && !strings.Contains(e.Error.Message, "no route") {
			t.Errorf("%.80s: message %q, want the no-route answer", name, e.Error.Message)
		}
	}
	ms := httptest.NewServer(srv.MetricsHandler())
	t.Cleanup(ms.Close)
	metricsSrv := ms.URL
	_, data := call(t, http.MethodGet, metricsSrv+"/metrics", nil, nil)
	for series, n := range want {
		if line := series + " " + strconv.Itoa(n); !strings.Contains(string(data), line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
	if code, data := call(t, http.MethodGet, metricsSrv+"/v1/decide", nil, nil); code != 404 || !strings.Contains(string(data), "serves GET /metrics only") {
		t.Errorf("the metrics listener answered GET /v1/decide with %d %s", code, data)
	}
	if code, _ := call(t, http.MethodPost, metricsSrv+"/metrics", "{}", nil); code != 405 {
		t.Errorf("the metrics listener answered POST /metrics with %d, want 405", code)
	}
}

// TestTransportClosesAfterTooLargeBody checks that a body over the limit is refused with a 413 and
// the connection closed (http.MaxBytesReader reaches net/http's writer under the middleware).
func TestTransportClosesAfterTooLargeBody(t *testing.T) {
	_, ts := startServer(t, NewStore(), Options{MaxBodyBytes: 64})
	pr, pw := io.Pipe()
	go func() {
		// Chunked: no Content-Length, so the limit is found while reading.
		_, _ = pw.Write([]byte(`{"passport":"p","tool_name":"ls","tool_input":{"x":"` + strings.Repeat("a", 4096) + `"}}`))
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/decide", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), ErrCodeBodyTooLarge) {
		t.Errorf("got %d %s, want 413 %s", resp.StatusCode, data, ErrCodeBodyTooLarge)
	}
	if !resp.Close {
		t.Errorf("the connection stays open after a body over the limit")
	}
}

// TestDecideRouteShortcut checks that ServeHTTP's shortcut for POST /v1/decide takes exactly the
// requests the route table gives the decide handler, and sets the pattern the table would.
func TestDecideRouteShortcut(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(store, Options{Logger: quietLogger()})
	defer srv.Close()
	for _, tc := range []struct {
		method, target string
		shortcut       bool
	}{
		{"POST", "/v1/decide", true},
		{"POST", "http://example.com/v1/decide", true},
		{"GET", "/v1/decide", false},
		{"post", "/v1/decide", false},
		{"POST", "/v1/decide/", false},
		{"POST", "/v1//decide", false},
		{"POST", "/v1/%64ecide", false},
		{"POST", "/v1/decide:batch", false},
		{"POST", "/V1/decide", false},
	} {
		r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{"passport":"team-a/coding-agent","tool_name":"ls"}`))
		taken := isDecideRoute(r)
		if taken != tc.shortcut {
			t.Errorf("%s %s: shortcut %v, want %v", tc.method, tc.target, taken, tc.shortcut)
		}
		if !taken {
			continue
		}
		// The route table gives these requests the same pattern, hence the same handler.
		if _, pattern := srv.mux.Handler(r); pattern != decidePattern {
			t.Errorf("%s %s: the route table's pattern is %q, want %q", tc.method, tc.target, pattern, decidePattern)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK || r.Pattern != decidePattern {
			t.Errorf("%s %s: %d %s, pattern %q", tc.method, tc.target, rec.Code, rec.Body, r.Pattern)
		}
	}
}
