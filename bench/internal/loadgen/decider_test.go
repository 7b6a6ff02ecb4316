package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		// Re-executed by the load benchmarks as the server process.
		os.Exit(runBenchServer())
	}
	os.Exit(m.Run())
}

// samplesStore returns a decider store serving config/samples as the bundle of namespace team-a.
func samplesStore() (*decider.Store, error) {
	set, err := manifest.Load(filepath.Join(testenv.RepoRoot(), "config", "samples"))
	if err != nil {
		return nil, fmt.Errorf("loading the samples: %w", err)
	}
	for _, o := range set.Objects {
		switch {
		case o.Policy != nil:
			o.Policy.Namespace = "team-a"
		case o.Passport != nil:
			o.Passport.Namespace = "team-a"
		}
	}
	store := decider.NewStore()
	if _, err := store.LoadSet(set); err != nil {
		return nil, fmt.Errorf("loading the samples: %w", err)
	}
	return store, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The load benchmarks run the decider in a child process (this test binary re-executed) limited to
// one core with runtime.GOMAXPROCS(1) (override with TOLLGATE_BENCH_PROCS), serving config/samples
// with decision logging on (to a file), and drive it over loopback keep-alive connections:
//
//	go test -run '^$' -bench Load -benchtime 1x ./bench/internal/loadgen/
const benchServerEnv = "TOLLGATE_BENCH_SERVER"

// benchBodies are realistic requests against the sample policies (allow, modify, deny, suspended).
var benchBodies = []string{
	`{"passport":"team-a/coding-agent","tool_name":"ls","tool_input":{"path":"."},"thread_id":"t1","call_id":"c1"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"git status"},"thread_id":"t1","call_id":"c2"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"ls && rm -rf /"},"thread_id":"t1","call_id":"c3"}`,
	`{"passport":"team-a/coding-agent","tool_name":"read_file","tool_input":{"path":"README.md"},"thread_id":"t1","call_id":"c4"}`,
	`{"agent_id":"ap_coding_agent_01","tool_name":"web_search","tool_input":{"query":"kubernetes"},"thread_id":"t2","call_id":"c5"}`,
	`{"passport":"team-a/coding-agent","tool_name":"bash","tool_input":{"command":"echo hello"},"thread_id":"t2","call_id":"c6"}`,
	`{"passport":"team-a/research-agent","tool_name":"web_search","tool_input":{"query":"x"},"thread_id":"t3","call_id":"c7"}`,
	`{"passport":"team-a/coding-agent","tool_name":"write_file","tool_input":{"path":"a.txt","content":"hi"},"thread_id":"t2","call_id":"c8"}`,
}

// runBenchServer is the child process: serve the samples on a loopback port, print the address,
// and exit when stdin closes.
func runBenchServer() int {
	procs := 1
	if v, err := strconv.Atoi(os.Getenv("TOLLGATE_BENCH_PROCS")); err == nil && v > 0 {
		procs = v
	}
	runtime.GOMAXPROCS(procs)
	if path := os.Getenv("TOLLGATE_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	store, err := samplesStore()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logFile, err := os.CreateTemp("", "tollgate-bench-decisions-*.jsonl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.Remove(logFile.Name()) }()
	defer func() { _ = logFile.Close() }()
	srv := decider.NewServer(store, decider.Options{Logger: quietLogger(), DecisionLog: decider.NewDecisionLog(logFile, 0, false)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		cancel()
	}()
	fmt.Printf("ADDR %s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var (
	childOnce  sync.Once
	childURL   string
	childErr   error
	childStdin io.WriteCloser // held open: the child exits when it closes (with this process)
	childPID   int
)

// cpuTime returns the user+system CPU time of process pid (Linux /proc; 0 elsewhere).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// benchServer starts (once per test binary) the child server process and returns its base URL.
func benchServer(b *testing.B) string {
	b.Helper()
	childOnce.Do(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchServerEnv+"=1")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			childErr = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			childErr = err
			return
		}
		if err := cmd.Start(); err != nil {
			childErr = err
			return
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "ADDR ") {
			childErr = fmt.Errorf("child server did not start: %q %v", line, err)
			return
		}
		childURL = "http://" + strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
		childStdin = stdin
		childPID = cmd.Process.Pid
	})
	if childErr != nil {
		b.Fatal(childErr)
	}
	return childURL
}

func benchLoad(b *testing.B, rate float64, conc int) {
	url := benchServer(b)
	bodies := make([][]byte, len(benchBodies))
	for i, s := range benchBodies {
		bodies[i] = []byte(s)
	}
	dur := 5 * time.Second
	if v, err := time.ParseDuration(os.Getenv("TOLLGATE_BENCH_DURATION")); err == nil {
		dur = v
	}
	for b.Loop() {
		cpu0 := cpuTime(childPID)
		res, err := Run(context.Background(), Config{
			URL: url + "/v1/decide", Bodies: bodies, Rate: rate, Duration: dur, Warmup: time.Second, Concurrency: conc,
		})
		cpu := cpuTime(childPID) - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if res.Errors > 0 {
			b.Errorf("%d errors, first: %s", res.Errors, res.FirstError)
		}
		b.Logf("%s", res)
		b.ReportMetric(res.Throughput, "decisions/s")
		b.ReportMetric(float64(res.P50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(res.P99.Microseconds()), "p99-µs")
		b.ReportMetric(float64(res.P999.Microseconds()), "p99.9-µs")
		b.ReportMetric(float64(res.ServiceP99.Microseconds()), "service-p99-µs")
		// The server's CPU per decision (warmup included in both terms) gives its capacity on a
		// dedicated core, independent of what else the machine was running.
		if total := float64(res.Requests) * (dur + time.Second).Seconds() / dur.Seconds(); cpu > 0 && total > 0 {
			b.ReportMetric(float64(cpu.Microseconds())/total, "server-cpu-µs/decision")
		}
	}
}

// BenchmarkLoadMaxRate measures the maximum decisions/s of a one-core server (target ≥ 20,000).
func BenchmarkLoadMaxRate(b *testing.B) { benchLoad(b, 0, 32) }

// BenchmarkLoadFixedRate5000 measures latency at a fixed 5,000 decisions/s (target p99 ≤ 2 ms).
func BenchmarkLoadFixedRate5000(b *testing.B) { benchLoad(b, 5000, 8) }

// TestLoadgen checks the load generator itself against an in-process server.
func TestLoadgen(t *testing.T) {
	store, err := samplesStore()
	if err != nil {
		t.Fatal(err)
	}
	srv := decider.NewServer(store, decider.Options{Logger: quietLogger()})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	bodies := [][]byte{[]byte(benchBodies[0]), []byte(benchBodies[2])}
	res, err := Run(context.Background(), Config{URL: ts.URL + "/v1/decide", Bodies: bodies,
		Rate: 500, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Requests < 25 || res.Requests > 300 || res.P50 <= 0 || res.P99 < res.P50 {
		t.Errorf("fixed rate 500/s for 0.5s: %s", res)
	}
	data, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(data), "p99_ns") {
		t.Errorf("result JSON %s %v", data, err)
	}
	if _, err := Run(context.Background(), Config{URL: ts.URL + "/nope", Bodies: bodies, Duration: 200 * time.Millisecond}); err == nil {
		t.Errorf("a run of only 404s succeeded")
	}
}
