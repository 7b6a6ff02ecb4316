package httpload

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, in   string
		wantStatus int
		wantBody   string
		wantErr    string
	}{
		{"ok", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 200, "{}", ""},
		{"lower-case header", "HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nbad", 400, "bad", ""},
		{"empty body", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", 204, "", ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 200, "", "Transfer-Encoding"},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n{}", 200, "", "no Content-Length"},
		{"garbage", "SSH-2.0-OpenSSH\r\n", 0, "", "malformed status line"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", 200, "", "reading body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, err := readResponse(bufio.NewReader(strings.NewReader(tt.in)), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || status != tt.wantStatus || string(body) != tt.wantBody {
				t.Fatalf("got %d %q %v, want %d %q", status, body, err, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:8080": true, "localhost:1": true,
		"10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func newServer(t *testing.T) (string, func() int) {
	t.Helper()
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/decide" || string(body) != `{"x":1}` {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		calls++ // the handler runs one request per connection at a time; the test reads it after the run
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"allow":true}`))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() int { return calls }
}

func TestConnDo(t *testing.T) {
	addr, _ := newServer(t)
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	req := BuildRequest(addr, "/v1/decide", []byte(`{"x":1}`))
	for range 3 { // keep-alive: the same connection answers every time
		status, body, err := c.Do(req)
		if err != nil || status != 200 || string(body) != `{"allow":true}` {
			t.Fatalf("Do = %d %q %v", status, body, err)
		}
	}
	if status, _, err := c.Do(BuildRequest(addr, "/other", []byte(`{"x":1}`))); err != nil || status != 400 {
		t.Fatalf("Do(/other) = %d %v, want 400", status, err)
	}
}

func TestClosedLoop(t *testing.T) {
	addr, _ := newServer(t)
	res, err := ClosedLoop(addr, BuildRequest(addr, "/v1/decide", []byte(`{"x":1}`)), 1, 20*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || len(res.Latencies) != res.Requests || res.Rate() <= 0 {
		t.Fatalf("unexpected result: %d requests, %d errors (%v), %d latencies", res.Requests, res.Errors, res.FirstError, len(res.Latencies))
	}
	bad, err := ClosedLoop(addr, BuildRequest(addr, "/nope", nil), 1, 0, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if bad.Requests != 0 || bad.Errors == 0 || bad.FirstError == nil {
		t.Fatalf("non-200 answers must count as errors: %+v", bad)
	}
}

func TestOpenLoop(t *testing.T) {
	addr, calls := newServer(t)
	res, err := OpenLoop(addr, BuildRequest(addr, "/v1/decide", []byte(`{"x":1}`)), 1000, 1, 50*time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Errors != 0 || len(res.Latencies) != 200 {
		t.Fatalf("want 200 counted requests, got %d (%d errors: %v)", res.Requests, res.Errors, res.FirstError)
	}
	if calls() != 250 {
		t.Fatalf("server saw %d calls, want 250 (warmup included)", calls())
	}
	if _, err := OpenLoop("10.1.2.3:80", nil, 10, 1, 0, time.Millisecond); err == nil {
		t.Fatal("a non-loopback address must be refused")
	}
}
