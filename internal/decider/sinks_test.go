package decider

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// logReceiver is an in-process decision-log collector: it answers with status (200 unless set) and
// keeps the records of every accepted POST.
type logReceiver struct {
	mu       sync.Mutex
	status   int
	records  []map[string]any
	posts    int
	failures int
	problems []string
}

func (r *logReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if r.status != 0 && r.status != http.StatusOK {
		r.failures++
		w.WriteHeader(r.status)
		return
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Encoding") != "gzip" {
		r.problems = append(r.problems, fmt.Sprintf("%s with Content-Encoding %q", req.Method, req.Header.Get("Content-Encoding")))
	}
	zr, err := gzip.NewReader(req.Body)
	if err != nil {
		r.problems = append(r.problems, "body is not gzip: "+err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return
	}
	switch req.Header.Get("Content-Type") {
	case "application/json": // OPA's array
		var recs []map[string]any
		if err := json.Unmarshal(data, &recs); err != nil {
			r.problems = append(r.problems, "array: "+err.Error())
		}
		r.records = append(r.records, recs...)
	case "application/x-ndjson":
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec map[string]any
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				r.problems = append(r.problems, "line: "+err.Error())
			}
			r.records = append(r.records, rec)
		}
	default:
		r.problems = append(r.problems, "Content-Type "+req.Header.Get("Content-Type"))
	}
}

func (r *logReceiver) set(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

func (r *logReceiver) state() (records []map[string]any, posts, failures int, problems []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.records...), r.posts, r.failures, append([]string(nil), r.problems...)
}

// receiverAt serves r on addr (loopback) until the returned stop is called; it fails the test when
// it cannot listen.
func receiverAt(t *testing.T, addr string, r http.Handler) (string, func()) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port of a receiver just stopped may take a moment to be free again
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("receiver cannot listen on %s: %v", addr, err)
	}
	hs := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { _ = hs.Close() }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// fastHTTPSink is an HTTP sink with short intervals, for tests.
func fastHTTPSink(t *testing.T, url string, buffer int, format string) *HTTPSink {
	t.Helper()
	s, err := NewHTTPSink(HTTPSinkConfig{URL: url, Format: format, Buffer: buffer, BatchSize: 8, FlushInterval: 20 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, CloseTimeout: 2 * time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decideN makes n decisions over HTTP, each with a distinct call id, and fails when any takes long
// (the log must never hold a decision back).
func decideN(t *testing.T, base string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		start := time.Now()
		decide(t, base, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls", "call_id": fmt.Sprintf("c%d", i)}, nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("decision %d took %v behind the decision log", i, d)
		}
	}
}

func callIDs(recs []map[string]any) map[string]int {
	ids := map[string]int{}
	for _, r := range recs {
		id, _ := r["call_id"].(string)
		ids[id]++
	}
	return ids
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	_, body := call(t, http.MethodGet, base+"/metrics", nil, nil)
	return string(body)
}

// TestHTTPSinkOutageAndRecovery: during an outage (503s, then connection refused) records are held
// up to the sink's buffer and all delivered once the receiver is back; records beyond the buffer are
// dropped and counted under sink="http"; decisions never wait.
func TestHTTPSinkOutageAndRecovery(t *testing.T) {
	for _, format := range []string{HTTPFormatNDJSON, HTTPFormatArray} {
		t.Run(format, func(t *testing.T) {
			recv := &logReceiver{}
			addr, stopRecv := receiverAt(t, "127.0.0.1:0", recv)
			const bound = 40
			sink := fastHTTPSink(t, "http://"+addr+"/logs", bound, format)
			store := NewStore()
			if err := store.Load(samplesBundle(t, "team-a")); err != nil {
				t.Fatal(err)
			}
			dlog, err := NewDecisionLogWith(LogConfig{Sinks: []Sink{sink}})
			if err != nil {
				t.Fatal(err)
			}
			srv, ts := startServer(t, store, Options{DecisionLog: dlog})

			// Healthy: records arrive.
			decideN(t, ts.URL, 0, 5)
			waitUntil(t, "the first records", func() bool { recs, _, _, _ := recv.state(); return len(recs) == 5 })

			// Outage 1: the receiver answers 503. Everything within the bound is held and retried.
			recv.set(http.StatusServiceUnavailable)
			decideN(t, ts.URL, 5, 30)
			waitUntil(t, "retries against the 503s", func() bool { _, _, f, _ := recv.state(); return f >= 3 })
			// The log hands records to the sink from its own goroutine, which may lag the answers on
			// a busy machine: wait for all 30 to be held (none may be dropped).
			waitUntil(t, "30 records held during the outage", func() bool { return sink.Held() == 30 })
			if dropped := sink.Stats().Dropped; dropped != 0 {
				t.Errorf("dropped %d records during the outage, want 0", dropped)
			}
			recv.set(http.StatusOK)
			waitUntil(t, "delivery after the 503s", func() bool { recs, _, _, _ := recv.state(); return len(recs) == 35 })
			// Delivery is at least once: wait for the acknowledgement before cutting the receiver off.
			waitUntil(t, "the acknowledgements", func() bool { return sink.Stats().Written == 35 })

			// Outage 2: nobody listens (connection refused); 25 more records than the bound arrive.
			stopRecv()
			decideN(t, ts.URL, 35, bound+25)
			waitUntil(t, "the buffer to fill and the rest to be dropped", func() bool { return sink.Held() == bound && sink.Stats().Dropped == 25 })
			m := metricsText(t, ts.URL)
			if !strings.Contains(m, `tollgate_decision_log_dropped_total{sink="http"} 25`) ||
				!strings.Contains(m, `tollgate_decision_log_dropped_total{sink="queue"} 0`) {
				t.Errorf("metrics do not count the drops per sink:\n%s", grepLines(m, "tollgate_decision_log"))
			}
			// Recovery on the same address: the records held are delivered, in order.
			receiverAt(t, addr, recv)
			waitUntil(t, "delivery after the refused connections", func() bool { return sink.Stats().Written == 35+bound })
			recs, _, _, problems := recv.state()
			if len(problems) > 0 {
				t.Errorf("receiver problems: %v", problems)
			}
			ids := callIDs(recs)
			for i := range 35 + bound {
				if ids[fmt.Sprintf("c%d", i)] != 1 {
					t.Errorf("record c%d delivered %d times, want once", i, ids[fmt.Sprintf("c%d", i)])
				}
			}
			for i := 35 + bound; i < 35+bound+25; i++ {
				if ids[fmt.Sprintf("c%d", i)] != 0 {
					t.Errorf("record c%d beyond the bound was delivered, yet counted as dropped", i)
				}
			}
			srv.Close()
			if st := sink.Stats(); st.Written != 35+bound || st.Dropped != 25 {
				t.Errorf("sink stats %+v, want %d written and 25 dropped", st, 35+bound)
			}
			m = metricsText(t, ts.URL)
			if !strings.Contains(m, fmt.Sprintf(`tollgate_decision_log_written_total{sink="http"} %d`, 35+bound)) {
				t.Errorf("metrics do not count the records delivered:\n%s", grepLines(m, "tollgate_decision_log"))
			}
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHTTPSinkRejectedBatch: a batch the receiver refuses (400) is not retried: dropped and counted.
func TestHTTPSinkRejectedBatch(t *testing.T) {
	recv := &logReceiver{status: http.StatusBadRequest}
	addr, _ := receiverAt(t, "127.0.0.1:0", recv)
	sink := fastHTTPSink(t, "http://"+addr, 100, "")
	l, err := NewDecisionLogWith(LogConfig{Sinks: []Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Log(&LogRecord{DecisionID: fmt.Sprint(i), Outcome: policy.DecisionAllow})
	}
	waitUntil(t, "the rejection", func() bool { return sink.Stats().Dropped == 3 })
	time.Sleep(100 * time.Millisecond)
	if _, posts, _, _ := recv.state(); posts != 1 {
		t.Errorf("rejected batch posted %d times, want once (no retry)", posts)
	}
	l.Close()
}

// TestHTTPSinkCloseDeadline: closing with the receiver down gives up after CloseTimeout and counts
// what it still held.
func TestHTTPSinkCloseDeadline(t *testing.T) {
	recv := &logReceiver{status: http.StatusServiceUnavailable}
	addr, _ := receiverAt(t, "127.0.0.1:0", recv)
	sink, err := NewHTTPSink(HTTPSinkConfig{URL: "http://" + addr, BatchSize: 2, FlushInterval: 10 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, CloseTimeout: 200 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		sink.Write(fmt.Appendf(nil, `{"decision_id":"%d"}`+"\n", i))
	}
	start := time.Now()
	sink.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v, want about the 200ms close timeout", d)
	}
	if st := sink.Stats(); st.Dropped != 5 || st.Written != 0 {
		t.Errorf("stats after a failed close %+v, want 5 dropped", st)
	}
	sink.Write([]byte("{}\n"))
	if sink.Stats().Dropped != 6 {
		t.Error("a write after Close is not counted as dropped")
	}
}

func TestHTTPSinkConfigErrors(t *testing.T) {
	if _, err := NewHTTPSink(HTTPSinkConfig{URL: "ftp://x"}); err == nil {
		t.Error("ftp URL accepted")
	}
	if _, err := NewHTTPSink(HTTPSinkConfig{URL: "http://x", Format: "xml"}); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := NewDecisionLogWith(LogConfig{}); err == nil {
		t.Error("a decision log without sinks accepted")
	}
}

// TestFileSinkRotation: the file sink rotates at its size limit, keeps MaxBackups rotated files and
// loses no record.
func TestFileSinkRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.log")
	sink := NewFileSink(FileConfig{Path: path, MaxSizeMB: 1, MaxBackups: 2})
	l, err := NewDecisionLogWith(LogConfig{Sinks: []Sink{sink}, Buffer: 100000})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 900)
	const n = 2500 // ≈ 2.4 MB: the live file and two rotated ones
	for i := range n {
		l.Log(&LogRecord{DecisionID: fmt.Sprintf("d%05d", i), Outcome: policy.DecisionAllow, PolicyID: pad})
	}
	l.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("files %v, want decisions.log and 2 rotated files", names(entries))
	}
	seen := map[string]bool{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, beyond the 1 MB limit", e.Name(), info.Size())
		}
		if !strings.HasPrefix(e.Name(), "decisions") || !strings.HasSuffix(e.Name(), ".log") {
			t.Errorf("unexpected file %s", e.Name())
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var rec LogRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s: a line is not a record: %v", e.Name(), err)
			}
			seen[rec.DecisionID] = true
		}
	}
	if len(seen) != n || l.Dropped() != 0 || sink.Stats().Written != n {
		t.Errorf("%d distinct records in the files, %d dropped, %d written; want %d, 0, %d", len(seen), l.Dropped(), sink.Stats().Written, n, n)
	}
}

func names(es []os.DirEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out
}

func TestParseMask(t *testing.T) {
	for _, tc := range []struct {
		in      string
		path    []string
		replace bool
		value   any
		wantErr bool
	}{
		{in: "/tool_input/password", path: []string{"tool_input", "password"}},
		{in: "tool_input.password", path: []string{"tool_input", "password"}},
		{in: "/tool_input/a~1b~0c", path: []string{"tool_input", "a/b~c"}},
		{in: `/tool_input/token="***"`, path: []string{"tool_input", "token"}, replace: true, value: "***"},
		{in: "/tool_input/token=***", path: []string{"tool_input", "token"}, replace: true, value: "***"},
		{in: "/dry_run/*/modified_input/x=0", path: []string{"dry_run", "*", "modified_input", "x"}, replace: true, value: float64(0)},
		{in: "", wantErr: true},
		{in: "/", wantErr: true},
		{in: "a..b", wantErr: true},
	} {
		m, err := ParseMask(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseMask(%q) accepted", tc.in)
			}
			continue
		}
		if err != nil || strings.Join(m.Path, "|") != strings.Join(tc.path, "|") || m.Replace != tc.replace || fmt.Sprint(m.Value) != fmt.Sprint(tc.value) {
			t.Errorf("ParseMask(%q) = %+v, %v; want path %v replace %t value %v", tc.in, m, err, tc.path, tc.replace, tc.value)
		}
	}
}

// TestDecisionLogMasks: masks remove or replace fields of every record before the sinks, also
// inside arrays and with tool input included.
func TestDecisionLogMasks(t *testing.T) {
	store := NewStore()
	if err := store.Load(samplesBundle(t, "team-a")); err != nil {
		t.Fatal(err)
	}
	var masks []Mask
	for _, s := range []string{"tool_input.password", `/tool_input/token="[masked]"`, "/tool_input/nested/*/secret", "thread_id", "/no/such/field"} {
		m, err := ParseMask(s)
		if err != nil {
			t.Fatal(err)
		}
		masks = append(masks, m)
	}
	var buf syncBuffer
	l, err := NewDecisionLogWith(LogConfig{Sinks: []Sink{NewWriterSink("stdout", &buf)}, IncludeInput: true, Masks: masks})
	if err != nil {
		t.Fatal(err)
	}
	srv, ts := startServer(t, store, Options{DecisionLog: l})
	decide(t, ts.URL, map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls", "thread_id": "th-9",
		"tool_input": map[string]any{"path": ".", "password": "hunter2", "token": "tok-123",
			"nested": []any{map[string]any{"secret": "s1", "keep": 1}, map[string]any{"secret": "s2"}}}}, nil)
	srv.Close()
	line := bytes.TrimSpace(buf.Bytes())
	for _, secret := range []string{"hunter2", "tok-123", `"s1"`, `"s2"`, "th-9"} {
		if bytes.Contains(line, []byte(secret)) {
			t.Errorf("masked value %s is in the record: %s", secret, line)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	in, _ := rec["tool_input"].(map[string]any)
	if in["path"] != "." || in["token"] != "[masked]" || in["password"] != nil {
		t.Errorf("tool_input after masking %v", in)
	}
	nested, _ := in["nested"].([]any)
	if len(nested) != 2 || nested[0].(map[string]any)["keep"] != float64(1) {
		t.Errorf("nested after masking %v", nested)
	}
	if rec["outcome"] != "allow" || rec["decision_id"] == "" {
		t.Errorf("unmasked fields lost: %v", rec)
	}
}
